-- nngraph.simple_print: pictures of a gModule graph that keep only the nodes doing
-- work (a module other than nn.Identity); edges through the dropped nodes are
-- joined up so the remaining nodes stay connected.
local M = {}

local function kept(node)
   local m = node.data and node.data.module
   return m ~= nil and torch.typename(m) ~= 'nn.Identity'
end

-- The kept nodes in graph order and the edges between them (by position in that list).
local function simplified(g)
   local successors = {}
   for _, node in ipairs(g.nodes) do successors[node] = {} end
   for _, e in ipairs(g.edges) do table.insert(successors[e.from], e.to) end
   local nodes, position = {}, {}
   for _, node in ipairs(g.nodes) do
      if kept(node) then
         nodes[#nodes + 1] = node
         position[node] = #nodes
      end
   end
   local edges = {}
   for i, node in ipairs(nodes) do
      -- kept nodes reachable through dropped ones only
      local seen, stack = {}, {}
      for _, s in ipairs(successors[node]) do stack[#stack + 1] = s end
      while #stack > 0 do
         local s = table.remove(stack)
         if not seen[s] then
            seen[s] = true
            if position[s] then
               edges[#edges + 1] = {i, position[s]}
            else
               for _, t in ipairs(successors[s]) do stack[#stack + 1] = t end
            end
         end
      end
   end
   return nodes, edges
end

function M.todot(g, title)
   local nodes, edges = simplified(g)
   local out = {'digraph G {\n'}
   if title then out[#out + 1] = 'labelloc="t";\nlabel="' .. title .. '";\n' end
   out[#out + 1] = 'node [shape = oval]; '
   for i, node in ipairs(nodes) do
      out[#out + 1] = string.format('\nn%d[label=%s];', i, graph._dotEscape('Node' .. node.id .. '\n' .. node:label()))
   end
   out[#out + 1] = '\n'
   for _, e in ipairs(edges) do out[#out + 1] = string.format('n%d -> n%d;\n', e[1], e[2]) end
   out[#out + 1] = '}'
   return table.concat(out)
end

-- Write fname.dot and, with Graphviz, fname.svg.
function M.dot(g, title, fname)
   if not fname then error('nngraph.simple_print.dot: pass a file name (writes name.dot and name.svg)', 2) end
   local f = assert(io.open(fname .. '.dot', 'w'))
   f:write(M.todot(g, title))
   f:close()
   if not graph.haveGraphviz() then
      error("nngraph.simple_print.dot: wrote " .. fname .. ".dot; Graphviz's `dot` command was not found " ..
            "to render " .. fname .. '.svg (install graphviz)', 2)
   end
   os.execute(string.format("dot -Tsvg -o '%s.svg' '%s.dot'", fname, fname))
end

return M
