-- nngraph.Node: a graph.Node whose data describes one step of an nn.gModule.
--
-- data fields (the names Torch7's nngraph saved, so its .t7 files load):
--   module        the nn.Module run at this node (none: the node passes its input on)
--   mapindex      the input nodes' data tables in order, and data -> position
--   reverseMap    the nodes that take this node as an input (node -> true)
--   input         filled while running: the values arriving from the inputs
--   gradOutput    filled while running backward: the gradients to be summed
--   gradOutputBuffer  the sum, when there was more than one
--   nSplitOutputs / selectindex   the nodes made by :split()
--   forwardNodeId the node's id in the gModule's forward graph (for labels)
--   annotations   name, description, graphAttributes, _debugLabel (where it was made)
local Node, parent = torch.class('nngraph.Node', 'graph.Node')

-- Frames of these files are skipped when looking for the line that made a node:
-- the user's line, not nngraph's own (nor the class system's constructor).
local ownDir = debug.getinfo(1, 'S').source:match('^@(.*[/\\])')
local classSource = debug.getinfo(torch.class, 'S').source
local moduleSource = debug.getinfo(nn.Module.forward, 'S').source  -- forward/backward call into the gModule
local graphDir = ownDir and ownDir:gsub('nngraph[/\\]$', 'graph/')

local function isInternal(info)
   if info.what == 'C' or info.source == classSource or info.source == moduleSource then return true end
   local file = info.source:match('^@(.*)$')
   return file ~= nil and ownDir ~= nil and (file:sub(1, #ownDir) == ownDir or file:sub(1, #graphDir) == graphDir)
end

-- The stack level (as seen from the caller of this function) of the user's code
-- that is running, nngraph's own frames skipped; and that frame's info.
local function userFrame()
   for level = 3, 60 do
      local info = debug.getinfo(level, 'Sl')
      if not info then break end
      if not isInternal(info) then return level - 1, info end
   end
end

-- "[file]:line": the line of the user's code that is running.
function nngraph._sourceLocation()
   local _, info = userFrame()
   if not info then return '[?]:0' end
   return string.format('[%s]:%d', info.short_src, info.currentline)
end

-- Raise `message` as an error at the user's line (not inside nngraph or the class system).
function nngraph._fail(message)
   local level = userFrame()
   error(message, level or 2)
end

function Node:__init(data)
   parent.__init(self, data)
   local d = self.data
   d.annotations = d.annotations or {}
   d.mapindex = d.mapindex or {}
   d.reverseMap = d.reverseMap or {}
   if not d.annotations._debugLabel then d.annotations._debugLabel = nngraph._sourceLocation() .. '_' end
end

-- Add `child` (graph-wise: an input of this node). With `asInput` it also becomes
-- the next numbered input, and the child records this node as one of its users.
function Node:add(child, asInput)
   parent.add(self, child)
   if not asInput then return end
   local mapindex, cdata = self.data.mapindex, child.data
   if mapindex[cdata] then
      nngraph._fail('nngraph: the same node is given twice as an input of one module (' ..
                    tostring(cdata.annotations and cdata.annotations._debugLabel) ..
                    '); pass it once, or route the second use through nn.Identity()(node)')
   end
   mapindex[#mapindex + 1] = cdata
   mapindex[cdata] = #mapindex
   cdata.reverseMap = cdata.reverseMap or {}
   cdata.reverseMap[self] = true
end

-- Nodes for the parts of this node's (table) output: node:split(n) returns n nodes,
-- the i-th carrying output[i]. split(1) is nngraph.JustElement (the only element).
function Node:split(n)
   if type(n) ~= 'number' or n < 1 or n % 1 ~= 0 then
      nngraph._fail('nngraph.Node:split: expected a positive whole number of outputs, got ' .. tostring(n))
   end
   if n == 1 then return nngraph.JustElement()(self) end
   local label = self.data.annotations._debugLabel or ''
   local splitter = nngraph.Node({nSplitOutputs = n, annotations = {
      _debugLabel = label .. ' split at ' .. nngraph._sourceLocation() .. '-mnode'}})
   splitter:add(self, true)
   local parts = {}
   for i = 1, n do
      parts[i] = nngraph.Node({selectindex = i, input = {}, annotations = {_debugLabel = label .. '-' .. i}})
      parts[i]:add(splitter, true)
   end
   return unpack(parts)
end

-- Merge `annotations` (name, description, graphAttributes, ...) into the node's.
function Node:annotate(annotations)
   for k, v in pairs(annotations) do self.data.annotations[k] = v end
   return self
end

function Node:graphNodeName()
   local name = self.data.annotations.name
   if name then return name .. ' (' .. self.id .. ')' end
   return 'Node' .. self.id
end

-- The Graphviz attributes of the node; the tooltip defaults to where it was made.
function Node:graphNodeAttributes()
   local a = self.data.annotations
   a.graphAttributes = a.graphAttributes or {}
   if not a.graphAttributes.tooltip then a.graphAttributes.tooltip = a._debugLabel end
   return a.graphAttributes
end

local function tensorFlag(t)
   if t:nElement() == 0 then return '' end
   if t:ne(t):sum() > 0 then return 'NaN' end
   if t:max() == math.huge then return 'inf' end
   if t:min() == -math.huge then return '-inf' end
   return ''
end

local function describe(value)
   if value == nil then return '' end
   if torch.isTensor(value) then
      local kind = value:type() == torch.Tensor():type() and 'Tensor' or value:type()
      return kind .. '[' .. table.concat(value:size():totable(), 'x') .. ']' .. tensorFlag(value)
   end
   if type(value) == 'table' and not torch.typename(value) then
      local parts = {}
      for i, v in ipairs(value) do parts[i] = describe(v) end
      return '{' .. table.concat(parts, ',') .. '}'
   end
   return (tostring(value):gsub('\n', '\\l'))
end

-- A multi-line text about the node for graph pictures ("\l" ends a line in DOT).
function Node:label()
   local lines = {}
   local keys = {}
   for k in pairs(self.data) do keys[#keys + 1] = k end
   table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
   for _, k in ipairs(keys) do
      local v = self.data[k]
      if k == 'mapindex' then
         if #v > 1 then
            local ids = {}
            for i, d in ipairs(v) do ids[i] = 'Node' .. (d.forwardNodeId or '') end
            lines[#lines + 1] = 'mapindex = {' .. table.concat(ids, ',') .. '}'
         end
      elseif k ~= 'forwardNodeId' and k ~= 'annotations' and k ~= 'reverseMap' then
         lines[#lines + 1] = tostring(k) .. ' = ' .. describe(v)
      end
   end
   local desc = self.data.annotations.description
   return (desc and ('desc = ' .. desc .. '\\n') or '') .. table.concat(lines, '\\l')
end
