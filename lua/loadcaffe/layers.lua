-- Caffe layer definitions (from the prototxt) and their blobs (from the caffemodel) turned into
-- nn / cudnn modules with Caffe's semantics. One builder per Caffe layer type; a builder returns
-- a list of {name, module} (an InnerProduct after spatial layers brings its own flattening View).
local pt = require 'loadcaffe.prototxt'

local M = {}

-- the V1 format's LayerType enum (caffe.proto), by name and by number, as new-format type names
local v1Names = {
   CONVOLUTION = 'Convolution', POOLING = 'Pooling', RELU = 'ReLU', LRN = 'LRN',
   INNER_PRODUCT = 'InnerProduct', DROPOUT = 'Dropout', SOFTMAX = 'Softmax',
   SOFTMAX_LOSS = 'SoftmaxWithLoss', SIGMOID = 'Sigmoid', TANH = 'TanH', CONCAT = 'Concat',
   DATA = 'Data', ACCURACY = 'Accuracy', ABSVAL = 'AbsVal', ARGMAX = 'ArgMax', BNLL = 'BNLL',
   CONTRASTIVE_LOSS = 'ContrastiveLoss', DECONVOLUTION = 'Deconvolution', DUMMY_DATA = 'DummyData',
   EUCLIDEAN_LOSS = 'EuclideanLoss', ELTWISE = 'Eltwise', EXP = 'Exp', FLATTEN = 'Flatten',
   HDF5_DATA = 'HDF5Data', HDF5_OUTPUT = 'HDF5Output', HINGE_LOSS = 'HingeLoss', IM2COL = 'Im2col',
   IMAGE_DATA = 'ImageData', INFOGAIN_LOSS = 'InfogainLoss', MEMORY_DATA = 'MemoryData',
   MULTINOMIAL_LOGISTIC_LOSS = 'MultinomialLogisticLoss', MVN = 'MVN', POWER = 'Power',
   SIGMOID_CROSS_ENTROPY_LOSS = 'SigmoidCrossEntropyLoss', SILENCE = 'Silence', SPLIT = 'Split',
   SLICE = 'Slice', WINDOW_DATA = 'WindowData', THRESHOLD = 'Threshold', NONE = 'None',
}
local v1Numbers = {
   [0] = 'NONE', [1] = 'ACCURACY', [2] = 'BNLL', [3] = 'CONCAT', [4] = 'CONVOLUTION', [5] = 'DATA',
   [6] = 'DROPOUT', [7] = 'EUCLIDEAN_LOSS', [8] = 'FLATTEN', [9] = 'HDF5_DATA', [10] = 'HDF5_OUTPUT',
   [11] = 'IM2COL', [12] = 'IMAGE_DATA', [13] = 'INFOGAIN_LOSS', [14] = 'INNER_PRODUCT', [15] = 'LRN',
   [16] = 'MULTINOMIAL_LOGISTIC_LOSS', [17] = 'POOLING', [18] = 'RELU', [19] = 'SIGMOID',
   [20] = 'SOFTMAX', [21] = 'SOFTMAX_LOSS', [22] = 'SPLIT', [23] = 'TANH', [24] = 'WINDOW_DATA',
   [25] = 'ELTWISE', [26] = 'POWER', [27] = 'SIGMOID_CROSS_ENTROPY_LOSS', [28] = 'HINGE_LOSS',
   [29] = 'MEMORY_DATA', [30] = 'ARGMAX', [31] = 'THRESHOLD', [32] = 'DUMMY_DATA', [33] = 'SLICE',
   [34] = 'MVN', [35] = 'ABSVAL', [36] = 'SILENCE', [37] = 'CONTRASTIVE_LOSS', [38] = 'EXP',
   [39] = 'DECONVOLUTION',
}

-- the new-format type name of a layer definition (V1 enums by name or number)
function M.typeName(def, v1)
   local t = pt.one(def, 'type')
   if t == nil then return nil end
   if not v1 then return t end
   if tonumber(t) then t = v1Numbers[tonumber(t)] or t end
   return v1Names[t] or t
end

-- where a V1 file's layer keeps a parameter message (the same field names as the new format)
local function param(def, name)
   return pt.one(def, name, {})
end

-- kernel / stride / pad of a convolution or pooling: the _h/_w fields win over the square one,
-- which may itself be given twice (h then w) in newer prototxts
local function pair(p, base, default)
   local h, w = pt.number(p, base .. '_h'), pt.number(p, base .. '_w')
   local square = pt.all(p, base == 'kernel' and 'kernel_size' or base)
   if h or w then
      return h or (square[1] and tonumber(square[1])) or default, w or (square[1] and tonumber(square[1])) or default
   end
   if #square == 0 then return default, default end
   if #square == 1 then return tonumber(square[1]), tonumber(square[1]) end
   return tonumber(square[1]), tonumber(square[2])
end

local function dims(blob)
   local d = {}
   for i, v in ipairs(blob.shape) do d[i] = v end
   return d
end

local function product(d)
   local n = 1
   for _, v in ipairs(d) do n = n * v end
   return n
end

local function layerError(name, fmt, ...)
   error(string.format("loadcaffe: layer '%s': " .. fmt, name, ...), 0)
end

local function needBlobs(ctx, name, count)
   local blobs = ctx.blobs(name)
   if not blobs or #blobs < count then
      layerError(name, 'the caffemodel has %d weight blobs for it, %d needed (is it the model of this prototxt?)',
                 blobs and #blobs or 0, count)
   end
   for i = 1, count do
      local n, want = blobs[i].data:nElement(), product(dims(blobs[i]))
      -- a blob without shape fields only says how many values it has
      if want ~= 0 and n ~= want then
         layerError(name, 'blob %d has %d values, its shape says %d', i, n, want)
      end
   end
   return blobs
end

local function copyInto(name, what, target, blob)
   if target:nElement() ~= blob.data:nElement() then
      layerError(name, 'the %s blob has %d values, the module needs %d', what, blob.data:nElement(),
                 target:nElement())
   end
   target:copy(blob.data:viewAs(target))
end

-- the 4-D (out, in/groups, kH, kW) shape of a convolution weight blob (legacy blobs are 4-D too)
local function convShape(name, blob)
   local d = dims(blob)
   if #d ~= 4 then layerError(name, 'the weight blob has %d dimensions, a convolution needs 4', #d) end
   return d[1], d[2], d[3], d[4]
end

local builders = {}

function builders.Convolution(ctx, name, def)
   local p = param(def, 'convolution_param')
   local groups = pt.number(p, 'group', 1)
   local biasTerm = pt.bool(p, 'bias_term', true)
   local blobs = needBlobs(ctx, name, biasTerm and 2 or 1)
   local nOut, nInPerGroup, kH, kW = convShape(name, blobs[1])
   local nIn = nInPerGroup * groups
   local pkH, pkW = pair(p, 'kernel', nil)
   if (pkH and pkH ~= kH) or (pkW and pkW ~= kW) then
      layerError(name, 'the prototxt says a %dx%d kernel, the weights are %dx%d', pkH or 0, pkW or 0, kH, kW)
   end
   local numOutput = pt.number(p, 'num_output')
   if numOutput and numOutput ~= nOut then
      layerError(name, 'num_output is %d, the weights have %d outputs', numOutput, nOut)
   end
   if pt.number(p, 'dilation', 1) ~= 1 then layerError(name, 'dilated convolutions are not supported') end
   local dH, dW = pair(p, 'stride', 1)
   local padH, padW = pair(p, 'pad', 0)
   local function finish(conv, weight, bias)
      copyInto(name, 'weight', conv.weight, weight)
      if bias then copyInto(name, 'bias', conv.bias, bias) else conv:noBias() end
      return conv
   end
   if ctx.backend == 'cudnn' then
      local conv = cudnn.SpatialConvolution(nIn, nOut, kW, kH, dW, dH, padW, padH, groups)
      return {{name, finish(conv, blobs[1], biasTerm and blobs[2])}}
   end
   if groups == 1 then
      local conv = nn.SpatialConvolution(nIn, nOut, kW, kH, dW, dH, padW, padH)
      return {{name, finish(conv, blobs[1], biasTerm and blobs[2])}}
   end
   -- nn has no grouped convolution: each group convolves its slice of the input channels
   -- with its slice of the filters, and the outputs are joined along the channels
   local outPerGroup = nOut / groups
   local w = blobs[1].data:view(nOut, nInPerGroup, kH, kW)
   local b = biasTerm and blobs[2].data
   local branches = nn.ConcatTable()
   for g = 1, groups do
      local conv = nn.SpatialConvolution(nInPerGroup, outPerGroup, kW, kH, dW, dH, padW, padH)
      conv.name = name .. '_group' .. g
      local rows = {(g - 1) * outPerGroup + 1, g * outPerGroup}
      finish(conv, {data = w[{rows}]}, b and {data = b[{rows}]})
      branches:add(nn.Sequential():add(nn.Narrow(-3, (g - 1) * nInPerGroup + 1, nInPerGroup)):add(conv))
   end
   local grouped = nn.Sequential():add(branches):add(nn.JoinTable(1, 3))
   return {{name, grouped}}
end

function builders.InnerProduct(ctx, name, def)
   local p = param(def, 'inner_product_param')
   local biasTerm = pt.bool(p, 'bias_term', true)
   local transpose = pt.bool(p, 'transpose', false)
   local blobs = needBlobs(ctx, name, biasTerm and 2 or 1)
   local total = blobs[1].data:nElement()
   local d = dims(blobs[1])
   -- new blobs are (out, in), legacy ones (1, 1, out, in); transposed ones swap out and in
   local nOut = pt.number(p, 'num_output') or (transpose and d[#d] or d[#d - 1])
   if not nOut or nOut == 0 or total % nOut ~= 0 then
      layerError(name, 'cannot tell the number of outputs from num_output and a weight blob of %d values', total)
   end
   local nIn = total / nOut
   local linear = nn.Linear(nIn, nOut)
   local weight = blobs[1]
   if transpose then weight = {data = weight.data:view(nIn, nOut):t():contiguous()} end
   copyInto(name, 'weight', linear.weight, weight)
   if biasTerm then copyInto(name, 'bias', linear.bias, blobs[2]) else linear:noBias() end
   local out = {}
   if ctx.spatial then
      -- Caffe flattens (C, H, W) in that order, as View does a contiguous tensor
      out[1] = {'torch_view', nn.View(-1):setNumInputDims(3)}
   end
   out[#out + 1] = {name, linear}
   return out
end

function builders.Pooling(ctx, name, def)
   local p = param(def, 'pooling_param')
   local method = pt.one(p, 'pool', 'MAX')
   if method == '0' then method = 'MAX' elseif method == '1' then method = 'AVE' elseif method == '2' then method = 'STOCHASTIC' end
   if pt.bool(p, 'global_pooling', false) then layerError(name, 'global pooling is not supported') end
   local kH, kW = pair(p, 'kernel', nil)
   if not kH then layerError(name, 'pooling_param gives no kernel size') end
   local dH, dW = pair(p, 'stride', 1)
   local padH, padW = pair(p, 'pad', 0)
   local lib = ctx.backend == 'cudnn' and cudnn or nn
   local module
   if method == 'MAX' then
      module = lib.SpatialMaxPooling(kW, kH, dW, dH, padW, padH)
   elseif method == 'AVE' then
      -- counting the padding in the divisor, as Caffe does
      module = lib.SpatialAveragePooling(kW, kH, dW, dH, padW, padH)
   else
      layerError(name, 'pooling method %s is not supported (MAX and AVE are)', tostring(method))
   end
   -- Caffe rounds the output size up
   return {{name, module:ceil()}}
end

function builders.ReLU(ctx, name, def)
   local slope = pt.number(param(def, 'relu_param'), 'negative_slope', 0)
   if slope ~= 0 then return {{name, nn.LeakyReLU(slope, true)}} end
   return {{name, ctx.backend == 'cudnn' and cudnn.ReLU(true) or nn.ReLU(true)}}
end

function builders.Sigmoid(ctx, name)
   return {{name, ctx.backend == 'cudnn' and cudnn.Sigmoid(true) or nn.Sigmoid()}}
end

function builders.TanH(ctx, name)
   return {{name, ctx.backend == 'cudnn' and cudnn.Tanh(true) or nn.Tanh()}}
end
builders.Tanh = builders.TanH

function builders.LRN(ctx, name, def)
   local p = param(def, 'lrn_param')
   local region = pt.one(p, 'norm_region', 'ACROSS_CHANNELS')
   if region ~= 'ACROSS_CHANNELS' and region ~= '0' then
      layerError(name, 'LRN within a channel is not supported (only ACROSS_CHANNELS)')
   end
   local size = pt.number(p, 'local_size', 5)
   local alpha, beta, k = pt.number(p, 'alpha', 1), pt.number(p, 'beta', 0.75), pt.number(p, 'k', 1)
   -- Caffe's and Torch's formulas agree: x / (k + alpha / size * sum of squares)^beta
   local lib = ctx.backend == 'cudnn' and cudnn or nn
   return {{name, lib.SpatialCrossMapLRN(size, alpha, beta, k)}}
end

function builders.Dropout(ctx, name, def)
   return {{name, nn.Dropout(pt.number(param(def, 'dropout_param'), 'dropout_ratio', 0.5))}}
end

function builders.Softmax(ctx, name)
   return {{name, ctx.backend == 'cudnn' and cudnn.SoftMax() or nn.SoftMax()}}
end
-- a deploy net keeps the probabilities of a trained SoftmaxWithLoss
builders.SoftmaxWithLoss = builders.Softmax

-- whether the output of each layer type is still an image (C, H, W); nil: unchanged
local spatialAfter = {Convolution = true, Pooling = true, LRN = true, InnerProduct = false}

-- Returns the list of {name, module} for one layer definition, or nil for a type with no builder.
function M.build(ctx, def, v1)
   local name = pt.one(def, 'name', '')
   local typeName = M.typeName(def, v1)
   local builder = builders[typeName]
   if not builder then return nil, typeName end
   local list = builder(ctx, name, def)
   local after = spatialAfter[typeName]
   if after ~= nil then ctx.spatial = after end
   return list, typeName
end

return M
