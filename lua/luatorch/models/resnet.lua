-- ResNet as fb.resnet.torch builds it (models/resnet.lua):
--   local createModel = require 'luatorch.models.resnet'
--   local model = createModel({depth = 50, dataset = 'imagenet', shortcutType = 'B'})
-- ImageNet depths 18/34/50/101/152/200 (basic blocks below 50, bottlenecks from 50),
-- CIFAR depths 6n+2 (20, 32, 44, 56, 110, ...). Shortcut types: A (zero-padded
-- identity, the CIFAR default), B (projection when the width changes, the
-- ImageNet default), C (projection always). fb.resnet.torch's weight init:
-- convolutions N(0, sqrt(2 / (kW*kH*nOutputPlane))) without bias, BN weight 1
-- and bias 0, Linear bias 0.
require 'nn'
require 'cudnn'

local Convolution = cudnn.SpatialConvolution
local Avg = cudnn.SpatialAveragePooling
local ReLU = cudnn.ReLU
local Max = nn.SpatialMaxPooling
local SBatchNorm = nn.SpatialBatchNormalization

local function createModel(opt)
   opt = opt or {}
   local depth = opt.depth or 34
   local dataset = opt.dataset or 'imagenet'
   local shortcutType = opt.shortcutType
   if shortcutType == nil or shortcutType == '' then
      shortcutType = dataset == 'imagenet' and 'B' or 'A'
   end
   local iChannels

   local function shortcut(nInputPlane, nOutputPlane, stride)
      local useConv = shortcutType == 'C' or (shortcutType == 'B' and nInputPlane ~= nOutputPlane)
      if useConv then
         return nn.Sequential()
            :add(Convolution(nInputPlane, nOutputPlane, 1, 1, stride, stride))
            :add(SBatchNorm(nOutputPlane))
      elseif nInputPlane ~= nOutputPlane then
         -- type A: subsample, then pad the extra channels with zeros
         return nn.Sequential()
            :add(nn.SpatialAveragePooling(1, 1, stride, stride))
            :add(nn.Concat(2):add(nn.Identity()):add(nn.MulConstant(0)))
      end
      return nn.Identity()
   end

   local function residual(body, nInputPlane, nOutputPlane, stride)
      return nn.Sequential()
         :add(nn.ConcatTable():add(body):add(shortcut(nInputPlane, nOutputPlane, stride)))
         :add(nn.CAddTable(true))
         :add(ReLU(true))
   end

   local function basicblock(n, stride)
      local nInputPlane = iChannels
      iChannels = n
      local s = nn.Sequential()
      s:add(Convolution(nInputPlane, n, 3, 3, stride, stride, 1, 1))
      s:add(SBatchNorm(n))
      s:add(ReLU(true))
      s:add(Convolution(n, n, 3, 3, 1, 1, 1, 1))
      s:add(SBatchNorm(n))
      return residual(s, nInputPlane, n, stride)
   end

   -- the stride sits on the 3x3 convolution (fb.resnet.torch's choice)
   local function bottleneck(n, stride)
      local nInputPlane = iChannels
      iChannels = n * 4
      local s = nn.Sequential()
      s:add(Convolution(nInputPlane, n, 1, 1, 1, 1, 0, 0))
      s:add(SBatchNorm(n))
      s:add(ReLU(true))
      s:add(Convolution(n, n, 3, 3, stride, stride, 1, 1))
      s:add(SBatchNorm(n))
      s:add(ReLU(true))
      s:add(Convolution(n, n * 4, 1, 1, 1, 1, 0, 0))
      s:add(SBatchNorm(n * 4))
      return residual(s, nInputPlane, n * 4, stride)
   end

   local function layer(block, features, count, stride)
      local s = nn.Sequential()
      for i = 1, count do s:add(block(features, i == 1 and stride or 1)) end
      return s
   end

   local model = nn.Sequential()
   if dataset == 'imagenet' then
      local cfg = {
         [18]  = {{2, 2, 2, 2}, 512, basicblock},
         [34]  = {{3, 4, 6, 3}, 512, basicblock},
         [50]  = {{3, 4, 6, 3}, 2048, bottleneck},
         [101] = {{3, 4, 23, 3}, 2048, bottleneck},
         [152] = {{3, 8, 36, 3}, 2048, bottleneck},
         [200] = {{3, 24, 36, 3}, 2048, bottleneck},
      }
      assert(cfg[depth], 'Invalid depth: ' .. tostring(depth))
      local def, nFeatures, block = cfg[depth][1], cfg[depth][2], cfg[depth][3]
      iChannels = 64
      model:add(Convolution(3, 64, 7, 7, 2, 2, 3, 3))
      model:add(SBatchNorm(64))
      model:add(ReLU(true))
      model:add(Max(3, 3, 2, 2, 1, 1))
      model:add(layer(block, 64, def[1]))
      model:add(layer(block, 128, def[2], 2))
      model:add(layer(block, 256, def[3], 2))
      model:add(layer(block, 512, def[4], 2))
      model:add(Avg(7, 7, 1, 1))
      model:add(nn.View(nFeatures):setNumInputDims(3))
      model:add(nn.Linear(nFeatures, opt.nClasses or 1000))
   elseif dataset == 'cifar10' or dataset == 'cifar100' or dataset == 'mnist' then
      -- 'mnist' (ours, not fb.resnet.torch's): the CIFAR network for 28x28 inputs with
      -- opt.nChannels (default 1) planes, for MNIST-type data such as the built-in set
      assert((depth - 2) % 6 == 0, 'depth should be one of 20, 32, 44, 56, 110, 1202')
      local n = (depth - 2) / 6
      local side = dataset == 'mnist' and 28 or 32
      iChannels = 16
      model:add(Convolution(opt.nChannels or (dataset == 'mnist' and 1 or 3), 16, 3, 3, 1, 1, 1, 1))
      model:add(SBatchNorm(16))
      model:add(ReLU(true))
      model:add(layer(basicblock, 16, n))
      model:add(layer(basicblock, 32, n, 2))
      model:add(layer(basicblock, 64, n, 2))
      model:add(Avg(side / 4, side / 4, 1, 1))
      model:add(nn.View(64):setNumInputDims(3))
      model:add(nn.Linear(64, opt.nClasses or (dataset == 'cifar100' and 100 or 10)))
   else
      error('invalid dataset: ' .. tostring(dataset))
   end

   local function convInit(name)
      for _, v in pairs(model:findModules(name)) do
         local n = v.kW * v.kH * v.nOutputPlane
         v.weight:normal(0, math.sqrt(2 / n))
         if cudnn.version >= 4000 then
            v.bias = nil
            v.gradBias = nil
         else
            v.bias:zero()
         end
      end
   end
   local function bnInit(name)
      for _, v in pairs(model:findModules(name)) do
         v.weight:fill(1)
         v.bias:zero()
      end
   end
   convInit('cudnn.SpatialConvolution')
   convInit('nn.SpatialConvolution')
   bnInit('cudnn.SpatialBatchNormalization')
   bnInit('nn.SpatialBatchNormalization')
   for _, v in pairs(model:findModules('nn.Linear')) do v.bias:zero() end

   if opt.tensorType then model:type(opt.tensorType) end
   model:get(1).gradInput = nil  -- the first layer needs no gradInput
   return model
end

return createModel
