-- nn.FeatureLPPooling(width, stride, power, batch_mode): the p-norm
-- (sum x^p)^(1/p) over `width` (2..16) consecutive features, `stride` (1..4)
-- apart. Input F [, o1 [, o2]], or B, F [, o1 [, o2]] with batch_mode; the
-- feature dimension becomes (F - width) / stride + 1.
local FeatureLPPooling, parent = torch.class('nn.FeatureLPPooling', 'nn.Module')
local C = torch.C
local check = torch._check

function FeatureLPPooling:__init(width, stride, power, batch_mode)
   parent.__init(self)
   if width < 2 or width > 16 then error('width must be within 2 to 16', 2) end
   if stride < 1 or stride > 4 then error('stride must be within 1 to 4', 2) end
   self.width = width
   self.stride = stride
   self.power = power
   self.batch_mode = batch_mode
   self.output = torch.Tensor()
   self.gradInput = torch.Tensor()
end

function FeatureLPPooling:updateOutput(input)
   check(C.lt_nn_FeatureLPPooling_updateOutput(input._c, self.output._c, self.power, self.width, self.stride,
         self.batch_mode and 1 or 0), 2)
   return self.output
end

function FeatureLPPooling:updateGradInput(input, gradOutput)
   check(C.lt_nn_FeatureLPPooling_updateGradInput(gradOutput._c, input._c, self.output._c, self.gradInput._c,
         self.power, self.width, self.stride, self.batch_mode and 1 or 0), 2)
   return self.gradInput
end

-- Torch7's description: 'nn.FeatureLPPooling(w3 s1 power 2 batch 1'
function FeatureLPPooling:__tostring__()
   return string.format('%s(w%d s%d power %d batch %d', torch.type(self), self.width, self.stride, self.power,
                        self.batch_mode and 1 or 0)
end
