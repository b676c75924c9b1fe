-- cudnn.functional: cudnn.torch's stateless calls (each takes the cuDNN handle first, which is
-- ignored here; the result tensors are given by the caller). Run on the nn kernels through a
-- throwaway module object that borrows the caller's tensors and is never initialized (no random draws).
local F = {}
cudnn.functional = F

-- an uninitialized instance of nn class `name` with the given fields
local function borrow(name, fields)
   return setmetatable(fields, torch.getmetatable(name))
end

-- 3-D (one image) tensors are treated as a batch of one, as cudnn.torch did
local function batch2D(t)
   return t:dim() == 3 and t:view(1, t:size(1), t:size(2), t:size(3)) or t
end

local function sameSize(name, what, got, want)
   if not got:isSameSizeAs(want) then
      error(string.format('cudnn.functional.%s: %s has size %s, expected %s', name, what,
                          table.concat(got:size():totable(), 'x'), table.concat(want:size():totable(), 'x')), 3)
   end
end

-- output += bias (one value per channel, dimension 2 of the batch)
function F.bias2D_updateOutput(handle, bias, output)
   output = batch2D(output)
   local shape = {1, bias:nElement()}
   for d = 3, output:dim() do shape[d] = 1 end
   output:add(bias:view(table.unpack(shape)):expandAs(output))
end

-- gradBias = scale * (gradOutput summed over all but the channels) + alpha * gradBias
function F.bias2D_accGradParameters(handle, gradOutput, gradBias, scale, alpha)
   gradOutput = batch2D(gradOutput)
   local n, c = gradOutput:size(1), gradOutput:size(2)
   local sums = gradOutput:contiguous():view(n, c, -1):sum(3):sum(1):view(c)
   gradBias:mul(alpha or 1):add(scale or 1, sums:typeAs(gradBias))
end

local function convolution(input, weight, strideH, strideW, padH, padW)
   return borrow('nn.SpatialConvolution', {
      nInputPlane = weight:size(2), nOutputPlane = weight:size(1), kH = weight:size(3), kW = weight:size(4),
      dH = strideH, dW = strideW, padH = padH or 0, padW = padW or 0, weight = weight:contiguous(),
      output = input.new(), gradInput = input.new()})
end

-- output = input convolved with weight (nOut x nIn x kH x kW), no bias
function F.Convolution2D_updateOutput(handle, input, weight, output, strideH, strideW, padH, padW)
   input, output = batch2D(input), batch2D(output)
   local m = convolution(input, weight, strideH, strideW, padH, padW)
   local y = m:updateOutput(input)
   sameSize('Convolution2D_updateOutput', 'output', output, y)
   output:copy(y)
end

-- gradInput = the gradient of the convolution's input
function F.Convolution2D_updateGradInput(handle, input, weight, output, gradOutput, gradInput,
                                         strideH, strideW, padH, padW)
   input, gradOutput, gradInput = batch2D(input), batch2D(gradOutput), batch2D(gradInput)
   local m = convolution(input, weight, strideH, strideW, padH, padW)
   local gi = m:updateGradInput(input, gradOutput:contiguous())
   sameSize('Convolution2D_updateGradInput', 'gradInput', gradInput, gi)
   gradInput:copy(gi)
end

-- gradWeight = scale * (the weight gradient) + alpha * gradWeight
function F.Convolution2D_accGradParameters(handle, input, gradWeight, gradOutput, strideH, strideW, padH, padW,
                                           scale, alpha)
   input, gradOutput = batch2D(input), batch2D(gradOutput)
   local m = convolution(input, gradWeight, strideH, strideW, padH, padW)
   m.gradWeight = gradWeight.new(gradWeight:size()):zero()
   m:accGradParameters(input, gradOutput:contiguous(), 1)
   gradWeight:mul(alpha or 1):add(scale or 1, m.gradWeight)
end

-- the pooling module for cudnn.torch's mode names ('CUDNN_POOLING_AVERAGE*' count the padding)
local function pooling(name, mode, input, kH, kW, dH, dW, padH, padW, ceil_mode)
   local fields = {kW = kW, kH = kH, dW = dW, dH = dH, padW = padW or 0, padH = padH or 0,
                   ceil_mode = ceil_mode or false, output = input.new(), gradInput = input.new()}
   if mode == 'CUDNN_POOLING_MAX' then
      fields.indices = torch.LongTensor()
      return borrow('nn.SpatialMaxPooling', fields)
   elseif type(mode) == 'string' and mode:find('^CUDNN_POOLING_AVERAGE') then
      fields.count_include_pad, fields.divide = mode ~= 'CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING', true
      return borrow('nn.SpatialAveragePooling', fields)
   end
   error(string.format("cudnn.functional.%s: unknown pooling mode '%s' (CUDNN_POOLING_MAX or "
                       .. 'CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING)', name, tostring(mode)), 3)
end

-- output = the pooling of input; output must already have the pooled size
function F.Pooling_updateOutput(handle, mode, input, output, kH, kW, dH, dW, padH, padW, ceil_mode)
   input, output = batch2D(input), batch2D(output)
   local y = pooling('Pooling_updateOutput', mode, input, kH, kW, dH, dW, padH, padW, ceil_mode):updateOutput(input)
   sameSize('Pooling_updateOutput', 'output', output, y)
   output:copy(y)
end

-- gradInput = the pooling's input gradient (max pooling finds its maxima in input again)
function F.Pooling_updateGradInput(handle, mode, input, output, gradOutput, gradInput, kH, kW, dH, dW, padH, padW,
                                   ceil_mode)
   input, output, gradOutput, gradInput = batch2D(input), batch2D(output), batch2D(gradOutput), batch2D(gradInput)
   local m = pooling('Pooling_updateGradInput', mode, input, kH, kW, dH, dW, padH, padW, ceil_mode)
   sameSize('Pooling_updateGradInput', 'output', output, m:updateOutput(input))
   local gi = m:updateGradInput(input, gradOutput:contiguous())
   sameSize('Pooling_updateGradInput', 'gradInput', gradInput, gi)
   gradInput:copy(gi)
end

for _, p in ipairs {{'MaxPooling2D', 'CUDNN_POOLING_MAX'}, {'AveragePooling2D', 'CUDNN_POOLING_AVERAGE'}} do
   local name, mode = p[1], p[2]
   F[name .. '_updateOutput'] = function(handle, input, output, kH, kW, dH, dW, padH, padW, ceil_mode)
      F.Pooling_updateOutput(handle, mode, input, output, kH, kW, dH, dW, padH, padW, ceil_mode)
   end
   F[name .. '_updateGradInput'] = function(handle, input, output, gradOutput, gradInput, kH, kW, dH, dW, padH,
                                            padW, ceil_mode)
      F.Pooling_updateGradInput(handle, mode, input, output, gradOutput, gradInput, kH, kW, dH, dW, padH, padW,
                                ceil_mode)
   end
end

-- Activations and softmaxes: output (resized to input) from input; gradInput (resized) from
-- output and gradOutput. The softmaxes are over each sample (instance mode, as cudnn.SoftMax).
local unary = {
   ReLU = function() return borrow('nn.ReLU', {threshold = 0, val = 0, inplace = false}) end,
   Tanh = function() return borrow('nn.Tanh', {}) end,
   Sigmoid = function() return borrow('nn.Sigmoid', {}) end,
   SoftMax = function() return borrow('cudnn.SoftMax', {algorithm = 'CUDNN_SOFTMAX_ACCURATE'}) end,
   LogSoftMax = function() return borrow('cudnn.LogSoftMax', {algorithm = 'CUDNN_SOFTMAX_LOG'}) end,
}
for name, make in pairs(unary) do
   F[name .. '_updateOutput'] = function(handle, input, output)
      local m = make()
      m.output = output
      m:updateOutput(input)
      if not rawequal(m.output, output) then output:resizeAs(input):copy(m.output) end
   end
   F[name .. '_updateGradInput'] = function(handle, input, output, gradOutput, gradInput)
      local m = make()
      m.output, m.gradInput = output, gradInput
      m:updateGradInput(input, gradOutput)
      if not rawequal(m.gradInput, gradInput) then gradInput:resizeAs(input):copy(m.gradInput) end
   end
end
