-- luatorch's `graph` package (the API of Torch7's torch/graph): directed graphs of
-- graph.Node joined by graph.Edge, with traversals, topological sort and Graphviz
-- output. nngraph builds on it.
require 'torch'

graph = graph or {}

local function include(name)
   dofile(assert(package.searchpath('graph.' .. name, package.path), 'graph: missing file graph/' .. name .. '.lua'))
end
include 'Node'
include 'Edge'

-- graph.Graph keeps two tables that are both lists and sets: `nodes` (node -> its
-- position, which is also node.id) and `edges` (edge -> its position).
local Graph = torch.class('graph.Graph')

function Graph:__init()
   self.nodes = {}
   self.edges = {}
end

local function appendOnce(set, item)
   if set[item] == nil then
      set[#set + 1] = item
      set[item] = #set
   end
end

-- Add an edge (or a plain list of edges): its ends join `nodes` and the edge is
-- recorded as a child link on its `from` node.
function Graph:add(edge)
   if type(edge) ~= 'table' then
      error('graph.Graph:add: expected a graph.Edge or a list of them, got ' .. type(edge), 2)
   end
   if not torch.typename(edge) then
      for _, each in ipairs(edge) do self:add(each) end
      return
   end
   appendOnce(self.edges, edge)
   appendOnce(self.nodes, edge.from)
   appendOnce(self.nodes, edge.to)
   edge.from:add(edge.to)
   edge.from.id = self.nodes[edge.from]
   edge.to.id = self.nodes[edge.to]
end

-- Copy the structure with new node objects (same class) that share the data tables.
-- With `flip` the edges point the other way. Returns the graph and old -> new nodes.
local function rebuild(g, flip)
   local result = graph.Graph()
   local copies = {}
   local function copyOf(node)
      local c = copies[node]
      if not c then
         c = node.new(node.data)
         copies[node] = c
      end
      return c
   end
   for _, e in ipairs(g.edges) do
      local from, to = copyOf(e.from), copyOf(e.to)
      if flip then from, to = to, from end
      result:add(e.new(from, to))
   end
   return result, copies
end

function Graph:clone()
   return (rebuild(self, false))
end

-- The same graph with every edge reversed (new nodes sharing the data), and the map
-- from this graph's nodes to the new ones.
function Graph:reverse()
   return rebuild(self, true)
end

local function byPosition(g, set)
   local list = {}
   for node in pairs(set) do list[#list + 1] = node end
   table.sort(list, function(a, b) return g.nodes[a] < g.nodes[b] end)
   return list
end

-- Nodes with outgoing but no incoming edges, in the order of `nodes`.
function Graph:roots()
   local candidates = {}
   for _, e in ipairs(self.edges) do candidates[e.from] = true end
   for _, e in ipairs(self.edges) do candidates[e.to] = nil end
   return byPosition(self, candidates)
end

-- Nodes with incoming but no outgoing edges, in the order of `nodes`.
function Graph:leaves()
   local candidates = {}
   for _, e in ipairs(self.edges) do candidates[e.to] = true end
   for _, e in ipairs(self.edges) do candidates[e.from] = nil end
   return byPosition(self, candidates)
end

function Graph:hasCycle()
   local roots = self:roots()
   if #roots == 0 then return #self.edges > 0 end
   for _, root in ipairs(roots) do
      if root:hasCycle() then return true end
   end
   return false
end

-- Topological order: every node comes after the nodes that point to it. It is the
-- post-order depth-first walk of the reversed graph from its roots (a node is
-- emitted once everything it depends on is). Also returns the reversed graph and its roots.
function Graph:topsort()
   local reversed, copies = self:reverse()
   local original = {}
   for node, copy in pairs(copies) do original[copy] = node end
   local starts = reversed:roots()
   if #starts == 0 and #self.edges > 0 then error('graph.Graph:topsort: the graph has cycles', 2) end
   local start = starts[1]
   if #starts > 1 then
      -- a node outside the graph that leads to every root; it has no original, so it is not emitted
      start = graph.Node('topsort start')
      for _, root in ipairs(starts) do start:add(root) end
   end
   local sorted = {}
   if start then
      start:dfs(function(node)
         local o = original[node]
         if o then sorted[#sorted + 1] = o end
      end)
   end
   if #sorted ~= #self.nodes then error('graph.Graph:topsort: the graph has cycles', 2) end
   return sorted, reversed, starts
end

include 'graphviz'

return graph
