-- nngraph.nest(structure): one node whose output has the nesting of `structure`,
-- a node or a (nested) list of nodes: nngraph.nest({a, {b}, c}) outputs
-- {a_out, {b_out}, c_out}.
local function nestNode(x)
   if nngraph._isNode(x) then return x end
   if type(x) ~= 'table' or torch.typename(x) or #x == 0 then
      error('nngraph.nest: expected a node or a non-empty list of nodes, got ' .. tostring(x), 3)
   end
   if #x == 1 then return nngraph.JustTable()(nestNode(x[1])) end
   local parts = {}
   for i, child in ipairs(x) do parts[i] = nestNode(child) end
   return nn.Identity()(parts)
end

function nngraph.nest(...)
   local n = select('#', ...)
   if n ~= 1 or (...) == nil then
      error('nngraph.nest: pass one node or one (nested) list of nodes, e.g. nngraph.nest({a, b})', 2)
   end
   return nestNode((...))
end
