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

function SpatialDropout:updateOutput(input)
   self.output:resizeAs(input):copy(input)
   if self.train or self.stochastic_inference then
      if input:dim() == 4 then
         self.noise:resize(input:size(1), input:size(2), 1, 1)
      elseif input:dim() == 3 then
         self.noise:resize(input:size(1), 1, 1)
      else
         error('SpatialDropout: input must be 4D (N, C, H, W) or 3D, got ' .. input:dim() .. 'D', 2)
      end
      -- one draw per feature map: neighbouring activations are correlated, so they go together
      self.noise:bernoulli(1 - self.p)
      self.output:cmul(self.noise:expandAs(input))
   else
      self.output:mul(1 - self.p)
   end
   return self.output
end

function SpatialDropout:updateGradInput(input, gradOutput)
   if not self.train then error('SpatialDropout: backprop only defined while training', 2) end
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
