-- nn.utils: type conversion that keeps shared storages shared, and helpers.
local nn = nn
nn.utils = nn.utils or {}
local utils = nn.utils

-- Convert a tensor, or every tensor inside a (nested) table or module, to `type`.
-- The cache maps source tensors and storages to their converted versions, so
-- tensors that shared a storage still share one afterwards (Torch7's rule).
-- The index tensor a max-pooling module keeps beside its input: indices itself when it is already a LongTensor (a
-- CudaLongTensor when the input is in GPU memory, on cutorch's GPU backend), else a new empty one of that type.
function utils.indicesFor(input, indices)
   local want = torch._onDevice(input) and 'torch.CudaLongTensor' or 'torch.LongTensor'
   if indices and torch.typename(indices) == want then return indices end
   return torch.getmetatable(want).new()
end

function utils.recursiveType(param, type, tensorCache)
   tensorCache = tensorCache or {}
   if torch.isTypeOf(param, 'nn.Module') or torch.isTypeOf(param, 'nn.Criterion') then
      param:type(type, tensorCache)
   elseif torch.isTensor(param) then
      if torch.typename(param) ~= type then
         local converted
         local key = torch.pointer(param)
         if tensorCache[key] then
            converted = tensorCache[key]
         else
            converted = torch.getmetatable(type).__constructor()
            local storage = param:storage()
            if storage then
               local skey = torch.pointer(storage)
               local newStorage = tensorCache[skey]
               if not newStorage then
                  newStorage = storage:type(type:gsub('Tensor$', 'Storage'))
                  tensorCache[skey] = newStorage
               end
               converted:set(newStorage, param:storageOffset(), param:size(), param:stride())
            end
            tensorCache[key] = converted
         end
         param = converted
      end
   elseif type ~= nil and _G.type(param) == 'table' then
      for k, v in pairs(param) do
         param[k] = utils.recursiveType(v, type, tensorCache)
      end
   end
   return param
end

-- Resize `t1` like `t2`, recursing into tables (creating tensors of t2's type as needed).
function utils.recursiveResizeAs(t1, t2)
   if type(t2) == 'table' then
      t1 = type(t1) == 'table' and t1 or {t1}
      for k in pairs(t2) do t1[k], t2[k] = utils.recursiveResizeAs(t1[k], t2[k]) end
      for k in pairs(t1) do if t2[k] == nil then t1[k] = nil end end
   elseif torch.isTensor(t2) then
      t1 = torch.isTensor(t1) and t1 or t2.new()
      t1:resizeAs(t2)
   else
      error('expecting nested tensors or tables, got ' .. torch.type(t1) .. ' and ' .. torch.type(t2))
   end
   return t1, t2
end

function utils.recursiveFill(t2, val)
   if type(t2) == 'table' then
      for k in pairs(t2) do t2[k] = utils.recursiveFill(t2[k], val) end
   elseif torch.isTensor(t2) then
      t2:fill(val)
   else
      error('expecting tensor or table thereof, got ' .. torch.type(t2))
   end
   return t2
end

function utils.recursiveAdd(t1, val, t2)
   if not t2 then t2, val = val, 1 end
   if type(t2) == 'table' then
      t1 = type(t1) == 'table' and t1 or {t1}
      for k in pairs(t2) do t1[k], t2[k] = utils.recursiveAdd(t1[k], val, t2[k]) end
   elseif torch.isTensor(t1) and torch.isTensor(t2) then
      t1:add(val, t2)
   else
      error('expecting nested tensors or tables, got ' .. torch.type(t1) .. ' and ' .. torch.type(t2))
   end
   return t1, t2
end

-- async (Torch7's cutorch copyAsync) is accepted; CPU copies are synchronous anyway.
function utils.recursiveCopy(t1, t2, async)
   if type(t2) == 'table' then
      t1 = type(t1) == 'table' and t1 or {t1}
      for k in pairs(t2) do t1[k], t2[k] = utils.recursiveCopy(t1[k], t2[k], async) end
   elseif torch.isTensor(t2) then
      t1 = torch.isTensor(t1) and t1 or t2.new()
      t1:resizeAs(t2)
      if async and t1.copyAsync then t1:copyAsync(t2) else t1:copy(t2) end
   else
      error('expecting nested tensors or tables, got ' .. torch.type(t1) .. ' and ' .. torch.type(t2))
   end
   return t1, t2
end

-- Empty the named fields, as Torch7's nn.utils.clear: tensors in place (keeps sharing), tables
-- replaced by empty ones, anything else removed.
function utils.clear(self, ...)
   local names = {...}
   if type(names[1]) == 'table' then names = names[1] end
   for _, name in ipairs(names) do
      local v = self[name]
      if torch.isTensor(v) then
         v:set()
      elseif torch.type(v) == 'table' then  -- a plain table (a storage or class object is removed)
         self[name] = {}
      else
         self[name] = nil
      end
   end
   return self
end

-- A view of t with a dimension of size 1 inserted at dim (default 1); into `view` when given.
function utils.addSingletonDimension(...)
   local view, t, dim
   if select('#', ...) < 3 then
      t, dim = select(1, ...)
   else
      view, t, dim = select(1, ...)
      assert(torch.isTensor(view), 'output tensor expected, got ' .. type(view))
   end
   assert(torch.isTensor(t), 'input tensor expected')
   dim = dim or 1
   assert(dim > 0 and dim <= t:dim() + 1, 'invalid dimension')
   local size, stride = t:size():totable(), t:stride():totable()
   table.insert(size, dim, 1)
   table.insert(stride, dim, dim <= t:dim() and t:stride(dim) * t:size(dim) or 1)
   view = view or t.new()
   view:set(t:storage(), t:storageOffset(), torch.LongStorage(size), torch.LongStorage(stride))
   return view
end

function utils.contiguousView(output, input, ...)
   output = output or input.new()
   if input:isContiguous() then
      output:view(input, ...)
   else
      output:resize(input:size()):copy(input)
      output:view(output, ...)
   end
   return output
end

table.unpack = table.unpack or unpack  -- Lua 5.2 spelling, which nn's code uses

return utils
