-- cudnn.SpatialCrossEntropyCriterion(weights=nil): log-softmax over the classes of an N x C x H x W
-- input (child `slsm`, a cudnn.SpatialLogSoftMax), then nn.SpatialClassNLLCriterion(weights)
-- (child `nll`) on the N x H x W targets: with sizeAverage (the default) the mean over all pixels
-- (weighted by their classes' weights), else the sum. Mini-batches only.
local SCE, parent = torch.class('cudnn.SpatialCrossEntropyCriterion', 'nn.Criterion')

function SCE:__init(weights)
   parent.__init(self)
   self.slsm = cudnn.SpatialLogSoftMax()
   self.nll = nn.SpatialClassNLLCriterion(weights)
   self.sizeAverage = true
end

local function checkSizes(self, input, target)
   if input:dim() ~= 4 or target:dim() ~= 3 then
      error(string.format('%s: mini-batches only (4D input, 3D target), got %dD input and %dD target',
                          torch.type(self), input:dim(), target:dim()), 3)
   end
   if input:size(1) ~= target:size(1) or input:size(3) ~= target:size(2) or input:size(4) ~= target:size(3) then
      error(string.format('%s: input (%s) and target (%s) should be of same size', torch.type(self),
                          table.concat(input:size():totable(), 'x'), table.concat(target:size():totable(), 'x')), 3)
   end
end

function SCE:updateOutput(input, target)
   checkSizes(self, input, target)
   self.slsm:updateOutput(input)
   self.nll.sizeAverage = self.sizeAverage
   self.output = self.nll:updateOutput(self.slsm.output, target)
   return self.output
end

function SCE:updateGradInput(input, target)
   checkSizes(self, input, target)
   self.nll.sizeAverage = self.sizeAverage
   self.nll:updateGradInput(self.slsm.output, target)
   self.gradInput = self.slsm:updateGradInput(input, self.nll.gradInput)
   return self.gradInput
end

function SCE:type(type, tensorCache)
   if type then
      self.nll:type(type, tensorCache)
      self.slsm:type(type, tensorCache)
   end
   return parent.type(self, type, tensorCache)
end
