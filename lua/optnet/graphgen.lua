-- require 'optnet.graphgen' returns generateGraph(net, input, opts): a graph.Graph of
-- the tensors an nn network computes (any network, not only nngraph's), each node
-- labelled with the storage its tensor lives in and coloured by it, so that the
-- sharing optnet.optimizeMemory sets up can be seen (graph.dot(g, title, name)
-- writes the DOT text, and an SVG where Graphviz is installed).
--
-- The network runs once with its modules watched. A node is a tensor object made
-- by a module call: the network's input, each output a leaf makes, and what a
-- container makes of its children's results (nn.Concat's joined tensor). A module
-- that only hands on tensors it received (Identity, SelectTable, NarrowTable, a
-- ConcatTable's table of its children's outputs) adds no node. Edges go from the
-- tensors a call read to the ones it made; a graph.Graph holds only nodes on an edge.
-- opts: nodeData(text, tensor) -> text shown under the module's name (the text
-- passed in is 'Storage id: <n>', n counting storages in order of appearance);
-- displayProps: Graphviz attributes that override the defaults (shape, fontsize,
-- style, color...); addOutputNode: one more node per output tensor, named Output
-- and showing its size.
require 'graph'
local utils = require 'optnet.utils'

-- Graphviz colour names, one per storage in turn (a colour names more than one
-- storage only in networks with more storages than colours).
local palette = {
   'lightblue', 'lightsalmon', 'palegreen', 'khaki', 'plum', 'lightcoral', 'aquamarine', 'wheat',
   'lightpink', 'lightseagreen', 'gold', 'orchid', 'yellowgreen', 'peachpuff', 'skyblue', 'tan',
   'thistle', 'darkseagreen', 'sandybrown', 'lightsteelblue', 'burlywood', 'mediumpurple',
   'lightgoldenrod', 'salmon', 'turquoise', 'rosybrown', 'lightcyan', 'greenyellow',
}

local function tensorList(x)
   local list = {}
   utils.eachTensor(x, function(t) list[#list + 1] = t end)
   return list
end

local function generateGraph(net, input, opts)
   opts = opts or {}
   if torch.typename(net) == 'nn.DataParallelTable' then net = net.modules[1] end
   local g = graph.Graph()
   local nodeOf = {}      -- torch.pointer(tensor object) -> node
   local storageIds, nStorages = {}, 0

   local function newNode(name, t)
      local key = utils.storageKey(t) or 0
      if not storageIds[key] then
         nStorages = nStorages + 1
         storageIds[key] = nStorages
      end
      local id = storageIds[key]
      local text = 'Storage id: ' .. id
      if opts.nodeData then text = opts.nodeData(text, t) end
      local node = graph.Node(text)
      function node:graphNodeName() return name end
      function node:graphNodeAttributes()
         local attributes = {color = palette[(id - 1) % #palette + 1], style = 'filled', shape = 'box', fontsize = 10}
         for k, v in pairs(opts.displayProps or {}) do attributes[k] = v end
         return attributes
      end
      nodeOf[torch.pointer(t)] = node
      return node
   end

   -- `made`: the tensors a call produced; `from`: those it read.
   local function record(name, made, from)
      local read = {}
      for _, t in ipairs(from) do read[torch.pointer(t)] = true end
      local fresh = {}
      for _, t in ipairs(made) do
         if not read[torch.pointer(t)] then fresh[#fresh + 1] = t end
      end
      for _, t in ipairs(fresh) do
         local node = nodeOf[torch.pointer(t)] or newNode(name, t)
         for _, s in ipairs(from) do
            local parent = nodeOf[torch.pointer(s)]
            if parent and parent ~= node then g:add(graph.Edge(parent, node)) end
         end
      end
   end

   local inputs = tensorList(input)
   for i, t in ipairs(inputs) do newNode(#inputs == 1 and 'Input' or ('Input ' .. i), t) end

   local saved = {}
   for _, m in ipairs(utils.modules(net)) do
      saved[m] = rawget(m, 'updateOutput')
      local original = m.updateOutput
      m.updateOutput = function(self, x)
         local r = original(self, x)
         if self.modules == nil then
            record(tostring(self), tensorList(self.output), tensorList(x))
         else
            local children = {}
            for _, child in ipairs(self.modules) do
               for _, t in ipairs(tensorList(child.output)) do children[#children + 1] = t end
            end
            record(torch.typename(self), tensorList(self.output), children)
         end
         return r
      end
   end
   local ok, err = pcall(function() net:forward(input) end)
   for m, own in pairs(saved) do m.updateOutput = own end
   if not ok then error(err, 0) end

   if opts.addOutputNode then
      local outs = tensorList(net.output)
      for i, t in ipairs(outs) do
         local parent = nodeOf[torch.pointer(t)]
         if parent then
            local node = graph.Node(table.concat(t:size():totable(), 'x'))
            local name = #outs == 1 and 'Output' or ('Output ' .. i)
            function node:graphNodeName() return name end
            g:add(graph.Edge(parent, node))
         end
      end
   end
   return g
end

return generateGraph
