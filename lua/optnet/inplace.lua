-- Turning modules that offer an `inplace` flag in-place, only where no result changes.
--
-- An in-place module writes its output over its input (CAddTable: over its first
-- input). That is safe when, in the pass liveness.run watched:
--  * the overwritten storage was made by the network (not its input, a parameter or
--    a buffer) and nothing reads it after the module, the network's result included;
--  * training only: no other leaf ever reads it (they may want it again going
--    backward); the module that made it does not read its own output going backward
--    (a short list of classes known not to); the gradient the module receives (which
--    an in-place backward also overwrites) is read by nobody else and is not the
--    caller's gradOutput; and the module takes one tensor (not CAddTable) and does
--    not undo its change by arithmetic (MulConstant, AddConstant).
-- nn.Threshold accepts inplace only when its replacement value is not above the
-- threshold.
local utils = require 'optnet.utils'

local inplace = {}

-- Classes whose backward reads their input and gradOutput but never their output.
local keepsNoOutput = {
   'nn.Linear', 'nn.SpatialConvolution', 'nn.SpatialConvolutionMM', 'nn.SpatialFullConvolution',
   'nn.SpatialDilatedConvolution', 'nn.VolumetricConvolution', 'nn.VolumetricFullConvolution',
   'nn.TemporalConvolution', 'nn.BatchNormalization', 'nn.SpatialMaxPooling',
   'nn.SpatialAveragePooling', 'nn.VolumetricMaxPooling', 'nn.VolumetricAveragePooling',
   'nn.SpatialZeroPadding', 'nn.JoinTable', 'nn.Concat', 'nn.Add', 'nn.Mul', 'nn.CMul',
}

local function keepsNoOutputOf(m)
   if m.inplace then return false end
   for _, name in ipairs(keepsNoOutput) do
      if torch.isTypeOf(m, name) then return true end
   end
   return torch.typename(m) == 'nn.CAddTable'
end

-- Not in training: these undo their change to the input going backward by arithmetic
-- (not bit-exact), or (CAddTable) hand one gradient to several inputs, which a second
-- in-place module upstream could then overwrite under another's feet.
local notForTraining = {['nn.MulConstant'] = true, ['nn.AddConstant'] = true, ['nn.CAddTable'] = true}

local function onlyReader(set, m)
   local n = 0
   for r in pairs(set) do
      if r ~= m then return false end
      n = n + 1
   end
   return n == 1
end

-- The tensor an in-place forward of m would overwrite, given its input.
local function overwritten(m, x)
   if torch.typename(m) == 'nn.CAddTable' then x = type(x) == 'table' and x[1] or nil end
   return torch.isTensor(x) and x or nil
end

local function safe(m, live, state, training)
   if torch.isTypeOf(m, 'nn.Threshold') and (m.val or 0) > (m.threshold or 0) then return false end
   if training and notForTraining[torch.typename(m)] then return false end
   for _, call in ipairs(live.calls[m] or {}) do
      if call.method == 'updateOutput' then
         local x = overwritten(m, call.input)
         local key = x and utils.storageKey(x)
         local s = key and live.storages[key]
         if not s or s.def == nil or live.input[key] or state[key] or s.fwdUse ~= call.b then return false end
         if training then
            if not onlyReader(s.leafReaders, m) then return false end
            if not (s.producer and keepsNoOutputOf(s.producer)) then return false end
         end
      elseif training and call.method ~= 'accGradParameters' then
         local g = call.gradOutput
         local key = torch.isTensor(g) and utils.storageKey(g)
         local s = key and live.storages[key]
         if not s or live.gradOutput[key] or not onlyReader(s.gradReaders, m) then return false end
      end
   end
   return live.calls[m] ~= nil
end

-- The leaves of net whose inplace flag is off and can be switched on.
function inplace.candidates(net, live, state, mode)
   local list = {}
   for _, m in ipairs(utils.modules(net)) do
      if m.modules == nil and m.inplace == false then
         if safe(m, live, state, mode == 'training') then list[#list + 1] = m end
      end
   end
   return list
end

return inplace
