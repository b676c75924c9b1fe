-- torch.TestSuite(): a table of named test functions for torch.Tester:add.
--
-- Defining the same name twice is an error (a copy-pasted test would otherwise
-- silently replace the first one), and only functions may be stored. The tests
-- live in the field __tests; __isTestSuite tells Tester:add it is a suite.
local torch = ...

local suiteMeta = {}

function suiteMeta.__index(suite, name)
   return rawget(suite, '__tests')[name]
end

function suiteMeta.__newindex(suite, name, fn)
   local tests = rawget(suite, '__tests')
   if tests[name] ~= nil then
      error('Test ' .. tostring(name) .. ' is already defined.', 2)
   end
   if type(fn) == 'table' then
      error('Nested tables of tests are not supported in a TestSuite', 2)
   elseif type(fn) ~= 'function' then
      error('a TestSuite holds only functions, got a ' .. type(fn) .. ' for ' .. tostring(name), 2)
   end
   tests[name] = fn
end

function torch.TestSuite()
   return setmetatable({__tests = {}, __isTestSuite = true}, suiteMeta)
end
