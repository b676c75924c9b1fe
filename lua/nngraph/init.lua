-- luatorch's `nngraph` package (the API of Torch7's torch/nngraph): modules joined
-- into graphs by calling them on nodes, run as one nn.gModule.
--
--   local x = nn.Identity()()                 -- a node with no inputs
--   local h = nn.Tanh()(nn.Linear(3, 4)(x))   -- module(node) makes a node
--   local net = nn.gModule({x}, {h})
require 'nn'
require 'graph'

nngraph = nngraph or {}

local function include(name)
   local path = package.searchpath('nngraph.' .. name, package.path)
   if not path then error('nngraph: missing file nngraph/' .. name .. '.lua') end
   return dofile(path)
end

function nngraph._isNode(x)
   return torch.typename(x) == 'nngraph.Node'
end

-- The error for something that should have been a node at position `i` of `what`.
function nngraph._notANodeMessage(value, what, i)
   if value == nil then
      return string.format('%s[%d] is nil (typo / bad index?)', what, i)
   end
   if torch.isTypeOf(value, 'nn.Module') then
      return string.format('%s[%d] is an nn.Module, specifically a %s, but the only valid thing to pass is an ' ..
                           'instance of nngraph.Node. Did you forget a second set of parens, which convert ' ..
                           'a nn.Module to a nngraph.Node?', what, i, torch.typename(value))
   end
   return string.format('%s[%d] should be an nngraph.Node but is of type %s', what, i,
                        torch.typename(value) or type(value))
end

-- Check a list meant to hold nodes (the inputs of a call, the inputs or outputs of
-- a gModule) before anything is connected, so a mistake leaves the graph as it was.
function nngraph._checkNodeList(list, what)
   local firstPlace = {}
   for i = 1, nngraph._lastIndex(list) do
      local node = list[i]
      if not nngraph._isNode(node) then nngraph._fail(nngraph._notANodeMessage(node, what, i)) end
      if firstPlace[node] then
         nngraph._fail(string.format('%s[%d] is the same node as %s[%d]; a node can be used once in one list ' ..
                                     '(for a second copy pass nn.Identity()(node))', what, i, what, firstPlace[node]))
      end
      firstPlace[node] = i
   end
end

-- Table entries up to the largest numeric key (so a nil hole is seen, not skipped).
function nngraph._lastIndex(t)
   local n = 0
   for k in pairs(t) do
      if type(k) == 'number' and k > n then n = k end
   end
   return n
end

nngraph.nesting = include 'nesting'
include 'node'
include 'gmodule'
include 'JustElement'
include 'JustTable'
include 'ModuleFromCriterion'
include 'nest'
include 'inspect'
nngraph.simple_print = include 'simple_print'

-- module(node) or module({node1, node2}) returns a new node running the module on
-- those inputs; module() makes a node without inputs (a graph input).
local Module = torch.getmetatable('nn.Module')
function Module:__call__(...)
   local n = select('#', ...)
   if n > 1 then nngraph._fail('nngraph: a module takes one argument; use {input1, input2} to pass several inputs') end
   local inputs = ...
   if n == 1 and inputs == nil then nngraph._fail(nngraph._notANodeMessage(nil, 'inputs', 1)) end
   if type(inputs) == 'table' and not torch.typename(inputs) and next(inputs) == nil then
      nngraph._fail('cannot pass an empty table of inputs. To indicate no incoming connections, ' ..
                    'leave the second set of parens blank.')
   end
   if n == 0 then inputs = {} elseif type(inputs) ~= 'table' or torch.typename(inputs) then inputs = {inputs} end
   nngraph._checkNodeList(inputs, 'inputs')
   local node = nngraph.Node({module = self})
   for i = 1, #inputs do node:add(inputs[i], true) end
   return node
end

-- criterion({prediction, target}) is a node too (through nn.ModuleFromCriterion).
local Criterion = torch.getmetatable('nn.Criterion')
function Criterion:__call__(...)
   return nn.ModuleFromCriterion(self)(...)
end

-- The operator shorthand: -module is module(), and a - b is b(a).
function Module.__unm__(module)
   return module()
end
function Module.__sub__(prev, nxt)
   return nxt(prev)
end
torch.getmetatable('nngraph.Node').__sub__ = function(prev, nxt)
   return nxt(prev)
end

return nngraph
