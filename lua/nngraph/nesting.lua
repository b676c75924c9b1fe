-- Operations on a tensor or a (nested) table of tensors, used to sum gradients.
local nesting = {}

function nesting.cloneNested(x)
   if torch.isTensor(x) then return x:clone() end
   local copy = {}
   for k, v in pairs(x) do copy[k] = nesting.cloneNested(v) end
   return copy
end

function nesting.fillNested(x, value)
   if torch.isTensor(x) then
      x:fill(value)
   else
      for _, v in pairs(x) do nesting.fillNested(v, value) end
   end
end

-- Give `target` the shape of `like`: tensors resized, missing entries cloned from
-- `like`, entries `like` lacks dropped.
function nesting.resizeNestedAs(target, like)
   if torch.isTensor(target) then
      target:resizeAs(like)
      return
   end
   for k, v in pairs(like) do
      if target[k] == nil then
         target[k] = nesting.cloneNested(v)
      else
         nesting.resizeNestedAs(target[k], v)
      end
   end
   for k in pairs(target) do
      if like[k] == nil then target[k] = nil end
   end
end

function nesting.copyNested(target, source)
   if torch.isTensor(target) then
      target:copy(source)
      return
   end
   for k, v in pairs(source) do nesting.copyNested(target[k], v) end
   for k in pairs(target) do
      if source[k] == nil then error('nngraph: key ' .. tostring(k) .. ' is in the target but not in the source') end
   end
end

function nesting.addNestedTo(target, source)
   if torch.isTensor(target) then
      target:add(source)
      return
   end
   for k, v in pairs(source) do
      if target[k] == nil then error('nngraph: cannot add gradients of different structure (key ' .. tostring(k) .. ')') end
      nesting.addNestedTo(target[k], v)
   end
end

return nesting
