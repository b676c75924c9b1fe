-- optnet.countUsedMemory(net): the bytes the network's tensors hold, as optnet
-- reports them: {outputs, gradInputs, buffers, params, total_size}. `params` holds
-- weight, bias, gradWeight and gradBias; `buffers` every other tensor field of a
-- module. Bytes are whole storages (size * element size), so a storage shared by
-- several tensors counts once in its category, and once in total_size even when it
-- sits in two categories (an in-place module's output is also its input's storage).
local optnet = require 'optnet.env'
local utils = require 'optnet.utils'

local paramFields = {weight = true, bias = true, gradWeight = true, gradBias = true}

function optnet.countUsedMemory(net)
   local seen = {outputs = {}, gradInputs = {}, buffers = {}, params = {}}
   local counted = {}
   local sizes = {outputs = 0, gradInputs = 0, buffers = 0, params = 0, total_size = 0}
   local function add(category, x)
      utils.eachTensor(x, function(t)
         local key = utils.storageKey(t)
         if key and not seen[category][key] then
            seen[category][key] = true
            local bytes = t:storage():size() * t:elementSize()
            sizes[category] = sizes[category] + bytes
            if not counted[key] then
               counted[key] = true
               sizes.total_size = sizes.total_size + bytes
            end
         end
      end)
   end
   for _, m in ipairs(utils.modules(net)) do
      add('outputs', m.output)
      add('gradInputs', m.gradInput)
      for name, t in pairs(utils.stateTensors(m)) do
         add(paramFields[name] and 'params' or 'buffers', t)
      end
   end
   return sizes
end

return optnet
