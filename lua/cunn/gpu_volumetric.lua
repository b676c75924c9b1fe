-- cunn on cutorch's GPU backend, continued (loaded by cunn/gpu.lua): nn's volumetric convolutions (full too) and
-- average pooling, its temporal and depthwise convolutions without cuDNN, composed of cutorch's device methods.
-- Where cuDNN is used (cudnn/gpu.lua) it runs them; these versions run where it is not (no libcudnn,
-- LUATORCH_CUDNN=0, cudnn.enabled = false), as Torch7's cunn had its own.
--
-- The convolutions are vol2col and GEMMs, as Torch7's cunn computed them: the columns of a (B, C, s_1..s_n) input
-- (n = 3 volumetric, 2 depthwise) are an unfolded view of its zero-padded copy (unfold per dimension; a dilated
-- window is a strided view of the unfolded one) permuted to (C·K, B·L) and copied contiguous (K taps per window, L
-- output positions), so the whole batch is one GEMM. Their adjoint (col2vol) adds the columns back one tap at a time:
-- one strided add per tap, whose cells are distinct within the tap (no two writes to a cell in one launch,
-- deterministic).
local ffi = require 'ffi'

return function(onDevice)

local function shapeOf(t)   -- as the host kernels name a shape: [2 x 3 x 4]
   return '[' .. table.concat(t:size():totable(), ' x ') .. ']'
end
local function fail(level, fmt, ...) error(string.format(fmt, ...), level + 1) end

-- ---------------------------------------------------------------- windows, columns and their adjoint

-- A geometry g: n spatial dimensions; k, d, pad, dil (per dimension); ins, outs the input's and output's sizes; B
-- samples, C planes.
local function taps(g)
   local K = 1
   for i = 1, g.n do K = K * g.k[i] end
   return K
end
local function positions(g)
   local L = 1
   for i = 1, g.n do L = L * g.outs[i] end
   return L
end
local function paddedOf(g)
   for i = 1, g.n do if g.pad[i] ~= 0 then return true end end
   return false
end
local function size(...) return torch.LongStorage({...}) end
local function sizeOf(lead, rest)   -- lead (a list) followed by rest (a list)
   local s = {}
   for _, v in ipairs(lead) do s[#s + 1] = v end
   for _, v in ipairs(rest) do s[#s + 1] = v end
   return torch.LongStorage(s)
end

-- A zeroed (B, C, s_i + 2 pad_i) buffer, and the view of it that the unpadded volume occupies.
local function paddedBuffer(like, g)
   local s = {}
   for i = 1, g.n do s[i] = g.ins[i] + 2 * g.pad[i] end
   local buf = like.new(sizeOf({g.B, g.C}, s)):zero()
   local inner = buf
   for i = 1, g.n do inner = inner:narrow(2 + i, g.pad[i] + 1, g.ins[i]) end
   return buf, inner
end

-- The (B, C, o_1..o_n, k_1..k_n) view of x's windows: entry (b, c, o, a) is x's cell o_i·d_i + a_i·dil_i (0-based).
local function windows(x, g)
   local w = x
   for i = 1, g.n do
      local dim = 2 + i
      w = w:unfold(dim, g.dil[i] * (g.k[i] - 1) + 1, g.d[i])
      if g.dil[i] > 1 then   -- every dil-th cell of the window: a view of stride dil along it
         local last = w:dim()
         w = w:unfold(last, 1, g.dil[i]):select(last + 1, 1)
      end
      w = w:narrow(dim, 1, g.outs[i])
   end
   return w
end

-- The (C·K, B·L) columns of x (B, C, s_1..s_n): row (c, a_1..a_n), column (b, o_1..o_n); zeros from the padding.
local function columns(x, g)
   local src = x
   if paddedOf(g) then
      local buf, inner = paddedBuffer(x, g)
      inner:copy(x)
      src = buf
   end
   local order = {2}
   for i = 1, g.n do order[#order + 1] = 2 + g.n + i end
   order[#order + 1] = 1
   for i = 1, g.n do order[#order + 1] = 2 + i end
   return windows(src, g):permute(table.unpack(order)):contiguous():view(g.C * taps(g), g.B * positions(g))
end

-- Calls fn(view, a) for every tap a (0-based, a_1 slowest) with the (B, C, o_1..o_n) view of w's windows' cells at
-- that tap (w from windows()).
local function eachTap(w, g, fn)
   local a = {}
   for i = 1, g.n do a[i] = 0 end
   for _ = 1, taps(g) do
      local v = w
      for i = g.n, 1, -1 do v = v:select(2 + g.n + i, a[i] + 1) end
      fn(v, a)
      for i = g.n, 1, -1 do   -- the next tap
         a[i] = a[i] + 1
         if a[i] < g.k[i] then break end
         a[i] = 0
      end
   end
end

-- x (B, C, s_1..s_n) += the adjoint of columns(): every entry of cols (C·K, B·L) added to the cell it was read from.
local function addColumns(x, cols, g)
   local dst, inner = x, nil
   if paddedOf(g) then dst, inner = paddedBuffer(x, g) end
   local shape = {g.C}
   for i = 1, g.n do shape[#shape + 1] = g.k[i] end
   shape[#shape + 1] = g.B
   for i = 1, g.n do shape[#shape + 1] = g.outs[i] end
   local c = cols:view(torch.LongStorage(shape))
   eachTap(windows(dst, g), g, function(cells, a)
      local tap = c
      for i = 1, g.n do tap = tap:select(2, a[i] + 1) end   -- (C, B, o_1..o_n)
      cells:add(tap:transpose(1, 2))
   end)
   if inner then x:add(inner) end
end

-- t with a leading sample dimension of 1 where it has rank n + 1 (a view; contiguous where it had to be viewed)
local function batched(t, n)
   if t:dim() == n + 2 then return t end
   local c = t:contiguous()
   return c:view(sizeOf({1}, c:size():totable()))
end

-- A module tensor that the batched view of a result can be taken of (contiguous), of input's size.
local function resultLike(self, field, input)
   if not self[field]:isContiguous() then self[field] = input.new() end
   return self[field]:resizeAs(input)
end

-- (B, P, L) of a (B, P, s...) tensor, to (P, B·L) contiguous: the GEMMs' layout of an output or its gradient
local function planesFirst(t, B, P)
   return t:contiguous():view(B, P, -1):transpose(1, 2):contiguous():view(P, -1)
end
-- the (P, B·L) product into out (B, P, s...), contiguous
local function samplesFirst(out, m, B, P)
   out:view(B, P, -1):copy(m:view(P, B, -1):transpose(1, 2))
end

-- out (B, P, s...) += bias (P) on every plane
local function addPlaneBias(out, bias, B, P)
   local planes = out:view(B, P, -1)
   planes:add(bias:view(1, P, 1):expandAs(planes))
end

-- The volumetric convolutions' result size, (N x) planes x T x H x W for a 5-D (4-D) input, and the host kernels'
-- errors for an output too small and a gradOutput of another size.
local function volumeSize(input, B, planes, s)
   if input:dim() == 5 then return size(B, planes, s[1], s[2], s[3]) end
   return size(planes, s[1], s[2], s[3])
end
local function checkTooSmall(fn, nIn, ins, nOut, outs)
   if outs[1] < 1 or outs[2] < 1 or outs[3] < 1 then
      fail(4, '%s: Given input size: (%d x %d x %d x %d). Calculated output size: (%d x %d x %d x %d). Output '
           .. 'size is too small', fn, nIn, ins[1], ins[2], ins[3], nOut, outs[1], outs[2], outs[3])
   end
end
local function checkVolumeGradOutput(fn, input, B, planes, s, gradOutput)
   if not gradOutput:isSize(volumeSize(input, B, planes, s)) then
      fail(3, '%s: gradOutput should be of shape %s%d x %d x %d x %d] but got %s', fn,
           input:dim() == 5 and '[N x ' or '[', planes, s[1], s[2], s[3], shapeOf(gradOutput))
   end
end

-- ---------------------------------------------------------------- VolumetricConvolution

-- nn.VolumetricConvolution (and VolumetricDilatedConvolution, cudnn's subclass): weight (nOut, nIn, kT, kH, kW), or
-- (nOut, nIn·kT·kH·kW) in old files; output (N,) nOut x oT x oH x oW, o = floor((s + 2 pad - dil (k - 1) - 1) / d)
-- + 1. Checks and errors as the host kernel's.
do
   local VC = nn.VolumetricConvolution
   local function geometry(self, input, fn)
      local lT, lW, lH = self:_dilation()
      local k, d = {self.kT, self.kH, self.kW}, {self.dT, self.dH, self.dW}
      local pad, dil = {self.padT, self.padH, self.padW}, {lT, lH, lW}
      for i = 1, 3 do
         if k[i] <= 0 then fail(3, '%s: kernel size should be greater than zero, but got kT: %d kH: %d kW: %d', fn,
                                k[1], k[2], k[3]) end
         if d[i] <= 0 then fail(3, '%s: stride should be greater than zero, but got dT: %d dH: %d dW: %d', fn,
                                d[1], d[2], d[3]) end
         if pad[i] < 0 then fail(3, '%s: padding should be non-negative, but got padT: %d padH: %d padW: %d', fn,
                                 pad[1], pad[2], pad[3]) end
         if dil[i] <= 0 then fail(3, '%s: dilation should be greater than zero, but got dilationT: %d dilationH: %d '
                                  .. 'dilationW: %d', fn, dil[1], dil[2], dil[3]) end
      end
      local w, K = self.weight, k[1] * k[2] * k[3]
      local nIn
      if w:dim() == 5 and w:size(3) == k[1] and w:size(4) == k[2] and w:size(5) == k[3] then nIn = w:size(2)
      elseif w:dim() == 2 and w:size(2) % K == 0 then nIn = w:size(2) / K
      else fail(3, '%s: weight should be of shape [nOutputPlane x nInputPlane x %d x %d x %d] but got %s', fn,
                k[1], k[2], k[3], shapeOf(w)) end
      local nOut, dims = w:size(1), input:dim()
      if dims ~= 4 and dims ~= 5 then
         fail(3, '%s: 4D or 5D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(input))
      end
      local f = dims - 4
      if input:size(f + 1) ~= nIn then
         fail(3, '%s: input has %d planes, expected %d (input of shape %s)', fn, input:size(f + 1), nIn,
              shapeOf(input))
      end
      local g = {n = 3, k = k, d = d, pad = pad, dil = dil, ins = {}, outs = {}, B = f == 1 and input:size(1) or 1,
                 C = nIn, nOut = nOut}
      for i = 1, 3 do
         g.ins[i] = input:size(f + 1 + i)
         local span = g.ins[i] + 2 * pad[i] - dil[i] * (k[i] - 1) - 1
         g.outs[i] = span < 0 and 0 or math.floor(span / d[i]) + 1
      end
      checkTooSmall(fn, nIn, g.ins, nOut, g.outs)
      return g
   end
   local function outputSize(g, input) return volumeSize(input, g.B, g.nOut, g.outs) end
   local function checkGradOutput(g, fn, input, gradOutput)
      checkVolumeGradOutput(fn, input, g.B, g.nOut, g.outs, gradOutput)
   end
   local function weightRows(w, g) return w:contiguous():view(g.nOut, -1) end

   onDevice(VC, 'updateOutput', function(self, input)
      local g = geometry(self, input, 'VolumetricConvolution_updateOutput')
      local cols = columns(batched(input, 3), g)
      self.output:resize(outputSize(g, input))
      samplesFirst(self.output, weightRows(self.weight, g) * cols, g.B, g.nOut)
      if self.bias then addPlaneBias(self.output, self.bias, g.B, g.nOut) end
      return self.output
   end)
   onDevice(VC, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local fn = 'VolumetricConvolution_updateGradInput'
      local g = geometry(self, input, fn)
      checkGradOutput(g, fn, input, gradOutput)
      local gradCols = weightRows(self.weight, g):t() * planesFirst(gradOutput, g.B, g.nOut)
      local gradInput = resultLike(self, 'gradInput', input):zero()
      addColumns(batched(gradInput, 3), gradCols, g)
      return self.gradInput
   end)
   onDevice(VC, 'accGradParameters', function(self, input, gradOutput, scale)
      local fn = 'VolumetricConvolution_accGradParameters'
      local g = geometry(self, input, fn)
      checkGradOutput(g, fn, input, gradOutput)
      scale = scale or 1
      local go = planesFirst(gradOutput, g.B, g.nOut)
      self.gradWeight:view(g.nOut, -1):addmm(scale, go, columns(batched(input, 3), g):t())
      if self.gradBias then self.gradBias:add(scale, go:sum(2):view(g.nOut)) end
   end)
end

-- ---------------------------------------------------------------- VolumetricFullConvolution

-- nn.VolumetricFullConvolution (and cudnn's): the adjoint of the convolution of its output by its weight (nIn, nOut,
-- kT, kH, kW): the output is the col2vol of weight' x input, its input gradient weight x the columns of gradOutput.
-- nn's {input, target} rule picks adj (VolumetricFullConvolution._unpackInput).
do
   local VFC = nn.VolumetricFullConvolution
   -- x, adj and the geometry of the convolution it is the adjoint of (ins: the full convolution's output)
   local function geometry(self, input, fn)
      self:backCompatibility()
      local x, adjT, adjW, adjH = VFC._unpackInput(self, input)
      local w = self.weight
      if w:dim() ~= 5 then
         fail(3, '%s: 5D weight tensor expected (nInputPlane x nOutputPlane x kT x kH x kW) but got %s', fn,
              shapeOf(w))
      end
      local k, d = {w:size(3), w:size(4), w:size(5)}, {self.dT, self.dH, self.dW}
      local pad, adj = {self.padT, self.padH, self.padW}, {adjT, adjH, adjW}
      for i = 1, 3 do
         if d[i] <= 0 then fail(3, '%s: stride should be greater than zero, but got dT: %d dH: %d dW: %d', fn,
                                d[1], d[2], d[3]) end
         if pad[i] < 0 then fail(3, '%s: padding should be non-negative, but got padT: %d padH: %d padW: %d', fn,
                                 pad[1], pad[2], pad[3]) end
         if adj[i] < 0 or adj[i] >= d[i] then
            fail(3, '%s: adjT, adjH, adjW (%d, %d, %d) must be smaller than the strides (%d, %d, %d)', fn, adj[1],
                 adj[2], adj[3], d[1], d[2], d[3])
         end
      end
      local nIn, nOut, dims = w:size(1), w:size(2), x:dim()
      if dims ~= 4 and dims ~= 5 then
         fail(3, '%s: 4D or 5D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(x))
      end
      local f = dims - 4
      if x:size(f + 1) ~= nIn then
         fail(3, '%s: input has %d planes, expected %d (input of shape %s)', fn, x:size(f + 1), nIn, shapeOf(x))
      end
      local g = {n = 3, k = k, d = d, pad = pad, dil = {1, 1, 1}, ins = {}, outs = {},
                 B = f == 1 and x:size(1) or 1, C = nOut, nIn = nIn}
      for i = 1, 3 do
         g.outs[i] = x:size(f + 1 + i)
         g.ins[i] = (g.outs[i] - 1) * d[i] - 2 * pad[i] + k[i] + adj[i]
      end
      checkTooSmall(fn, nIn, g.outs, nOut, g.ins)   -- (the full convolution's input is the convolution's output)
      return g, x
   end
   local function outputSize(g, x) return volumeSize(x, g.B, g.C, g.ins) end
   local function checkGradOutput(g, fn, x, gradOutput)
      checkVolumeGradOutput(fn, x, g.B, g.C, g.ins, gradOutput)
   end
   local function weightRows(self, g) return self.weight:contiguous():view(g.nIn, -1) end
   -- as onDevice, for an input that may be {input, target}
   local function onDeviceFull(name, gpu)
      onDevice(VFC, name, gpu)
      local tensors = VFC[name]
      VFC[name] = function(self, input, ...)
         if torch.type(input) == 'table' and torch.isTensor(input[1]) and torch._onDevice(input[1]) then
            return gpu(self, input, ...)
         end
         return tensors(self, input, ...)
      end
   end

   onDeviceFull('updateOutput', function(self, input)
      local g, x = geometry(self, input, 'VolumetricFullConvolution_updateOutput')
      local cols = weightRows(self, g):t() * planesFirst(x, g.B, g.nIn)
      if not self.output:isContiguous() then self.output = x.new() end
      self.output:resize(outputSize(g, x)):zero()
      addColumns(batched(self.output, 3), cols, g)
      if self.bias then addPlaneBias(self.output, self.bias, g.B, g.C) end
      return self.output
   end)
   onDeviceFull('updateGradInput', function(self, input, gradOutput)
      local fn = 'VolumetricFullConvolution_updateGradInput'
      local g, x = geometry(self, input, fn)
      checkGradOutput(g, fn, x, gradOutput)
      if torch.type(self.gradInput) == 'table' then self.gradInput = self.gradInput[1] end
      local gradInput = resultLike(self, 'gradInput', x)
      samplesFirst(gradInput, weightRows(self, g) * columns(batched(gradOutput, 3), g), g.B, g.nIn)
      if torch.type(input) == 'table' then self.gradInput = {self.gradInput, self:_zeroLike(input[2])} end
      return self.gradInput
   end)
   onDeviceFull('accGradParameters', function(self, input, gradOutput, scale)
      local fn = 'VolumetricFullConvolution_accGradParameters'
      local g, x = geometry(self, input, fn)
      checkGradOutput(g, fn, x, gradOutput)
      scale = scale or 1
      self.gradWeight:view(g.nIn, -1):addmm(scale, planesFirst(x, g.B, g.nIn),
                                             columns(batched(gradOutput, 3), g):t())
      if self.gradBias then
         self.gradBias:add(scale, planesFirst(gradOutput, g.B, g.C):sum(2):view(g.C))
      end
   end)
end

-- ---------------------------------------------------------------- TemporalConvolution

-- nn.TemporalConvolution, as Torch7's cunn computed it: the (N x) T x F sequence's windows of kW frames (stride dW)
-- unfolded into rows of kW·F values (frame-major, the weight's layout), one GEMM with the (O, kW·F) weight for the
-- batch; the backward adds the rows' gradients back one frame of the window at a time.
do
   local TC = nn.TemporalConvolution
   local function geometry(self, input, fn, frameSize)
      local kW, dW = self.kW, self.dW
      if kW <= 0 then fail(3, '%s: kernel size should be greater than zero, but got kW: %d', fn, kW) end
      if dW <= 0 then fail(3, '%s: stride should be greater than zero, but got dW: %d', fn, dW) end
      local dims = input:dim()
      if dims ~= 2 and dims ~= 3 then
         fail(3, '%s: 2D or 3D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(input))
      end
      local N, T, F = dims == 3 and input:size(1) or 1, input:size(dims - 1), input:size(dims)
      if frameSize and F ~= frameSize then
         fail(3, '%s: invalid input frame size. Got: %d, Expected: %d', fn, F, frameSize)
      end
      if T < kW then fail(3, '%s: input sequence smaller than kernel size. Got: %d, Expected: %d', fn, T, kW) end
      local w = self.weight
      if w:dim() ~= 2 or w:size(2) ~= kW * F then
         fail(3, '%s: weight should be of shape [outputFrameSize x %d] but got %s', fn, kW * F, shapeOf(w))
      end
      return {N = N, T = T, F = F, oT = math.floor((T - kW) / dW) + 1, O = w:size(1), kW = kW, dW = dW}
   end
   local function gradRows(g, fn, input, gradOutput)   -- (N·oT, O), or the host kernel's error
      local ok = input:dim() == 3 and gradOutput:isSize(size(g.N, g.oT, g.O)) or
                 input:dim() == 2 and gradOutput:isSize(size(g.oT, g.O))
      if not ok then
         fail(3, '%s: gradOutput should be of shape %s%d x %d] but got %s', fn, input:dim() == 3 and '[N x ' or '[',
              g.oT, g.O, shapeOf(gradOutput))
      end
      return gradOutput:contiguous():view(g.N * g.oT, g.O)
   end
   local function sequences(input, g)   -- (N, T, F)
      return input:dim() == 3 and input or input:contiguous():view(1, g.T, g.F)
   end
   -- (N·oT, kW·F): row (n, t) holds frames t·dW .. t·dW + kW - 1 of sample n
   local function rows(input, g)
      return sequences(input, g):unfold(2, g.kW, g.dW):transpose(3, 4):contiguous():view(g.N * g.oT, g.kW * g.F)
   end

   onDevice(TC, 'updateOutput', function(self, input)
      local fn = 'TemporalConvolution_updateOutput'
      local g = geometry(self, input, fn, self.inputFrameSize)
      if g.O ~= self.outputFrameSize then
         fail(2, '%s: weight has %d output features, expected %d', fn, g.O, self.outputFrameSize)
      end
      if input:dim() == 3 then self.output:resize(g.N, g.oT, g.O) else self.output:resize(g.oT, g.O) end
      if not self.output:isContiguous() then self.output = input.new():resize(self.output:size()) end
      local y = self.output:view(g.N * g.oT, g.O)
      y:copy(self.bias:view(1, g.O):expandAs(y)):addmm(rows(input, g), self.weight:t())
      return self.output
   end)
   onDevice(TC, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local fn = 'TemporalConvolution_updateGradInput'
      local g = geometry(self, input, fn)
      local gradWindows = (gradRows(g, fn, input, gradOutput) * self.weight):view(g.N, g.oT, g.kW, g.F)
      local gradInput = resultLike(self, 'gradInput', input):zero()
      local frames = sequences(gradInput, g):unfold(2, g.kW, g.dW)   -- (N, oT, F, kW)
      for j = 1, g.kW do frames:select(4, j):add(gradWindows:select(3, j)) end
      return self.gradInput
   end)
   onDevice(TC, 'accGradParameters', function(self, input, gradOutput, scale)
      local fn = 'TemporalConvolution_accGradParameters'
      local g = geometry(self, input, fn)
      scale = scale or 1
      local go = gradRows(g, fn, input, gradOutput)
      self.gradWeight:addmm(scale, go:t(), rows(input, g))
      self.gradBias:add(scale, go:sum(1):view(g.O))
   end)
end

-- ---------------------------------------------------------------- SpatialDepthWiseConvolution

-- nn.SpatialDepthWiseConvolution: output plane (i-1)·M + m is input plane i convolved with weight[m][i] plus
-- bias[m][i] (M = nOutputPlane, the depth multiplier): the columns of every input plane (C, kH·kW, B·L) against its
-- (M, kH·kW) filters, one batched GEMM over the planes (bmm); the weight (M, C, kH·kW) is transposed per call.
do
   local DW = nn.SpatialDepthWiseConvolution
   local function geometry(self, input, fn)
      if self.padding then self.padW, self.padH, self.padding = self.padding, self.padding, nil end
      local kW, kH, dW, dH, padW, padH = self.kW, self.kH, self.dW, self.dH, self.padW, self.padH
      if kW <= 0 or kH <= 0 then fail(3, '%s: kernel size should be greater than zero, but got kH: %d kW: %d', fn,
                                      kH, kW) end
      if dW <= 0 or dH <= 0 then fail(3, '%s: stride should be greater than zero, but got dH: %d dW: %d', fn,
                                      dH, dW) end
      if padW < 0 or padH < 0 then fail(3, '%s: padding should be non-negative, but got padH: %d padW: %d', fn,
                                        padH, padW) end
      local w, nIn = self.weight, nil
      if w:dim() == 4 and w:size(3) == kH and w:size(4) == kW then nIn = w:size(2)
      elseif w:dim() == 2 and w:size(2) % (kH * kW) == 0 then nIn = w:size(2) / (kH * kW)
      else fail(3, '%s: weight should be nOutputPlane x nInputPlane x kH x kW (kH: %d kW: %d) or nOutputPlane x '
                .. 'nInputPlane*kH*kW, but got: %s', fn, kH, kW, shapeOf(w)) end
      local dims = input:dim()
      if dims ~= 3 and dims ~= 4 then fail(3, '%s: 3D or 4D input tensor expected but got: %s', fn, shapeOf(input)) end
      local f = dims - 3
      if input:size(f + 1) ~= nIn then
         fail(3, '%s: input has %d planes, expected %d (input of shape %s)', fn, input:size(f + 1), nIn,
              shapeOf(input))
      end
      local g = {n = 2, k = {kH, kW}, d = {dH, dW}, pad = {padH, padW}, dil = {1, 1},
                 ins = {input:size(f + 2), input:size(f + 3)}, outs = {}, B = f == 1 and input:size(1) or 1,
                 C = nIn, M = w:size(1)}
      for i = 1, 2 do
         local span = g.ins[i] + 2 * g.pad[i] - g.k[i]
         g.outs[i] = span < 0 and 0 or math.floor(span / g.d[i]) + 1
      end
      if g.outs[1] < 1 or g.outs[2] < 1 then
         fail(3, '%s: Given input size: (%d x %d x %d). Calculated output size: (%d x %d x %d). Output size is too '
              .. 'small', fn, nIn, g.ins[1], g.ins[2], nIn * g.M, g.outs[1], g.outs[2])
      end
      return g
   end
   local function outputSize(g, input)
      if input:dim() == 4 then return size(g.B, g.C * g.M, g.outs[1], g.outs[2]) end
      return size(g.C * g.M, g.outs[1], g.outs[2])
   end
   local function checkGradOutput(g, fn, input, gradOutput)
      if not gradOutput:isSize(outputSize(g, input)) then
         fail(3, '%s: gradOutput should be of shape %s%d x %d x %d but got %s', fn, input:dim() == 4 and 'N x ' or '',
              g.C * g.M, g.outs[1], g.outs[2], shapeOf(gradOutput))
      end
   end
   local function checkBias(g, fn, what, b)
      if b and b:nElement() ~= g.M * g.C then
         fail(3, '%s: %s should be nOutputPlane x nInputPlane (%d x %d)', fn, what, g.M, g.C)
      end
   end
   local function perPlane(w, g)   -- the (M, C·kH·kW) weight as (C, M, kH·kW)
      return w:contiguous():view(g.M, g.C, -1):transpose(1, 2)
   end

   onDevice(DW, 'updateOutput', function(self, input)
      local fn = 'SpatialDepthWiseConvolution_updateOutput'
      local g = geometry(self, input, fn)
      checkBias(g, fn, 'bias', self.bias)
      local cols = columns(batched(input, 2), g):view(g.C, g.k[1] * g.k[2], -1)
      local y = cols.new():bmm(perPlane(self.weight, g), cols)   -- (C, M, B·L)
      self.output:resize(outputSize(g, input))
      samplesFirst(self.output, y, g.B, g.C * g.M)
      if self.bias then addPlaneBias(self.output, self.bias:t():contiguous(), g.B, g.C * g.M) end
      return self.output
   end)
   onDevice(DW, 'updateGradInput', function(self, input, gradOutput)
      if not self.gradInput then return end
      local fn = 'SpatialDepthWiseConvolution_updateGradInput'
      local g = geometry(self, input, fn)
      checkGradOutput(g, fn, input, gradOutput)
      local go = planesFirst(gradOutput, g.B, g.C * g.M):view(g.C, g.M, -1)
      local gradCols = go.new():bmm(perPlane(self.weight, g):transpose(2, 3), go)   -- (C, kH·kW, B·L)
      local gradInput = resultLike(self, 'gradInput', input):zero()
      addColumns(batched(gradInput, 2), gradCols:view(g.C * g.k[1] * g.k[2], -1), g)
      return self.gradInput
   end)
   onDevice(DW, 'accGradParameters', function(self, input, gradOutput, scale)
      local fn = 'SpatialDepthWiseConvolution_accGradParameters'
      local g = geometry(self, input, fn)
      checkGradOutput(g, fn, input, gradOutput)
      checkBias(g, fn, 'gradBias', self.gradBias)
      scale = scale or 1
      local go = planesFirst(gradOutput, g.B, g.C * g.M):view(g.C, g.M, -1)
      local cols = columns(batched(input, 2), g):view(g.C, g.k[1] * g.k[2], -1)
      local gw = go.new():bmm(go, cols:transpose(2, 3))   -- (C, M, kH·kW)
      perPlane(self.gradWeight, g):add(scale, gw)
      if self.gradBias then self.gradBias:add(scale, go:sum(3):view(g.C, g.M):t()) end
   end)
end

-- ---------------------------------------------------------------- VolumetricAveragePooling

-- nn.VolumetricAveragePooling (no padding; cudnn's subclass pads before calling it): the sum of the windows' taps
-- (one strided add per tap over the windows view) divided by the window's size; the backward adds gradOutput / K
-- to every tap of its window.
do
   local VAP = nn.VolumetricAveragePooling
   local NAMES = {'T', 'H', 'W'}
   local function geometry(self, input, fn)
      local dims = input:dim()
      if dims ~= 4 and dims ~= 5 then
         fail(3, '%s: 4D or 5D (batch mode) tensor expected for input, but got: %s', fn, shapeOf(input))
      end
      local f = dims - 4
      local g = {n = 3, k = {self.kT, self.kH, self.kW}, d = {self.dT, self.dH, self.dW}, pad = {0, 0, 0},
                 dil = {1, 1, 1}, ins = {}, outs = {}, B = f == 1 and input:size(1) or 1, C = input:size(f + 1)}
      for i = 1, 3 do
         if g.k[i] <= 0 or g.k[i] > 255 then
            fail(3, '%s: kernel size k%s should be in 1..255, got %d', fn, NAMES[i], g.k[i])
         end
         if g.d[i] <= 0 then fail(3, '%s: stride d%s should be greater than zero, got %d', fn, NAMES[i], g.d[i]) end
         g.ins[i] = input:size(f + 1 + i)
         local span = g.ins[i] - g.k[i]
         g.outs[i] = span < 0 and 0 or math.floor(span / g.d[i]) + 1
      end
      if g.outs[1] < 1 or g.outs[2] < 1 or g.outs[3] < 1 then
         fail(3, '%s: given input size %dx%dx%d per plane, calculated output size %dx%dx%d is too small', fn,
              g.ins[1], g.ins[2], g.ins[3], g.outs[1], g.outs[2], g.outs[3])
      end
      return g
   end
   local function outputSize(g, input)
      local s = input:size()
      for i = 1, 3 do s[input:dim() - 3 + i] = g.outs[i] end
      return s
   end

   onDevice(VAP, 'updateOutput', function(self, input)
      local g = geometry(self, input, 'VolumetricAveragePooling_updateOutput')
      self.output:resize(outputSize(g, input)):zero()
      if not self.output:isContiguous() then self.output = input.new():resize(outputSize(g, input)):zero() end
      local sum = batched(self.output, 3)
      eachTap(windows(batched(input, 3), g), g, function(cells) sum:add(cells) end)
      self.output:div(taps(g))
      return self.output
   end)
   onDevice(VAP, 'updateGradInput', function(self, input, gradOutput)
      local fn = 'VolumetricAveragePooling_updateGradInput'
      local g = geometry(self, input, fn)
      if not gradOutput:isSize(outputSize(g, input)) then
         fail(2, '%s: gradOutput %s does not match the expected size (%d x %d x %d per plane)', fn,
              shapeOf(gradOutput), g.outs[1], g.outs[2], g.outs[3])
      end
      local share = batched(gradOutput, 3):clone():div(taps(g))
      local gradInput = resultLike(self, 'gradInput', input):zero()
      eachTap(windows(batched(gradInput, 3), g), g, function(cells) cells:add(share) end)
      return self.gradInput
   end)
end

end
