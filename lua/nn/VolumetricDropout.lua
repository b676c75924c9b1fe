-- nn.VolumetricDropout(p=0.5, stochasticInference=false): drops whole feature maps of a (N, C, D, H, W) or (C, D, H, W) input
-- with probability p in training (not rescaled); in evaluation the input is scaled by 1 - p, as Torch7.
local VolumetricDropout, parent = torch.class('nn.VolumetricDropout', 'nn.Module')

function VolumetricDropout:__init(p, stochasticInference)
   parent.__init(self)
   self.p = p or 0.5
   self.train = true
   self.stochastic_inference = stochasticInference or false
   self.noise = torch.Tensor()
end

function VolumetricDropout:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if self.train or self.stochastic_inference then
      if input:dim() == 5 then
         self.noise:resize(input:size(1), input:size(2), 1, 1, 1)
      elseif input:dim() == 4 then
         self.noise:resize(input:size(1), 1, 1, 1)
      else
         error('VolumetricDropout: input must be 5D (N, C, D, H, W) or 4D, got ' .. input:dim() .. 'D', 2)
      end
      -- one draw per feature map: neighbouring activations are correlated, so they go together
      self.noise:bernoulli(1 - self.p)
      self.output:cmul(self.noise:expandAs(input))
   else
      self.output:mul(1 - self.p)
   end
   return self.output
end

function VolumetricDropout:updateGradInput(input, gradOutput)
   if not self.train then error('VolumetricDropout: backprop only defined while training', 2) end
   self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   self.gradInput:cmul(self.noise:expandAs(input))
   return self.gradInput
end

function VolumetricDropout:setp(p)
   self.p = p
end

function VolumetricDropout:__tostring__()
   return string.format('%s(%f)', torch.type(self), self.p)
end

function VolumetricDropout:clearState()
   if self.noise then self.noise:set() end
   return parent.clearState(self)
end
