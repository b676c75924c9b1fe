-- nn.WhiteNoise(mean=0, std=0.1): adds N(mean, std^2) noise while training;
-- in evaluation adds only the mean. No backward in evaluation (as Torch7).
local WhiteNoise, parent = torch.class('nn.WhiteNoise', 'nn.Module')

function WhiteNoise:__init(mean, std)
   parent.__init(self)
   self.mean = mean or 0
   self.std = std or 0.1
   self.noise = torch.Tensor()
end

function WhiteNoise:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if self.train ~= false then
      self.noise:resizeAs(input):normal(self.mean, self.std)
      self.output:add(self.noise)
   elseif self.mean ~= 0 then
      self.output:add(self.mean)
   end
   return self.output
end

function WhiteNoise:updateGradInput(input, gradOutput)
   if self.train == false then error('nn.WhiteNoise: backward is only defined in training mode (call :training())') end
   self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   return self.gradInput
end

function WhiteNoise:clearState()
   nn.utils.clear(self, 'noise')
   return parent.clearState(self)
end

function WhiteNoise:__tostring__()
   return string.format('%s mean: %f, std: %f', torch.type(self), self.mean, self.std)
end
