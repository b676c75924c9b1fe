-- nn.gModule: an nn.Container running a directed acyclic graph of modules built
-- with nngraph's call syntax (y = nn.Linear(3, 4)(x)).
--
-- Construction adds two nodes without modules: `outnode`, whose inputs are the
-- given outputs, and `innode`, which receives the gModule's input (split into one
-- part per declared input when there are several). The nodes as built, whose
-- children are their inputs, form the backward graph `bg` (from outnode down to
-- innode); `fg` is its reverse, with new node objects sharing the same data tables.
-- `forwardnodes`/`backwardnodes` are their topological orders, and `modules` the
-- nodes' modules in forward order. These are the fields Torch7's nngraph saved.
local gModule, parent = torch.class('nn.gModule', 'nn.Container')

local function checkNodes(list, what)
   if type(list) ~= 'table' or torch.typename(list) then
      nngraph._fail(string.format('nn.gModule: %s must be a table of nngraph nodes, got %s', what, torch.type(list)))
   end
   nngraph._checkNodeList(list, what)
end

-- Undo node:add(child, true): the graph a rejected gModule made must not stay
-- attached to the user's nodes (a later gModule would see it as dangling).
local function unlink(node, child)
   local children = node.children
   local at = children[child]
   if at then
      table.remove(children, at)
      children[child] = nil
      for i = at, #children do children[children[i]] = i end
   end
   local mapindex = node.data.mapindex
   local slot = mapindex[child.data]
   if slot then
      table.remove(mapindex, slot)
      mapindex[child.data] = nil
      for i = slot, #mapindex do mapindex[mapindex[i]] = i end
   end
   if child.data.reverseMap then child.data.reverseMap[node] = nil end
end

function gModule:__init(inputs, outputs)
   parent.__init(self)
   checkNodes(outputs, 'outputs')
   checkNodes(inputs, 'inputs')
   if #inputs == 0 then nngraph._fail('nn.gModule: at least one input node is needed') end
   if #inputs > 1 then
      for i = 1, #inputs do
         if #inputs[i].children > 0 then
            nngraph._fail(string.format('nn.gModule: inputs[%d] (%s) is computed from other nodes; an input ' ..
                                        'must be a node made with no inputs, such as nn.Identity()()', i,
                                        inputs[i].data.annotations._debugLabel))
         end
      end
   end

   local outnode = nngraph.Node({input = {}})
   local innode = nngraph.Node({input = {}})
   local links = {}  -- the links made to the user's nodes, undone if the graph is rejected
   local function link(node, child)
      node:add(child, true)
      links[#links + 1] = {node, child}
   end
   for i = 1, #outputs do link(outnode, outputs[i]) end
   if #inputs == 1 then
      link(inputs[1], innode)
   else
      local parts = {innode:split(#inputs)}
      for i = 1, #inputs do link(inputs[i], parts[i]) end
   end

   local ok, err = pcall(self._connect, self, innode, outnode, #inputs)
   if not ok then
      for i = #links, 1, -1 do unlink(links[i][1], links[i][2]) end
      error(err, 0)
   end
end

-- Build fg/bg and the node orders from the completed graph, checking it.
function gModule:_connect(innode, outnode, nInputs)
   self.bg = outnode:graph()
   self.fg = self.bg:reverse()

   -- the forward graph starts at innode; other starting points may only be
   -- parameter nodes (nnop.Parameters, which need no input)
   local start
   for _, root in ipairs(self.fg:roots()) do
      if root.data == innode.data then
         start = root
      elseif not (root.data.module and torch.typename(root.data.module) == 'nnop.Parameters') then
         nngraph._fail('nn.gModule: the node made at ' .. tostring(root.data.annotations._debugLabel) ..
                       ' has no inputs but is not among the gModule inputs; list it in the inputs')
      end
   end
   if not start then nngraph._fail('nn.gModule: the inputs do not reach the outputs') end
   self.innode = start
   self.outnode = outnode
   self.verbose = false
   self.nInputs = nInputs

   self.forwardnodes = self.fg:topsort()
   self.backwardnodes = self.bg:topsort()

   local inForward = {}
   for _, node in ipairs(self.forwardnodes) do inForward[node.data] = true end
   for _, node in ipairs(self.forwardnodes) do
      local d = node.data
      -- every part of a split must be used, or its gradient would be missing
      if d.nSplitOutputs and d.nSplitOutputs ~= #node.children then
         nngraph._fail(string.format('%d of split(%d) outputs from the node declared at %s are unused',
                                     d.nSplitOutputs - #node.children, d.nSplitOutputs, d.annotations._debugLabel))
      end
      -- a node computed from this one but not leading to an output is a mistake
      for user in pairs(d.reverseMap or {}) do
         if not inForward[user.data] then
            nngraph._fail(string.format('node declared on %s does not connect to gmodule output',
                                        tostring(user.data.annotations._debugLabel)))
         end
      end
      d.forwardNodeId = node.id
      if d.module then self:add(d.module) end
   end

   self.output = nil
   self.gradInput = nil
   if #self.outnode.children > 1 then self.output = self.outnode.data.input end
end

-- The value a node's module is applied to: its single input, or the list of them.
local function moduleInput(data)
   local input = data.input
   if input == nil then return {} end  -- a parameter node takes nothing
   if #input == 1 then return input[1] end
   return input
end

-- The node being evaluated, kept for nngraph.setDebug's picture of a failure.
local current = {}
function nngraph._currentNode() return current.node end

local function emptyList(t)
   if t then
      for i = #t, 1, -1 do t[i] = nil end
   end
end

function gModule:updateOutput(input)
   return self:runForwardFunction('updateOutput', input)
end

-- Run `func(module, input)` (a method name or a function) at every node in forward order.
function gModule:runForwardFunction(func, input)
   if type(func) == 'string' then
      local name = func
      func = function(module, x) return module[name](module, x) end
   end
   local nInputs = self.nInputs or #self.innode.children
   if nInputs <= 1 then
      input = {input}
   elseif type(input) ~= 'table' or torch.typename(input) then
      nngraph._fail(string.format('nn.gModule: expected a table of %d inputs, got %s', nInputs, torch.type(input)))
   end
   if #input ~= nInputs then
      nngraph._fail(string.format('nn.gModule: got %d inputs instead of %d', #input, nInputs))
   end

   for _, node in ipairs(self.forwardnodes) do emptyList(node.data.input) end
   local indata = self.innode.data
   indata.input = indata.input or {}
   for i, x in ipairs(input) do indata.input[i] = x end

   for _, node in ipairs(self.forwardnodes) do
      current.node = node
      local d = node.data
      local output
      if d.selectindex then
         local whole = d.input[1]
         if type(whole) ~= 'table' or torch.typename(whole) then
            error(string.format('nn.gModule: the node split at %s needs a table output, got %s',
                                d.annotations._debugLabel, torch.type(whole)))
         end
         output = whole[d.selectindex]
      else
         local x = moduleInput(d)
         if d.module then output = func(d.module, x) else output = x end
         if d.nSplitOutputs and (type(output) ~= 'table' or #output ~= d.nSplitOutputs) then
            error(string.format('split(%d) cannot split %s outputs (node declared at %s)', d.nSplitOutputs,
                                type(output) == 'table' and #output or torch.type(output), d.annotations._debugLabel))
         end
      end
      for _, user in ipairs(node.children) do
         local ud = user.data
         ud.input = ud.input or {}
         local slot = ud.mapindex[d]
         if ud.input[slot] ~= nil then error('nn.gModule: a node input was given twice') end
         ud.input[slot] = output
      end
      if self.verbose then print(' V : ' .. node:label()) end
   end
   current.node = nil

   self.output = self.outnode.data.input
   if #self.outnode.children == 1 then self.output = self.output[1] end
   return self.output
end

-- The gradient reaching a node: the one it received, or the sum of several (in a
-- buffer kept in data.gradOutputBuffer, reused between calls).
local function totalGradOutput(data)
   local grads = data.gradOutput
   if #grads == 1 then return grads[1] end
   local buffer = data.gradOutputBuffer or nngraph.nesting.cloneNested(grads[1])
   nngraph.nesting.resizeNestedAs(buffer, grads[1])
   nngraph.nesting.copyNested(buffer, grads[1])
   for i = 2, #grads do nngraph.nesting.addNestedTo(buffer, grads[i]) end
   data.gradOutputBuffer = buffer
   return buffer
end

local function checkGradOutputs(self, gradOutput)
   local nOut = #self.outnode.children
   if nOut > 1 and (type(gradOutput) ~= 'table' or #gradOutput ~= nOut) then
      nngraph._fail(string.format('nn.gModule: got %s gradOutputs instead of %d',
                                  type(gradOutput) == 'table' and #gradOutput or torch.type(gradOutput), nOut))
   end
end

function gModule:updateGradInput(input, gradOutput)
   checkGradOutputs(self, gradOutput)
   for _, node in ipairs(self.backwardnodes) do emptyList(node.data.gradOutput) end
   local outdata = self.outnode.data
   outdata.gradOutput = outdata.gradOutput or {}
   outdata.gradOutput[1] = gradOutput

   for _, node in ipairs(self.backwardnodes) do
      current.node = node
      local d = node.data
      if d.selectindex then
         -- one part of a split: its gradient goes into slot `selectindex` of the
         -- split node's single (table) gradient
         local splitter = node.children[1].data
         splitter.gradOutput = splitter.gradOutput or {}
         splitter.gradOutput[1] = splitter.gradOutput[1] or {}
         splitter.gradOutput[1][d.selectindex] = totalGradOutput(d)
      else
         local g = totalGradOutput(d)
         local gradInput = g
         if d.module then gradInput = d.module:updateGradInput(moduleInput(d), g) end
         local only = #node.children == 1
         for _, source in ipairs(node.children) do
            local sd = source.data
            sd.gradOutput = sd.gradOutput or {}
            sd.gradOutput[#sd.gradOutput + 1] = only and gradInput or gradInput[d.mapindex[sd]]
         end
      end
      if self.verbose then print(' V : ' .. node:label()) end
   end
   current.node = nil

   self.gradInput = self.innode.data.gradOutput[1]
   return self.gradInput
end

function gModule:accGradParameters(input, gradOutput, scale)
   checkGradOutputs(self, gradOutput)
   for _, node in ipairs(self.backwardnodes) do
      current.node = node
      local d = node.data
      if d.module then
         local g = #d.gradOutput > 1 and d.gradOutputBuffer or d.gradOutput[1]
         d.module:accGradParameters(moduleInput(d), g, scale)
      end
   end
   current.node = nil
end

-- Convert every module and the tensors held by the nodes (inputs, gradients).
function gModule:type(typename, tensorCache)
   if not typename then return self._type end
   tensorCache = tensorCache or {}
   local convert = function(v) return nn.utils.recursiveType(v, typename, tensorCache) end
   for _, m in ipairs(self.modules) do m:type(typename, tensorCache) end
   local seen = {}
   for _, list in ipairs {self.forwardnodes, self.backwardnodes} do
      for _, node in ipairs(list) do
         local d = node.data
         if not seen[d] then
            seen[d] = true
            for _, field in ipairs {'input', 'gradOutput', 'gradOutputBuffer'} do
               if d[field] ~= nil then d[field] = convert(d[field]) end
            end
         end
      end
   end
   -- output/gradInput may be a node's table: point them at the converted values
   if #self.outnode.children > 1 then
      self.output = self.outnode.data.input
   elseif self.output ~= nil then
      self.output = convert(self.output)
   end
   if self.innode.data.gradOutput and self.innode.data.gradOutput[1] ~= nil then
      self.gradInput = self.innode.data.gradOutput[1]
   elseif self.gradInput ~= nil then
      self.gradInput = convert(self.gradInput)
   end
   self._type = typename
   return self
end

function gModule:clearState()
   local result = parent.clearState(self)
   for _, node in ipairs(self.backwardnodes) do
      node.data.gradOutput = nil
      node.data.gradOutputBuffer = nil
   end
   for _, node in ipairs(self.forwardnodes) do node.data.input = nil end
   return result
end

-- Replace modules by what callback(module) returns, in the nodes and in `modules`.
function gModule:replace(callback)
   local result = callback(self)
   local position = {}
   for i, m in ipairs(self.modules) do position[m] = i end
   for _, node in ipairs(self.forwardnodes) do
      local old = node.data.module
      if old then
         local new = old:replace(callback)
         node.data.module = new
         if position[old] then self.modules[position[old]] = new end
      end
   end
   return result
end

-- func(myModule, otherModule) for the modules at the same places of two gModules
-- built the same way.
function gModule:map(other, func)
   for i, node in ipairs(self.forwardnodes) do
      local twin = other.forwardnodes[i]
      if not twin or (node.data.module and not twin.data.module) then
         error('nn.gModule:map: the two gModules do not have the same structure', 2)
      end
      if node.data.module then func(node.data.module, twin.data.module) end
   end
end

-- Files written by Torch7 hold the fields as one table; very old ones had no `modules`.
function gModule:read(file)
   local fields = file:readObject()
   for k, v in pairs(fields) do self[k] = v end
   if not self.modules then
      self.modules = {}
      for _, node in ipairs(self.forwardnodes) do
         if node.data.module then self.modules[#self.modules + 1] = node.data.module end
      end
   end
end

function gModule:__tostring__()
   return self.name or torch.type(self)
end
