-- GoogLeNet with batch normalization as imagenet-multiGPU.torch builds it
-- (models/googlenetbn.lua):
--   local createModel = require 'luatorch.models.googlenet_bn'
--   local model = createModel({nClasses = 1000})
-- Every unit is Conv -> ReLU -> SpatialBatchNormalization(n, 1e-3) -> ReLU;
-- inception modules join their branches with nn.Concat(2); grid reductions
-- are strided 2x2 convolutions followed by BN and ReLU; the output concatenates the main classifier
-- and the auxiliary one (2*nClasses LogSoftMax columns; trained with
-- ClassNLLCriterion on the first nClasses, as the original script).
require 'nn'

-- grid reductions and the aux classifier's projection: Conv -> BN -> ReLU
local function convBN(seq, nIn, nOut, k, s)
   seq:add(nn.SpatialConvolution(nIn, nOut, k, k, s, s))
   seq:add(nn.SpatialBatchNormalization(nOut, 1e-3))
   seq:add(nn.ReLU(true))
   return seq
end

local function unit(seq, nIn, nOut, k, s, p)
   seq:add(nn.SpatialConvolution(nIn, nOut, k, k, s or 1, s or 1, p or 0, p or 0))
   seq:add(nn.ReLU(true))
   seq:add(nn.SpatialBatchNormalization(nOut, 1e-3))
   seq:add(nn.ReLU(true))
   return seq
end

-- config: {{c1}, {c3reduce, c3}, {c33reduce, c33}, {'avg'|'max', proj}}
local function inception(inputSize, config)
   local concat = nn.Concat(2)
   if config[1][1] ~= 0 then
      concat:add(unit(nn.Sequential(), inputSize, config[1][1], 1))
   end
   local conv3 = nn.Sequential()
   unit(conv3, inputSize, config[2][1], 1)
   unit(conv3, config[2][1], config[2][2], 3, 1, 1)
   concat:add(conv3)
   local conv33 = nn.Sequential()
   unit(conv33, inputSize, config[3][1], 1)
   unit(conv33, config[3][1], config[3][2], 3, 1, 1)
   unit(conv33, config[3][2], config[3][2], 3, 1, 1)
   concat:add(conv33)
   local pool = nn.Sequential()
   if config[4][1] == 'max' then
      pool:add(nn.SpatialMaxPooling(3, 3, 1, 1, 1, 1):ceil())
   elseif config[4][1] == 'avg' then
      pool:add(nn.SpatialAveragePooling(3, 3, 1, 1, 1, 1):ceil())
   else
      error('Unknown pooling ' .. tostring(config[4][1]))
   end
   if config[4][2] ~= 0 then unit(pool, inputSize, config[4][2], 1) end
   concat:add(pool)
   return concat
end

local function createModel(opt)
   opt = opt or {}
   local nClasses = opt.nClasses or 1000
   local features = nn.Sequential()
   unit(features, 3, 64, 7, 2, 3)
   features:add(nn.SpatialMaxPooling(3, 3, 2, 2):ceil())
   unit(features, 64, 64, 1)
   unit(features, 64, 192, 3, 1, 1)
   features:add(nn.SpatialMaxPooling(3, 3, 2, 2):ceil())
   features:add(inception(192, {{64}, {64, 64}, {64, 96}, {'avg', 32}}))     -- 3(a)
   features:add(inception(256, {{64}, {64, 96}, {64, 96}, {'avg', 64}}))     -- 3(b)
   features:add(inception(320, {{0}, {128, 160}, {64, 96}, {'max', 0}}))     -- 3(c)
   convBN(features, 576, 576, 2, 2)                                           -- grid reduction
   features:add(inception(576, {{224}, {64, 96}, {96, 128}, {'avg', 128}}))  -- 4(a)
   features:add(inception(576, {{192}, {96, 128}, {96, 128}, {'avg', 128}})) -- 4(b)
   features:add(inception(576, {{160}, {128, 160}, {128, 160}, {'avg', 96}}))-- 4(c)
   features:add(inception(576, {{96}, {128, 192}, {160, 192}, {'avg', 96}})) -- 4(d)

   local main = nn.Sequential()
   main:add(inception(576, {{0}, {128, 192}, {192, 256}, {'max', 0}}))       -- 4(e)
   convBN(main, 1024, 1024, 2, 2)                                             -- grid reduction
   main:add(inception(1024, {{352}, {192, 320}, {160, 224}, {'avg', 128}})) -- 5(a)
   main:add(inception(1024, {{352}, {192, 320}, {192, 224}, {'max', 128}})) -- 5(b)
   main:add(nn.SpatialAveragePooling(7, 7, 1, 1))
   main:add(nn.View(1024):setNumInputDims(3))
   main:add(nn.Linear(1024, nClasses))
   main:add(nn.LogSoftMax())

   local aux = nn.Sequential()
   aux:add(nn.SpatialAveragePooling(5, 5, 3, 3):ceil())
   convBN(aux, 576, 128, 1, 1)
   aux:add(nn.View(128 * 4 * 4):setNumInputDims(3))
   aux:add(nn.Linear(128 * 4 * 4, 768))
   aux:add(nn.ReLU(true))
   aux:add(nn.Linear(768, nClasses))
   aux:add(nn.LogSoftMax())

   local splitter = nn.Concat(2):add(main):add(aux)
   local model = nn.Sequential():add(features):add(splitter)
   if opt.tensorType then model:type(opt.tensorType) end
   return model
end

return createModel
