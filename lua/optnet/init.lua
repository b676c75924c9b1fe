-- optnet: memory sharing for nn networks, with the API of Torch7's optnet
-- (fmassa/optimize-net): optnet.optimizeMemory(net, input, opts),
-- optnet.removeOptimization(net), optnet.countUsedMemory(net).
--
-- How it works here:
--  1. liveness.lua runs the network on the sample input (and, for mode='training',
--     backward on a copy of its output) with every module watched, and learns for
--     each storage when it is first written and when it is last needed.
--  2. inplace.lua switches on the `inplace` flag of the leaves where overwriting the
--     input changes nothing (then step 1 runs again, as the sharing has changed).
--  3. share.lua gives storages whose lives do not overlap one memory: the outputs in
--     inference, the gradInputs in training (outputs are all needed going backward).
--  4. Scratch buffers of one class (convolution columns, pooling indices in
--     inference, ...) become one storage per class; in inference the gradients of
--     the parameters are emptied and the backward pass refuses to run.
-- Results stay bit for bit what they were, for any input of the sample's shape and
-- for other batch sizes (a shared storage grows to its largest user). The passes run
-- here leave the parameters, their gradients, batch-norm running statistics and the
-- random generator as they were. removeOptimization undoes all of it; what to undo
-- is noted in fields of the modules (__optnet*), so it still works after the
-- network was saved and loaded.
require 'nn'

local optnet = require 'optnet.env'
require 'optnet.countUsedMemory'
local utils = require 'optnet.utils'
local liveness = require 'optnet.liveness'
local inplace = require 'optnet.inplace'
local share = require 'optnet.share'

local function option(value, default)
   if value == nil then return default end
   return value
end

-- Buffers that each call of these classes fills before reading: modules of one
-- class can hold them in one storage. Pooling indices and LRN's scale are read
-- again going backward, so they are shared in inference only.
local scratch = {
   ['nn.SpatialConvolution'] = {inference = {'finput', 'fgradInput'}, training = {'finput', 'fgradInput'}},
   ['nn.SpatialConvolutionMM'] = {inference = {'finput', 'fgradInput'}, training = {'finput', 'fgradInput'}},
   ['nn.SpatialFullConvolution'] = {inference = {'finput', 'fgradInput'}, training = {'finput', 'fgradInput'}},
   ['nn.SpatialCrossMapLRN'] = {inference = {'scale'}, training = {}},
   ['nn.Normalize'] = {inference = {'norm'}, training = {}},
   ['nn.SpatialMaxPooling'] = {inference = {'indices'}, training = {}},
}

local function shareScratch(net, mode)
   -- SpatialMaxUnpooling reads its pooling's indices going forward
   local unpooling = #net:findModules('nn.SpatialMaxUnpooling') > 0
   local keepers = {}
   for _, m in ipairs(utils.modules(net)) do
      local spec = scratch[torch.typename(m)]
      for _, field in ipairs(spec and spec[mode] or {}) do
         local t = m[field]
         if torch.isTensor(t) and not (unpooling and field == 'indices') then
            local key = torch.typename(m) .. '.' .. field .. '.' .. torch.typename(t)
            if keepers[key] then
               t:set(keepers[key])
            else
               if not t:storage() then  -- never used yet: an empty storage to share, 0 bytes
                  local Storage = torch[torch.typename(t):match('torch%.(%w+)Tensor') .. 'Storage']
                  t:set(Storage())
               end
               keepers[key] = t:storage()
            end
            m.__optnetBuffers = m.__optnetBuffers or {}
            table.insert(m.__optnetBuffers, field)
         end
      end
   end
end

-- Kept as plain functions without upvalues, so a network holding them still saves.
local function backwardDisabled()
   error('optnet: this network was optimized for inference (its outputs share memory), so its backward ' ..
         'pass is off; optnet.removeOptimization(net) turns it back on', 2)
end
local function getParametersDisabled()
   error('optnet: the parameters\' gradients were removed by optnet.optimizeMemory (removeGradParams); ' ..
         'optnet.removeOptimization(net) gives them back', 2)
end

-- Empties the gradients of the parameters (inference), noting each one's place in
-- its storage so that removeOptimization rebuilds the same layout (a flattened
-- getParameters() buffer stays one buffer).
local function removeGradParams(net)
   local groups, sizes = {}, {}
   for _, m in ipairs(utils.modules(net)) do
      if not m.modules then
         local _, grads = m:parameters()
         local notes = {}
         for i, g in ipairs(grads or {}) do
            local key = utils.storageKey(g)
            if key then
               if not groups[key] then
                  sizes[#sizes + 1] = {size = g:storage():size(), kind = torch.typename(g)}
                  groups[key] = #sizes
               end
               notes[i] = {group = groups[key], offset = g:storageOffset(),
                           size = g:size():totable(), stride = g:stride():totable()}
               g:set()
            end
         end
         if next(notes) then m.__optnetGradParams = notes end
      end
      if rawget(m, 'getParameters') == nil then
         m.getParameters, m.__optnetNoGetParameters = getParametersDisabled, true
      end
   end
   net.__optnetGradStorages = sizes
end

local function restoreGradParams(net)
   local sizes = net.__optnetGradStorages
   if not sizes then return end
   local made = {}
   for _, m in ipairs(utils.modules(net)) do
      local notes = m.__optnetGradParams
      if notes then
         local _, grads = m:parameters()
         for i, note in pairs(notes) do
            local group = sizes[note.group]
            if not made[note.group] then
               made[note.group] = torch.Tensor():type(group.kind):resize(group.size):zero():storage()
            end
            grads[i]:set(made[note.group], note.offset, torch.LongStorage(note.size), torch.LongStorage(note.stride))
         end
         m.__optnetGradParams = nil
      end
      if m.__optnetNoGetParameters then m.getParameters, m.__optnetNoGetParameters = nil, nil end
   end
   net.__optnetGradStorages = nil
end

-- What the watched passes would otherwise change: the random generator, the
-- parameters' gradients (backward accumulates) and running statistics.
local runningFields = {'running_mean', 'running_var', 'running_std'}
local function snapshot(net)
   local saved = {rng = torch.getRNGState(), tensors = {}}
   for _, m in ipairs(utils.modules(net)) do
      local list = {}
      if not m.modules then
         local _, grads = m:parameters()
         for _, g in ipairs(grads or {}) do list[#list + 1] = g end
      end
      for _, f in ipairs(runningFields) do
         if torch.isTensor(m[f]) then list[#list + 1] = m[f] end
      end
      for _, t in ipairs(list) do
         if t:nElement() > 0 then saved.tensors[#saved.tensors + 1] = {t, t:clone()} end
      end
   end
   return saved
end
local function restore(saved)
   for _, pair in ipairs(saved.tensors) do pair[1]:copy(pair[2]) end
   torch.setRNGState(saved.rng)
end

-- Storage keys of the modules' parameters and buffers: never shared.
local function stateKeys(net)
   local keys = {}
   for _, m in ipairs(utils.modules(net)) do
      for _, t in pairs(utils.stateTensors(m)) do
         local k = utils.storageKey(t)
         if k then keys[k] = true end
      end
   end
   return keys
end

function optnet.optimizeMemory(net, input, opts)
   opts = opts or {}
   if net.__memoryOptimized then
      print('optnet: the network is already optimized (mode ' .. net.__memoryOptimized .. '); nothing done')
      return
   end
   local mode = option(opts.mode, 'inference')
   if mode ~= 'inference' and mode ~= 'training' then
      error("optnet.optimizeMemory: opts.mode must be 'inference' or 'training', got " .. tostring(mode), 2)
   end
   local training = mode == 'training'

   local saved = snapshot(net)
   local ok, err = pcall(function()
      local live = liveness.run(net, input, training)
      if option(opts.inplace, true) then
         local flips = inplace.candidates(net, live, stateKeys(net), mode)
         for _, m in ipairs(flips) do
            m.__optnetInplace = m.inplace
            m.inplace = true
         end
         if #flips > 0 then live = liveness.run(net, input, training) end
      end
      if option(opts.reuseBuffers, true) then shareScratch(net, mode) end

      local state = stateKeys(net)
      share.apply(net, share.plan(live, function(key, s)
         if live.input[key] or live.gradOutput[key] or state[key] then return false end
         return s.phase == (training and 'backward' or 'forward')
      end))
   end)
   restore(saved)
   if not ok then
      for _, m in ipairs(utils.modules(net)) do  -- a failed pass leaves the flags as they were
         if m.__optnetInplace ~= nil then m.inplace, m.__optnetInplace = m.__optnetInplace, nil end
      end
      error(err, 0)
   end

   if not training then
      if option(opts.removeGradParams, true) then removeGradParams(net) end
      for _, m in ipairs(utils.modules(net)) do
         if rawget(m, 'updateGradInput') == nil and rawget(m, 'backward') == nil then
            m.updateGradInput, m.backward = backwardDisabled, backwardDisabled
            m.__optnetBlocked = true
         end
      end
   end
   net.__memoryOptimized = mode
end

function optnet.removeOptimization(net)
   if not net.__memoryOptimized then
      print('optnet: the network is not optimized; nothing to remove')
      return
   end
   for _, m in ipairs(utils.modules(net)) do
      for _, place in ipairs(m.__optnetShared or {}) do
         local t = utils.follow(m, place)
         if torch.isTensor(t) then t:set() end
      end
      m.__optnetShared = nil
      for _, field in ipairs(m.__optnetBuffers or {}) do
         if torch.isTensor(m[field]) then m[field]:set() end
      end
      m.__optnetBuffers = nil
      if m.__optnetInplace ~= nil then
         m.inplace = m.__optnetInplace
         m.__optnetInplace = nil
      end
      if m.__optnetBlocked then
         m.updateGradInput, m.backward, m.__optnetBlocked = nil, nil, nil
      end
   end
   restoreGradParams(net)
   net.__memoryOptimized = nil
end

return optnet
