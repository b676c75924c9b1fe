-- nn.SpatialAutoCropMSECriterion(sizeAverage=true): MSECriterion between a
-- (N x) C x H x W input and the centre H x W crop of a target at least as large.
local SpatialAutoCropMSECriterion, parent = torch.class('nn.SpatialAutoCropMSECriterion', 'nn.MSECriterion')

function SpatialAutoCropMSECriterion:__init(sizeAverage)
   parent.__init(self, sizeAverage)
end

local function heightWidth(t)
   local d = t:dim()
   return t:size(d - 1), t:size(d)
end

-- the centre crop of target to input's height and width, contiguous
local function croppedTarget(self, input, target)
   assert(input:dim() == target:dim(), 'input and target should have the same number of dimensions')
   assert(input:dim() == 4 or input:dim() == 3, 'input and target must have 3 or 4 dimensions')
   local h, w = heightWidth(input)
   local th, tw = heightWidth(target)
   assert(h <= th and w <= tw,
          'Spatial resolution of input should be less than or equal to the spatial resolution of the target')
   local d = target:dim()
   local crop = target:narrow(d - 1, 1 + math.floor((th - h) / 2), h):narrow(d, 1 + math.floor((tw - w) / 2), w)
   self._cropped = self._cropped or input.new()
   return self._cropped:resize(crop:size()):copy(crop)
end

function SpatialAutoCropMSECriterion:updateOutput(input, target)
   return parent.updateOutput(self, input, croppedTarget(self, input, target))
end

-- (Torch7 requires a target of input's size here; a larger one is cropped as in updateOutput)
function SpatialAutoCropMSECriterion:updateGradInput(input, target)
   return parent.updateGradInput(self, input, croppedTarget(self, input, target))
end
