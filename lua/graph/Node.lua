-- graph.Node: a vertex holding user data and the list of nodes it points to.
-- The fields (data, id, children, visited, marked) are those Torch7's graph package
-- saved, so graphs in .t7 files load into this class. `children` is both a list
-- (in the order the edges were added) and a set (child -> position).
local Node = torch.class('graph.Node')

function Node:__init(data)
   self.data = data
   self.id = 0
   self.children = {}
   self.visited = false
   self.marked = false
end

-- Add one child, or each node of a plain list; a child already present is not added again.
function Node:add(child)
   if type(child) == 'table' and not torch.typename(child) then
      for _, each in ipairs(child) do self:add(each) end
      return
   end
   local children = self.children
   if children[child] == nil then
      children[#children + 1] = child
      children[child] = #children
   end
end

-- Depth-first walk: `pre` before a node's children, `post` after them. A node whose
-- `visited` flag is set is skipped (the callers set and clear the flag).
function Node:visit(pre, post)
   if self.visited then return end
   if pre then pre(self) end
   for _, child in ipairs(self.children) do child:visit(pre, post) end
   if post then post(self) end
end

function Node:label()
   return tostring(self.data)
end

-- Post-order depth-first traversal; leaves the `visited` flags set and returns the
-- nodes in the order `func` saw them.
function Node:dfs_dirty(func)
   local order = {}
   self:visit(function(node) node.visited = true end,
              function(node)
                 func(node)
                 order[#order + 1] = node
              end)
   return order
end

function Node:dfs(func)
   for _, node in ipairs(self:dfs_dirty(func)) do node.visited = false end
end

-- Breadth-first traversal (a node is queued once, flagged with `marked`); leaves
-- the flags set and returns the nodes in the order they were seen.
function Node:bfs_dirty(func)
   local queue, head, order = {self}, 1, {}
   self.marked = true
   while queue[head] do
      local node = queue[head]
      head = head + 1
      order[#order + 1] = node
      func(node)
      for _, child in ipairs(node.children) do
         if not child.marked then
            child.marked = true
            queue[#queue + 1] = child
         end
      end
   end
   return order
end

function Node:bfs(func)
   for _, node in ipairs(self:bfs_dirty(func)) do node.marked = false end
end

-- The graph of every edge reachable from this node, built breadth-first.
function Node:graph()
   local g = graph.Graph()
   self:bfs(function(node)
      for _, child in ipairs(node.children) do g:add(graph.Edge(node, child)) end
   end)
   return g
end

-- Whether a cycle is reachable from this node: a node met again while it is still
-- on the current path (`marked`) closes a cycle. The flags are cleared afterwards.
function Node:hasCycle()
   local found = false
   local done = {}
   local function enter(node)
      if found then return end
      if node.marked then
         node.visited = true  -- do not descend into it again
         found = true
         return
      end
      node.marked = true
   end
   local function leave(node)
      node.marked = false
      node.visited = true
      done[node] = true
   end
   self:visit(enter, leave)
   for node in pairs(done) do node.visited = false end
   return found
end
