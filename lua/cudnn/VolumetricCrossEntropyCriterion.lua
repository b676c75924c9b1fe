-- cudnn.VolumetricCrossEntropyCriterion(weights=nil): cudnn.SpatialCrossEntropyCriterion (child
-- `scec`) over every voxel of an N x C x T x H x W input with N x T x H x W targets (T and H are
-- folded into one dimension). Mini-batches only; the averaging follows scec.sizeAverage.
local VCE, parent = torch.class('cudnn.VolumetricCrossEntropyCriterion', 'nn.Criterion')

function VCE:__init(weights)
   parent.__init(self)
   self.scec = cudnn.SpatialCrossEntropyCriterion(weights)
end

local function checkSizes(self, input, target)
   if input:dim() ~= 5 or target:dim() ~= 4 then
      error(string.format('%s: mini-batches only (5D input, 4D target), got %dD input and %dD target',
                          torch.type(self), input:dim(), target:dim()), 3)
   end
   for i = 2, 4 do
      if input:size(1) ~= target:size(1) or input:size(i + 1) ~= target:size(i) then
         error(string.format('%s: input (%s) and target (%s) should be of same size', torch.type(self),
                             table.concat(input:size():totable(), 'x'), table.concat(target:size():totable(), 'x')), 3)
      end
   end
end

-- N x C x T x H x W -> N x C x (T*H) x W;  N x T x H x W -> N x (T*H) x W
local function foldInput(t)
   t = t:contiguous()
   return t:view(t:size(1), t:size(2), t:size(3) * t:size(4), t:size(5))
end

local function foldTarget(t)
   t = t:contiguous()
   return t:view(t:size(1), t:size(2) * t:size(3), t:size(4))
end

function VCE:updateOutput(input, target)
   checkSizes(self, input, target)
   self.output = self.scec:updateOutput(foldInput(input), foldTarget(target))
   return self.output
end

function VCE:updateGradInput(input, target)
   checkSizes(self, input, target)
   self.gradInput = self.scec:updateGradInput(foldInput(input), foldTarget(target)):view(input:size())
   return self.gradInput
end

function VCE:type(type, tensorCache)
   if type then self.scec:type(type, tensorCache) end
   return parent.type(self, type, tensorCache)
end
