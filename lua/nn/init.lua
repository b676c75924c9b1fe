-- luatorch's Torch7-compatible `nn` package: one module per file, as Torch7.
require 'torch'

nn = nn or {}
local nn = nn

local function include(name)
   local path = package.searchpath('nn.' .. name, package.path)
   if not path then error('nn: cannot find module file nn/' .. name .. '.lua') end
   dofile(path)
end
nn._include = include

include 'utils'
include 'Module'
include 'Container'
include 'Sequential'
include 'Concat'
include 'DepthConcat'
include 'ConcatTable'
include 'ParallelTable'
include 'CAddTable'
include 'Identity'
include 'MulConstant'
include 'View'
include 'Reshape'
include 'Dropout'
include 'Linear'
include 'Threshold'
include 'ReLU'
include 'Criterion'
include 'MSECriterion'

-- Modules whose kernels live in native/ (nn_*.c) are loaded when present.
for _, name in ipairs {'SpatialConvolution', 'BatchNormalization', 'SpatialBatchNormalization',
                       'SpatialMaxPooling', 'SpatialAveragePooling', 'SoftMax', 'LogSoftMax',
                       'ClassNLLCriterion', 'CrossEntropyCriterion'} do
   if package.searchpath('nn.' .. name, package.path) then include(name) end
end

-- Families of modules, one block each (the classes of a family may depend on the base ones above).
-- family pointwise: activations and pointwise layers
-- end of family pointwise
-- family linear: simple parametric layers, lookup, misc
-- end of family linear
-- family table: table modules, shape modules, containers
-- end of family table
-- family criterion: the criterions
-- end of family criterion
-- family spatialconv: spatial convolutions
-- end of family spatialconv
-- family tvconv: temporal and volumetric convolutions
-- end of family tvconv
-- family pooling: pooling and normalization layers
-- end of family pooling
-- family padding: paddings, upsampling, dropouts, shuffles
-- end of family padding

return nn
