-- cudnn.RNN(inputSize, hiddenSize, numLayers, batchFirst=false, dropout=0, rememberStates=false):
-- cuDNN's multi-layer recurrent network, run on the CPU. The subclasses (RNNReLU, RNNTanh,
-- LSTM, GRU, BLSTM, BGRU) only set `mode` and the direction fields.
--
-- input: seqLength x batch x inputSize (batch x seqLength x inputSize when batchFirst), or a
-- variable-length batch {rows, batchSizes} from cudnn.RNN:packPaddedSequence;
-- output: seqLength x batch x hiddenSize*numDirections, the directions side by side (packed:
-- one row per input row).
-- hiddenInput / cellInput (numLayers*numDirections x batch x hiddenSize, optional) start the
-- recurrence; hiddenOutput / cellOutput hold the last states, gradHiddenOutput /
-- gradCellOutput (optional) their gradients, gradHiddenInput / gradCellInput receive those
-- of the initial states.
--
-- All parameters live in one flat `weight` in cuDNN's order (cudnnGetRNNLinLayerMatrixParams
-- and ...BiasParams): first every pseudo-layer's matrices, then every pseudo-layer's biases.
-- Pseudo-layer p = layer*numDirections + direction (forward before backward). Its matrices
-- are the input ones W_0..W_{G-1} (hiddenSize x layer input size, row-major) then the
-- recurrent ones R_0..R_{G-1} (hiddenSize x hiddenSize); its biases bW_0..bW_{G-1} then
-- bR_0..bR_{G-1} (hiddenSize each). Gates, in order: LSTM i, f, g, o; GRU r, z, n; RNN one.
-- weights() and biases() return those pieces as 1-D views, [pseudo-layer][linear id].
local RNN, parent = torch.class('cudnn.RNN', 'nn.Module')
local C = torch.C
local check = torch._check

-- linear layers (matrices, and as many biases) per pseudo-layer
RNN.linearLayers = {
   CUDNN_LSTM = 8,
   CUDNN_GRU = 6,
   CUDNN_RNN_RELU = 2,
   CUDNN_RNN_TANH = 2,
}

local modeCode = {
   CUDNN_RNN_RELU = C.LT_RNN_RELU,
   CUDNN_RNN_TANH = C.LT_RNN_TANH,
   CUDNN_LSTM = C.LT_RNN_LSTM,
   CUDNN_GRU = C.LT_RNN_GRU,
}

function RNN:__init(inputSize, hiddenSize, numLayers, batchFirst, dropout, rememberStates)
   parent.__init(self)
   self.datatype = 'CUDNN_DATA_FLOAT'
   self.inputSize = inputSize
   self.hiddenSize = hiddenSize
   self.seqLength = 1
   self.miniBatch = 1
   self.numLayers = numLayers
   self.bidirectional = 'CUDNN_UNIDIRECTIONAL'
   self.numDirections = 1
   self.inputMode = 'CUDNN_LINEAR_INPUT'
   self.mode = 'CUDNN_RNN_RELU'
   self.dropout = dropout or 0
   self.seed = 0x01234567
   self.batchFirst = batchFirst or false
   self.rememberStates = rememberStates or false
   self.sync = true
   self.inputPacked = false
   -- cudnn.torch made these CudaTensors whatever the default type: so do we once cutorch is loaded
   local Tensor = cutorch and torch.CudaTensor or torch.Tensor
   self.gradInput = Tensor()
   self.output = Tensor()
   self.weight = Tensor()
   self.gradWeight = Tensor()
   self.reserve = Tensor()
   self.hiddenOutput = Tensor()
   self.cellOutput = Tensor()
   self.gradHiddenInput = Tensor()
   self.gradCellInput = Tensor()
   self:training()
   self:reset()
end

function RNN:setSync(sync)
   self.sync = sync
end

-- what the fields describe, checked before every use (programs set mode/bidirectional by hand)
local function config(self)
   local name = torch.type(self)
   local code = modeCode[self.mode]
   if code == nil then
      error(string.format("%s: unknown mode '%s' (CUDNN_RNN_RELU, CUDNN_RNN_TANH, CUDNN_LSTM or CUDNN_GRU)",
                          name, tostring(self.mode)), 3)
   end
   local D = self.bidirectional == 'CUDNN_BIDIRECTIONAL' and 2 or 1
   if (self.numDirections or 1) ~= D then
      error(string.format('%s: numDirections is %s but bidirectional is %s (set both)', name,
                          tostring(self.numDirections), tostring(self.bidirectional)), 3)
   end
   if self.inputMode ~= nil and self.inputMode ~= 'CUDNN_LINEAR_INPUT' then
      error(name .. ": only inputMode CUDNN_LINEAR_INPUT is supported by luatorch", 3)
   end
   return {mode = code, G = self.linearLayers[self.mode] / 2, H = self.hiddenSize, L = self.numLayers, D = D,
           lstm = code == C.LT_RNN_LSTM, gru = code == C.LT_RNN_GRU}
end

local function layerInputSize(self, cfg, layer)
   return layer == 1 and self.inputSize or cfg.H * cfg.D
end

-- the number of elements of the flat weight (cudnnGetRNNParamsSize / element size)
local function weightSize(self, cfg)
   local n = 0
   for l = 1, cfg.L do
      n = n + cfg.D * cfg.G * cfg.H * (layerInputSize(self, cfg, l) + cfg.H + 2)
   end
   return n
end

-- Views of a flat parameter tensor (weight or gradWeight), one entry per pseudo-layer:
-- W (G*H x in), R (G*H x H), bW, bR (G*H); the gates' matrices are adjacent, so each
-- side is one matrix.
local function pieces(self, cfg, flat)
   local G, H = cfg.G, cfg.H
   local out, off = {}, 0
   for l = 1, cfg.L do
      local inSize = layerInputSize(self, cfg, l)
      for _ = 1, cfg.D do
         local p = {inSize = inSize}
         p.W = flat:narrow(1, off + 1, G * H * inSize):view(G * H, inSize)
         off = off + G * H * inSize
         p.R = flat:narrow(1, off + 1, G * H * H):view(G * H, H)
         off = off + G * H * H
         out[#out + 1] = p
      end
   end
   for _, p in ipairs(out) do
      p.bW = flat:narrow(1, off + 1, G * H)
      p.bR = flat:narrow(1, off + G * H + 1, G * H)
      off = off + 2 * G * H
   end
   return out
end

local function checkWeight(self, cfg)
   local want = weightSize(self, cfg)
   if self.weight:dim() ~= 1 or self.weight:nElement() ~= want or not self.weight:isContiguous() then
      error(string.format('%s: weight should be a contiguous vector of %d elements for inputSize %d, ' ..
                          'hiddenSize %d, numLayers %d, %s (call :reset() after changing those)',
                          torch.type(self), want, self.inputSize, self.hiddenSize, self.numLayers, self.mode), 3)
   end
   if self.gradWeight:nElement() ~= want then self.gradWeight:resize(want):zero() end
end

-- U(-stdv, stdv) over the whole flat weight, stdv = 1/sqrt(hiddenSize) by default, as cudnn.torch
function RNN:reset(stdv)
   stdv = stdv or 1.0 / math.sqrt(self.hiddenSize)
   local cfg = config(self)
   self.weight:resize(weightSize(self, cfg))
   self.weight:uniform(-stdv, stdv)
   self.gradWeight:resizeAs(self.weight):zero()
   self._rnn = nil
   return self
end

-- cudnn.torch's descriptor setters, for programs that call them: nothing to describe on the CPU
function RNN:resetWeightDescriptor() end
function RNN:resetDropoutDescriptor() end
function RNN:resetRNNDescriptor() end
function RNN:resetInputDescriptor() end
function RNN:resetOutputDescriptor() end
function RNN:resetHiddenDescriptors() end
function RNN:resetCellDescriptors() end

-- [pseudo-layer][linear id] 1-D views of the matrices (weights) or biases, as cudnn.torch's
local function linearParams(self, which)
   local cfg = config(self)
   checkWeight(self, cfg)
   local res = {}
   for i, p in ipairs(pieces(self, cfg, self.weight)) do
      local t = {}
      for side, key in ipairs(which == 'matrix' and {'W', 'R'} or {'bW', 'bR'}) do
         local m = p[key]
         local per = m:nElement() / cfg.G
         local flat = which == 'matrix' and m:view(-1) or m
         for g = 1, cfg.G do t[(side - 1) * cfg.G + g] = flat:narrow(1, (g - 1) * per + 1, per) end
      end
      res[i] = t
   end
   return res
end

function RNN:weights() return linearParams(self, 'matrix') end
function RNN:biases() return linearParams(self, 'bias') end

function RNN:resizeHidden(tensor)
   return tensor:resize(self.numLayers * self.numDirections, self.miniBatch, self.hiddenSize)
end

function RNN:resetStates()
   self.hiddenInput = nil
   self.cellInput = nil
   self.hiddenOutput:zero()
   self.cellOutput:zero()
   self.gradHiddenOutput = nil
   self.gradCellOutput = nil
end

-- Packing of variable-length sequences, as cudnn.torch's helpers (called on the class:
-- cudnn.RNN:packPaddedSequence(input, lengths [, batchFirst])). input is seqLength x batch x *
-- (batch first when batchFirst), lengths the batch's sequence lengths in decreasing order.
-- Returns {rows, batchSizes}: step t's rows of the sequences still running (batchSizes[t] of
-- them), steps one after the other. The modules themselves take padded input only.
function RNN:packPaddedSequence(input, lengths, batchFirst)
   if batchFirst then input = input:transpose(1, 2) end
   local B = input:size(2)
   if #lengths ~= B then
      error(string.format('packPaddedSequence: %d lengths for a batch of %d sequences', #lengths, B), 2)
   end
   for j = 2, B do
      if lengths[j] > lengths[j - 1] then
         error('packPaddedSequence: lengths must be in decreasing order', 2)
      end
   end
   if B == 0 or lengths[1] > input:size(1) then
      error('packPaddedSequence: a length exceeds the sequence dimension', 2)
   end
   local rows, batchSizes = {}, {}
   local running = B
   for t = 1, lengths[1] do
      while lengths[running] < t do running = running - 1 end
      batchSizes[t] = running
      rows[t] = input[t]:narrow(1, 1, running)
   end
   return {torch.cat(rows, 1), batchSizes}
end

-- The inverse: {rows, batchSizes} -> the zero-padded seqLength x batch x * tensor (batch first
-- when batchFirst) and the sequence lengths.
function RNN:padPackedSequence(seq, batchFirst)
   local data, batchSizes = seq[1], seq[2]
   local T, B = #batchSizes, batchSizes[1]
   local size = data:size():totable()
   table.remove(size, 1)
   local out = data.new():resize(T, B, table.unpack(size)):zero()
   local offset = 1
   for t = 1, T do
      out[t]:narrow(1, 1, batchSizes[t]):copy(data:narrow(1, offset, batchSizes[t]))
      offset = offset + batchSizes[t]
   end
   local lengths = {}
   for j = 1, B do
      local n = 0
      for t = 1, T do if batchSizes[t] >= j then n = n + 1 end end
      lengths[j] = n
   end
   if batchFirst then out = out:transpose(1, 2) end
   return out, lengths
end

-- A numLayers*numDirections x batch x hiddenSize state the user supplied (or nil).
local function checkState(self, cfg, t, what)
   if t == nil then return nil end
   if not torch.isTensor(t) or t:dim() ~= 3 or t:size(1) ~= cfg.L * cfg.D or t:size(2) ~= self.miniBatch or
      t:size(3) ~= cfg.H then
      error(string.format('%s: %s should be a %d x %d x %d tensor (numLayers*numDirections x batch x hiddenSize)',
                          torch.type(self), what, cfg.L * cfg.D, self.miniBatch, cfg.H), 3)
   end
   return t
end

-- a named scratch tensor of the weight's type, kept between calls
local function buffer(st, key, ...)
   local b = st[key]
   if not b then
      b = st.new()
      st[key] = b
   end
   return b:resize(...)
end

-- r = beta r + alpha a b: the host kernel, or cutorch's (cuBLAS) for tensors in GPU memory
local function mm(r, beta, alpha, a, b)
   if torch._onDevice(r) then
      r:addmm(beta, r, alpha, a, b)
      return
   end
   check(C.lt_addmm(r._c, beta, beta ~= 0 and r._c or nil, alpha, a._c, b._c), 3)
end

local function cptr(t) return t and t._c or nil end

-- One time step's elementwise part (native/include/lt_nn_rnn.h has the equations and what each argument holds
-- on entry and return): the host kernel on host tensors; on tensors in GPU memory the same equations composed of
-- cutorch's device methods on the gates' column blocks (i, f, g, o / r, z, n), which run there.
local function blocks(t, H, G)   -- the G column blocks of a B x G*H matrix
   local out = {}
   for k = 1, G do out[k] = t:narrow(2, (k - 1) * H + 1, H) end
   return out
end
local function bias(b, like) return b:view(1, b:size(1)):expandAs(like) end
local function sigmoidSlope(y) return y.new():mul(y, -1):add(1):cmul(y) end   -- y (1 - y)
local function tanhSlope(y) return y.new():cmul(y, y):mul(-1):add(1) end     -- 1 - y^2

local function cellForward(mode, gates, rec, bW, bR, hprev, cprev, h, c)
   if not torch._onDevice(gates) then
      return check(C.lt_nn_rnn_cell_forward(mode, gates._c, rec._c, bW._c, bR._c, cptr(hprev), cptr(cprev), h._c,
                                            cptr(c)), 3)
   end
   rec:add(bias(bR, rec))
   if mode == C.LT_RNN_LSTM then
      local H = h:size(2)
      gates:add(bias(bW, gates)):add(rec)
      local i, f, g, o = unpack(blocks(gates, H, 4))
      gates:narrow(2, 1, 2 * H):sigmoid()
      g:tanh()
      o:sigmoid()
      c:cmul(i, g)
      if cprev then c:addcmul(f, cprev) end
      h:tanh(c):cmul(o)
   elseif mode == C.LT_RNN_GRU then
      local H = h:size(2)
      local r, z, n = unpack(blocks(gates, H, 3))
      local rs = gates:narrow(2, 1, 2 * H)
      rs:add(bias(bW:narrow(1, 1, 2 * H), rs)):add(rec:narrow(2, 1, 2 * H)):sigmoid()
      n:add(bias(bW:narrow(1, 2 * H + 1, H), n)):addcmul(r, blocks(rec, H, 3)[3]):tanh()
      if hprev then h:add(hprev, -1, n):cmul(z):add(n) else h:cmul(z, n):mul(-1):add(n) end   -- n + z (h' - n)
   else
      gates:add(bias(bW, gates)):add(rec)
      if mode == C.LT_RNN_RELU then gates:clamp(0, math.huge) else gates:tanh() end
      h:copy(gates)
   end
end

local function cellBackward(mode, gates, rec, hprev, cprev, c, dh, dc, dgates, drec, dhprev)
   if not torch._onDevice(gates) then
      return check(C.lt_nn_rnn_cell_backward(mode, gates._c, cptr(rec), cptr(hprev), cptr(cprev), cptr(c), dh._c,
                                             cptr(dc), dgates._c, cptr(drec), cptr(dhprev)), 3)
   end
   local H = dh:size(2)
   if mode == C.LT_RNN_LSTM then
      local i, f, g, o = unpack(blocks(gates, H, 4))
      local di, df, dg, do_ = unpack(blocks(dgates, H, 4))
      local t = dh.new():tanh(c)
      local dcv = tanhSlope(t):cmul(o):cmul(dh):add(dc)   -- the whole gradient of c
      di:cmul(dcv, g):cmul(sigmoidSlope(i))
      if cprev then df:cmul(dcv, cprev):cmul(sigmoidSlope(f)) else df:zero() end
      dg:cmul(tanhSlope(g), i):cmul(dcv)
      do_:cmul(dh, t):cmul(sigmoidSlope(o))
      dc:cmul(dcv, f)
   elseif mode == C.LT_RNN_GRU then
      local r, z, n = unpack(blocks(gates, H, 3))
      local dr, dz, dn = unpack(blocks(dgates, H, 3))
      local rr, rz, rn = unpack(blocks(drec, H, 3))
      dn:mul(z, -1):add(1):cmul(dh):cmul(tanhSlope(n))                  -- dh (1 - z) (1 - n^2)
      dr:cmul(dn, blocks(rec, H, 3)[3]):cmul(sigmoidSlope(r))
      if hprev then dz:add(hprev, -1, n) else dz:mul(n, -1) end
      dz:cmul(dh):cmul(sigmoidSlope(z))                                   -- dh (h' - n) z (1 - z)
      rr:copy(dr)
      rz:copy(dz)
      rn:cmul(dn, r)
      dhprev:cmul(dh, z)
   elseif mode == C.LT_RNN_RELU then
      dgates:sign(gates):cmul(dh)   -- the gates hold h >= 0: 1 where it is positive
   else
      dgates:cmul(tanhSlope(gates), dh)
   end
end

-- Rows first..first+n-1 of t (a view), or nil for none / no t.
local function rows(t, first, n)
   if t == nil or n <= 0 then return nil end
   return t:narrow(1, first, n)
end

-- copy src into dst, or zero dst when there is no src
local function copyOrZero(dst, src)
   if dst == nil then return end
   if src then dst:copy(src) else dst:zero() end
end

-- The input as rows of steps: x2 (N x inputSize), the batch size of each step and the first row
-- of each. A padded seqLength x batch x inputSize tensor is the case where every step has the
-- whole batch; a packed {rows, batchSizes} (packPaddedSequence) has shrinking steps.
local function steps(self, input, name)
   if type(input) == 'table' then
      local data, sizes = input[1], input[2]
      if not (torch.isTensor(data) and data:dim() == 2 and type(sizes) == 'table' and #sizes > 0) then
         error(name .. ': packed input must be {rows (sum of lengths x inputSize), batchSizes}', 3)
      end
      local bs, first, N = {}, {}, 0
      for t = 1, #sizes do
         bs[t], first[t] = sizes[t], N + 1
         if bs[t] < 1 or (t > 1 and bs[t] > bs[t - 1]) then
            error(name .. ': packed batchSizes must be positive and non-increasing', 3)
         end
         N = N + bs[t]
      end
      if data:size(1) ~= N then
         error(string.format('%s: packed input has %d rows, its batchSizes add up to %d', name, data:size(1), N), 3)
      end
      return data, bs, first, true
   end
   if not torch.isTensor(input) or input:dim() ~= 3 then
      error(name .. ': input must have 3 dimensions: seqLength, miniBatch, inputSize' ..
            (self.batchFirst and ' (batchFirst: miniBatch, seqLength, inputSize)' or ''), 3)
   end
   local x = self.batchFirst and input:transpose(1, 2) or input
   local T, B = x:size(1), x:size(2)
   local bs, first = {}, {}
   for t = 1, T do bs[t], first[t] = B, (t - 1) * B + 1 end
   return x:contiguous():view(T * B, x:size(3)), bs, first, false
end

-- what identifies an input's shape: packed or not, rows, features, batch
local function signature(self, input)
   if type(input) == 'table' then
      local data, sizes = input[1], input[2]
      if torch.isTensor(data) and data:dim() == 2 and type(sizes) == 'table' then
         return {true, data:size(1), data:size(2), sizes[1]}
      end
   elseif torch.isTensor(input) and input:dim() == 3 then
      local T, B = input:size(1), input:size(2)
      if self.batchFirst then T, B = B, T end
      return {false, T * B, input:size(3), B}
   end
   return {}
end

-- Forward: every step's rows go through the cell. Each step's previous states are gathered
-- into hprev / cprev (N x H, the rows of that step) so that the backward and the gradient of R
-- read them in one piece: in forward order the rows of the step before; in reverse order those
-- of the step after, and the initial state for sequences that end at this step.
function RNN:updateOutput(input)
   local name = torch.type(self)
   local x2, bs, first, packed = steps(self, input, name)
   local cfg = config(self)
   checkWeight(self, cfg)
   if x2:size(2) ~= self.inputSize then
      error(string.format('%s: input has %d features, expected inputSize %d', name, x2:size(2), self.inputSize), 2)
   end
   local T, B, N, G, H, D, L = #bs, bs[1], x2:size(1), cfg.G, cfg.H, cfg.D, cfg.L
   self.seqLength, self.miniBatch, self.inputPacked = T, B, packed

   if self.rememberStates then
      local h = self.hiddenOutput
      if h:dim() == 3 and h:size(1) == L * D and h:size(2) == B and h:size(3) == H then
         self.hiddenInput = h:clone()
         if self.cellOutput and self.cellOutput:isSameSizeAs(h) then self.cellInput = self.cellOutput:clone() end
      else
         self.hiddenInput, self.cellInput = nil, nil
      end
   end
   local hx = checkState(self, cfg, self.hiddenInput, 'hiddenInput')
   local cx = cfg.lstm and checkState(self, cfg, self.cellInput, 'cellInput') or nil
   local hy = self:resizeHidden(self.hiddenOutput):zero()
   local cy = self:resizeHidden(self.cellOutput):zero()

   -- everything the backward needs, per call; reused between calls
   local st = self._rnn
   if not st or st.type ~= self.weight:type() then
      st = {new = function() return self.weight.new() end, type = self.weight:type()}
      self._rnn = st
   end
   st.bs, st.first, st.N, st.packed, st.masks = bs, first, N, packed, {}
   st.hx, st.cx, st.inputs, st.outputs = hx, cx, {}, {}
   st.inputSig = signature(self, input)

   local P = pieces(self, cfg, self.weight)
   local layerIn = x2
   local dropping = self.train and self.dropout > 0
   for l = 1, L do
      local inSize = P[(l - 1) * D + 1].inSize
      local Y = buffer(st, 'y' .. l, N, D * H)
      st.inputs[l], st.outputs[l] = layerIn, Y
      for d = 1, D do
         local p = (l - 1) * D + d
         local w = P[p]
         local gates = buffer(st, 'gates' .. p, N, G * H)
         mm(gates, 0, 1, layerIn, w.W:t())
         local rec = buffer(st, 'rec' .. p, N, G * H)
         local hprev = buffer(st, 'hprev' .. p, N, H)
         local cprev = cfg.lstm and buffer(st, 'cprev' .. p, N, H) or nil
         local cs = cfg.lstm and buffer(st, 'c' .. p, N, H) or nil
         local hs = Y:narrow(2, (d - 1) * H + 1, H)
         local h0, c0 = hx and hx[p], cx and cx[p]
         local Rt = w.R:t()
         for step = 1, T do
            local t = d == 1 and step or T - step + 1
            local n, f = bs[t], first[t]
            local hp, cp = rows(hprev, f, n), rows(cprev, f, n)
            -- how many of this step's rows continue a sequence from the step before in this order
            local carried = d == 1 and (t > 1 and n or 0) or (t < T and bs[t + 1] or 0)
            local src = d == 1 and t - 1 or t + 1
            if carried > 0 then
               hp:narrow(1, 1, carried):copy(hs:narrow(1, first[src], carried))
               if cp then cp:narrow(1, 1, carried):copy(cs:narrow(1, first[src], carried)) end
            end
            if carried < n then
               copyOrZero(hp:narrow(1, carried + 1, n - carried), rows(h0, carried + 1, n - carried))
               copyOrZero(rows(cp, carried + 1, n - carried), rows(c0, carried + 1, n - carried))
            end
            local r = rec:narrow(1, f, n)
            mm(r, 0, 1, hp, Rt)
            cellForward(cfg.mode, gates:narrow(1, f, n), r, w.bW, w.bR, hp, cp, hs:narrow(1, f, n),
                        cs and cs:narrow(1, f, n))
            -- sequences whose last step in this order is t leave their final state here
            local ending = d == 1 and n - (t < T and bs[t + 1] or 0) or (t == 1 and n or 0)
            if ending > 0 then
               local from = n - ending + 1
               hy[p]:narrow(1, from, ending):copy(hs:narrow(1, f + from - 1, ending))
               if cs then cy[p]:narrow(1, from, ending):copy(cs:narrow(1, f + from - 1, ending)) end
            end
         end
      end
      if l < L and dropping then
         -- cuDNN drops units of each layer's output on the way into the next layer
         local mask = buffer(st, 'mask' .. l, N, D * H):bernoulli(1 - self.dropout):div(1 - self.dropout)
         st.masks[l] = mask
         layerIn = buffer(st, 'dropped' .. l, N, D * H):cmul(Y, mask)
      else
         layerIn = Y
      end
   end
   st.gradReady = false
   if packed then
      self.output = layerIn
   else
      local y = layerIn:view(T, B, D * H)
      self.output = self.batchFirst and y:transpose(1, 2) or y
   end
   return self.output
end

-- the forward state for this input, or an error naming what to do
local function forwardState(self, input, what)
   local st = self._rnn
   local sig, want = signature(self, input), st and st.inputSig or {}
   if not (st and sig[1] == want[1] and sig[2] == want[2] and sig[3] == want[3] and sig[4] == want[4]) then
      error(string.format('%s: %s needs a forward on the same input first', torch.type(self), what), 3)
   end
   if not self.train then
      error(string.format('%s: %s can only be called when training (call :training())', torch.type(self), what), 3)
   end
   return st
end

-- The backward runs each direction's steps in the opposite order; dnext holds, per row, the
-- gradient reaching the state the next step (in backward order) produced.
function RNN:updateGradInput(input, gradOutput)
   local name = torch.type(self)
   local st = forwardState(self, input, 'updateGradInput')
   local cfg = config(self)
   checkWeight(self, cfg)
   local bs, first, N, T = st.bs, st.first, st.N, #st.bs
   local B, G, H, D, L = bs[1], cfg.G, cfg.H, cfg.D, cfg.L
   local dy
   if st.packed then
      dy = gradOutput
   else
      dy = self.batchFirst and gradOutput:transpose(1, 2) or gradOutput
      if dy:dim() == 3 and dy:size(1) == T and dy:size(2) == B then dy = dy:contiguous():view(T * B, -1) end
   end
   if not torch.isTensor(dy) or dy:dim() ~= 2 or dy:size(1) ~= N or dy:size(2) ~= D * H then
      error(string.format('%s: gradOutput should be %s like output', name,
                          table.concat(self.output:size():totable(), 'x')), 2)
   end
   local dhy = checkState(self, cfg, self.gradHiddenOutput, 'gradHiddenOutput')
   local dcy = cfg.lstm and checkState(self, cfg, self.gradCellOutput, 'gradCellOutput') or nil
   local dhx = self:resizeHidden(self.gradHiddenInput):zero()
   local dcx = self:resizeHidden(self.gradCellInput):zero()

   local P = pieces(self, cfg, self.weight)
   local dh = buffer(st, 'dh', B, H)
   local dnext = buffer(st, 'dnext', B, H)
   local dhp = buffer(st, 'dhp', B, H)
   local dc = cfg.lstm and buffer(st, 'dc', B, H) or nil
   local dY = dy
   for l = L, 1, -1 do
      local inSize = P[(l - 1) * D + 1].inSize
      local dX = buffer(st, 'dx' .. l, N, inSize)
      for d = 1, D do
         local p = (l - 1) * D + d
         local w = P[p]
         local gates, rec, cs = st['gates' .. p], st['rec' .. p], st['c' .. p]
         local hprev, cprev = st['hprev' .. p], st['cprev' .. p]
         local dgates = buffer(st, 'dgates' .. p, N, G * H)
         local drec = cfg.gru and buffer(st, 'drec' .. p, N, G * H) or dgates
         local dys = dY:narrow(2, (d - 1) * H + 1, H)
         if d == 2 then
            copyOrZero(dnext, dhy and dhy[p])
            copyOrZero(dc, dcy and dcy[p])
         end
         for step = T, 1, -1 do
            local t = d == 1 and step or T - step + 1
            local n, f = bs[t], first[t]
            if d == 1 then
               -- sequences that end at t start their backward here, from the final state's gradient
               local cont = t < T and bs[t + 1] or 0
               if cont < n then
                  copyOrZero(dnext:narrow(1, cont + 1, n - cont), rows(dhy and dhy[p], cont + 1, n - cont))
                  copyOrZero(rows(dc, cont + 1, n - cont), rows(dcy and dcy[p], cont + 1, n - cont))
               end
            end
            local dhn = dh:narrow(1, 1, n)
            dhn:add(dys:narrow(1, f, n), dnext:narrow(1, 1, n))
            local dg, dr, dhpn = dgates:narrow(1, f, n), drec:narrow(1, f, n), dhp:narrow(1, 1, n)
            cellBackward(cfg.mode, gates:narrow(1, f, n), rec:narrow(1, f, n), hprev:narrow(1, f, n),
                         cprev and cprev:narrow(1, f, n), cs and cs:narrow(1, f, n), dhn, rows(dc, 1, n), dg,
                         cfg.gru and dr or nil, cfg.gru and dhpn or nil)
            -- the previous states' gradient: through R (GRU adds it to dh*z)
            mm(dhpn, cfg.gru and 1 or 0, 1, dr, w.R)
            -- rows that came from the initial state hand their gradient to gradHiddenInput
            local carried = d == 1 and (t > 1 and n or 0) or (t < T and bs[t + 1] or 0)
            if carried > 0 then dnext:narrow(1, 1, carried):copy(dhpn:narrow(1, 1, carried)) end
            if carried < n then
               dhx[p]:narrow(1, carried + 1, n - carried):copy(dhpn:narrow(1, carried + 1, n - carried))
               if dc then dcx[p]:narrow(1, carried + 1, n - carried):copy(dc:narrow(1, carried + 1, n - carried)) end
            end
         end
         mm(dX, d == 1 and 0 or 1, 1, dgates, w.W)
      end
      if st.masks[l - 1] then dX:cmul(st.masks[l - 1]) end
      dY = dX
   end
   st.gradReady = true
   if st.packed then
      self.gradInput = dY
   else
      local g = dY:view(T, B, -1)
      self.gradInput = self.batchFirst and g:transpose(1, 2) or g
   end
   return self.gradInput
end

function RNN:accGradParameters(input, gradOutput, scale)
   scale = scale or 1
   local st = forwardState(self, input, 'accGradParameters')
   if not st.gradReady then self:updateGradInput(input, gradOutput) end
   if scale == 0 then return end
   local cfg = config(self)
   checkWeight(self, cfg)
   local N, G, H, D, L = st.N, cfg.G, cfg.H, cfg.D, cfg.L
   local dP = pieces(self, cfg, self.gradWeight)
   local ones = st.ones
   if not ones or ones:nElement() ~= N then
      ones = st.new():resize(N):fill(1)
      st.ones = ones
   end
   for l = 1, L do
      for d = 1, D do
         local p = (l - 1) * D + d
         local g = dP[p]
         local dgates = st['dgates' .. p]
         local drec = cfg.gru and st['drec' .. p] or dgates
         mm(g.W, 1, scale, dgates:t(), st.inputs[l])
         mm(g.R, 1, scale, drec:t(), st['hprev' .. p])
         g.bW:addmv(1, g.bW, scale, dgates:t(), ones)
         g.bR:addmv(1, g.bR, scale, drec:t(), ones)
      end
   end
end

-- cudnn.torch's FFI descriptors (never in files it wrote; dropped if a program set them) and our scratch
local descriptorFields = {'rnnDesc', 'dropoutDesc', 'wDesc', 'xDescs', 'yDescs', 'hxDesc', 'hyDesc', 'cxDesc', 'cyDesc'}
local scratchFields = {'_rnn', '_input', '_gradOutput'}

function RNN:clearDesc()
   for _, k in ipairs(descriptorFields) do self[k] = nil end
   self._rnn = nil
end

-- the saved fields are cudnn.torch's (reserve stays: its forward resizes it)
function RNN:write(f)
   local var = {}
   for k, v in pairs(self) do var[k] = v end
   for _, k in ipairs(descriptorFields) do var[k] = nil end
   for _, k in ipairs(scratchFields) do var[k] = nil end
   f:writeObject(var)
end

function RNN:type(type, tensorCache)
   self._rnn = nil
   return parent.type(self, type, tensorCache)
end

function RNN:clearState()
   self._rnn = nil
   if torch.isTensor(self.reserve) then self.reserve:set() end
   self._input, self._gradOutput, self.dropoutStates = nil, nil, nil
   return parent.clearState(self)
end
