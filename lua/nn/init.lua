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

return nn
