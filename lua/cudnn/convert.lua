-- cudnn.convert(net, cudnn | nn, exclusion_fn): replaces every module of `net` that has a
-- counterpart in the other package by a module of that class holding the same fields (weights are
-- shared, not copied), and returns the converted net. Modules for which exclusion_fn(module) is
-- true are left as they are (their children are still visited); nngraph's gModule is skipped.
--
-- As cudnn.torch: nn.SpatialConvolutionMM becomes the destination's SpatialConvolution either way,
-- inn.SpatialCrossResponseNormalization its SpatialCrossMapLRN, and a ReLU is built fresh so that
-- it gets the destination class's own fields. Unlike cudnn.torch, a module whose result would
-- change is left as it is: an nn.SpatialAveragePooling that excludes the padding or sums
-- (divide = false), an nn batch normalization without affine parameters, a grouped
-- cudnn.SpatialConvolution, a padded or ceil-mode cudnn.VolumetricAveragePooling (nn's has
-- neither); and a cudnn.SpatialAveragePooling becomes an nn one that counts the padding, as cuDNN did.
-- Note that cudnn.SoftMax/LogSoftMax normalize over all of C x H x W on 3-D and 4-D inputs, where
-- nn's normalize each pixel: converting such softmaxes changes their results, as in cudnn.torch.

local convertible = {
   'BatchNormalization', 'SpatialBatchNormalization', 'SpatialConvolution', 'SpatialCrossMapLRN',
   'SpatialFullConvolution', 'SpatialMaxPooling', 'SpatialAveragePooling', 'ReLU', 'Tanh', 'Sigmoid',
   'SoftMax', 'LogSoftMax', 'VolumetricBatchNormalization', 'VolumetricConvolution',
   'VolumetricFullConvolution', 'VolumetricMaxPooling', 'VolumetricAveragePooling',
}
local isConvertible = {}
for _, name in ipairs(convertible) do isConvertible[name] = true end

-- Whether converting module x (of class `name` in the source package) would change its results.
local function keepsResults(x, name, toCudnn)
   if toCudnn then
      if name == 'SpatialAveragePooling' then return x.count_include_pad ~= false and x.divide ~= false end
      if name:find('BatchNormalization$') then return x.weight ~= nil end
      return true
   end
   if name == 'SpatialConvolution' then return (x.groups or 1) == 1 end
   if name == 'VolumetricAveragePooling' then
      return not x.ceil_mode and (x.padT or 0) == 0 and (x.padW or 0) == 0 and (x.padH or 0) == 0
   end
   return true
end

-- A new module of class dstPrefix .. name holding x's fields.
local function converted(x, name, dst, dstPrefix, fromCudnn)
   local y = name == 'ReLU' and dst.ReLU() or setmetatable({}, torch.getmetatable(dstPrefix .. name))
   for k, v in pairs(x) do y[k] = v end
   if fromCudnn then cudnn._clearDesc(y) end
   if torch.typename(x) == 'nn.SpatialConvolutionMM' and y.weight and y.weight:dim() == 2 then
      -- MM keeps its weight as nOut x (nIn*kH*kW): the same memory, seen as nOut x nIn x kH x kW
      local shape = {y.nOutputPlane, y.nInputPlane, y.kH, y.kW}
      y.weight = y.weight:view(table.unpack(shape))
      if y.gradWeight and y.gradWeight:nElement() == y.weight:nElement() then
         y.gradWeight = y.gradWeight:view(table.unpack(shape))
      end
   end
   if fromCudnn and name == 'SpatialAveragePooling' then
      y.divide, y.count_include_pad = true, true
   end
   return y
end

function cudnn.convert(net, dst, exclusion_fn)
   if dst ~= nn and dst ~= cudnn then
      error('cudnn.convert: the second argument must be the nn or the cudnn package (cudnn.convert(net, cudnn))', 2)
   end
   local toCudnn = dst == cudnn
   local srcPrefix, dstPrefix = toCudnn and 'nn.' or 'cudnn.', toCudnn and 'cudnn.' or 'nn.'
   return net:replace(function(x)
      local t = torch.typename(x)
      if t == 'nn.gModule' then
         io.stderr:write('Warning: cudnn.convert does not work with nngraph yet. Ignoring nn.gModule\n')
         return x
      end
      if exclusion_fn and exclusion_fn(x) then return x end
      if t == 'nn.SpatialConvolutionMM' then return converted(x, 'SpatialConvolution', dst, dstPrefix, false) end
      if t == 'inn.SpatialCrossResponseNormalization' then
         return converted(x, 'SpatialCrossMapLRN', dst, dstPrefix, false)
      end
      local name = t and t:sub(1, #srcPrefix) == srcPrefix and t:sub(#srcPrefix + 1)
      if name and isConvertible[name] and keepsResults(x, name, toCudnn) then
         return converted(x, name, dst, dstPrefix, not toCudnn)
      end
      return x
   end)
end
