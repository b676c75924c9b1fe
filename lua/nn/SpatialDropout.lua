-- nn.SpatialDropout(p=0.5, stochasticInference=false): drops whole feature maps of a (N, C, H, W) or (C, H, W) input
-- with probability p in training (not rescaled); in evaluation the input is scaled by 1 - p, as Torch7.
local SpatialDropout, parent = torch.class('nn.SpatialDropout', 'nn.Module')

function SpatialDropout:__init(p, stochasticInference)
   parent.__init(self)
   self.p = p or 0.5
   self.train = true
   self.stochastic_inference = stochasticInference or false
   self.noise = torch.Tensor()
end

-- class fields (not saved with instances): the spatial dimensions; VolumetricDropout shares every method
SpatialDropout._dims, SpatialDropout._layout = 2, '(N, C, H, W)'

-- the noise: one draw per feature map, (N, C, 1...) or (C, 1...)
local function featureNoise(self, input)
   local dims, layout = self._dims, self._layout
   local n = input:dim()
   if n ~= dims + 2 and n ~= dims + 1 then
      error(string.format('%s: input must be %dD %s or %dD, got %dD', torch.type(self):match('[^.]+$'), dims + 2,
                          layout, dims + 1, n), 3)
   end
   local size = input:size()
   for d = n - dims + 1, n do size[d] = 1 end
   self.noise:resize(size)
end

function SpatialDropout:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if self.train or self.stochastic_inference then
      featureNoise(self, input)
      -- one draw per feature map: neighbouring activations are correlated, so they go together
      self.noise:bernoulli(1 - self.p)
      self.output:cmul(self.noise:expandAs(input))
   else
      self.output:mul(1 - self.p)
   end
   return self.output
end

function SpatialDropout:updateGradInput(input, gradOutput)
   if not self.train then error(torch.type(self):match('[^.]+$') .. ': backprop only defined while training', 2) end
   self.gradInput:resizeAs(gradOutput):copy(gradOutput)
   self.gradInput:cmul(self.noise:expandAs(input))
   return self.gradInput
end

function SpatialDropout:setp(p)
   self.p = p
end

function SpatialDropout:__tostring__()
   return string.format('%s(%f)', torch.type(self), self.p)
end

function SpatialDropout:clearState()
   if self.noise then self.noise:set() end
   return parent.clearState(self)
end
