-- torch.Tester: Torch7's unit-test runner — assertions, a registry of named
-- tests, :run with a report.
--
--   local tester = torch.Tester()
--   local tests = torch.TestSuite()
--   function tests.addition() tester:eq(1 + 1, 2, 'one plus one') end
--   tester:add(tests):run()          -- or :run('addition'), :run{'^add', 'mul$'}
--
-- Test scripts and harnesses read the runner's state, so its fields keep
-- Torch7's names: tests (name -> function), errors and warnings (reports, in
-- order), assertionPass / assertionFail / testError / _warningCount (per test
-- name, reset by :run), countasserts (after :run), disabledTests, and
-- _assertTensorEqIgnoresDims (true: assertTensorEq compares {{1}} and {1} by
-- their elements only, with a warning). An error entry starts with the test
-- name, then ' Function call failed' and the traceback; a failure entry is the
-- test name, the message and where the assertion was called.
--
-- Every assertion returns what _success() / _failure(message) return (true /
-- false), so a script may override the two to inspect assertions.
local torch = ...

local Tester = torch.class('torch.Tester')

local WIDTH = 80

function Tester:__init()
   self.tests = {}
   self.errors = {}
   self.warnings = {}
   self.disabledTests = {}
   self.assertionPass = {}
   self.assertionFail = {}
   self.testError = {}
   self._warningCount = {}
   self._currentTestName = ''
   self._assertTensorEqIgnoresDims = true
end

function Tester:setEarlyAbort(on) self.earlyAbort = on; return self end
function Tester:setRethrowErrors(on) self.rethrow = on; return self end
function Tester:setSummaryOnly(on) self.summaryOnly = on; return self end

-- ------------------------------------------------------------ bookkeeping

local function bump(counts, name)
   counts[name] = (counts[name] or 0) + 1
end

-- "file:line" of the innermost caller that is not this file: the line of the
-- test that called the assertion.
local thisSource = debug.getinfo(1, 'S').source
local function callSite()
   for level = 3, 40 do
      local info = debug.getinfo(level, 'Sl')
      if not info then break end
      if info.source ~= thisSource and info.what ~= 'C' then
         return '  at ' .. info.short_src .. ':' .. tostring(info.currentline)
      end
   end
   return ''
end

local function report(self, message)
   local name = self._currentTestName
   return (name ~= '' and name .. '\n' or '') .. message .. '\n' .. callSite()
end

function Tester:_success()
   bump(self.assertionPass, self._currentTestName)
   return true
end

function Tester:_failure(message)
   if self.rethrow then error(message, 2) end
   bump(self.assertionFail, self._currentTestName)
   self.errors[#self.errors + 1] = report(self, message)
   return false
end

function Tester:_warning(message)
   bump(self._warningCount, self._currentTestName)
   self.warnings[#self.warnings + 1] = report(self, message)
end

function Tester:_assert_sub(ok, message)
   if ok then return self:_success() end
   return self:_failure(message)
end

-- ------------------------------------------------------------ argument forms

-- The optional message of an assertion, as a prefix line ('' without one).
local function messageOf(message, ...)
   if select('#', ...) > 0 then
      error('Unexpected arguments passed to test function: an assertion takes one optional message', 3)
   end
   if message == nil or message == '' then return '' end
   if type(message) ~= 'string' then error('the message of an assertion must be a string', 3) end
   return message .. '\n'
end

-- Assertions that take a tolerance and a message accept them in either order.
local function toleranceAndMessage(default, ...)
   local tolerance, message
   for i = 1, select('#', ...) do
      local a = select(i, ...)
      if type(a) == 'string' then
         if message then error('Unexpected string argument; already have message', 3) end
         message = a .. '\n'
      elseif type(a) == 'number' then
         if tolerance then error('Unexpected number argument; already have tolerance', 3) end
         if a < 0 then error('tolerance cannot be negative', 3) end
         tolerance = a
      elseif a ~= nil then
         error('Unrecognized argument of type ' .. type(a) .. '; should be a tolerance or message', 3)
      end
   end
   return tolerance or default, message or ''
end

-- ------------------------------------------------------------ comparisons
-- Each returns equal (boolean) and, when they differ, why.

local compare = {}

local floating = {['torch.FloatTensor'] = true, ['torch.DoubleTensor'] = true}

-- Largest |a - b| over the elements (same element count, any shapes).
local function maxAbsDiff(a, b)
   if not floating[a:type()] then a = a:double() end
   if not floating[b:type()] then b = b:double() end
   local d = a:contiguous():view(a:nElement()):clone()
   d:add(-1, b:contiguous():view(b:nElement()):typeAs(d))
   return d:abs():max()
end

function compare.tensors(a, b, tolerance, ignoreDims, what)
   what = what or 'Tensor'
   if not ignoreDims and a:dim() ~= b:dim() then return false, 'The tensors have different dimensions' end
   if a:type() ~= b:type() then return false, 'The tensors have different types' end
   if a:nElement() == 0 and b:nElement() == 0 then return true end
   local sameSize
   if ignoreDims then sameSize = a:nElement() == b:nElement() else sameSize = a:isSameSizeAs(b) end
   if not sameSize then return false, 'The tensors have different sizes' end
   local diff = maxAbsDiff(a, b)
   if diff <= tolerance then return true end
   return false, string.format('%s violation: max diff=%s, tolerance=%s', what, tostring(diff), tostring(tolerance))
end

function compare.storages(a, b, tolerance)
   if a:size() ~= b:size() then return false, 'The storages have different sizes' end
   local ta, tb = torch.type(a), torch.type(b)
   if ta ~= tb then return false, 'The storages have different types' end
   if a:size() == 0 then return true end
   local tensor = torch[ta:match('^torch%.(%a+)Storage$') .. 'Tensor']
   return compare.tensors(tensor(a), tensor(b), tolerance, false, 'Storage')
end

-- Deep equality: same types; numbers within the tolerance; tensors and storages
-- elementwise within it; tables key by key, breadth first, so that the reported
-- difference is the shallowest one; anything else by ==.
function compare.values(a, b, tolerance)
   local ta, tb = type(a), type(b)
   if ta ~= tb then
      return false, 'values have different types (first: ' .. ta .. ', second: ' .. tb .. ')'
   end
   if ta == 'number' then
      if math.abs(a - b) <= tolerance then return true end
      return false, string.format('%s ~= %s', tostring(a), tostring(b))
         .. (tolerance > 0 and ' with tolerance=' .. tostring(tolerance) or '')
   elseif ta == 'table' then
      return compare.tables(a, b, tolerance)
   end
   local tensorA, tensorB = torch.isTensor(a), torch.isTensor(b)
   if tensorA or tensorB then
      if not (tensorA and tensorB) then return false, 'a tensor compared with a ' .. torch.type(tensorA and b or a) end
      return compare.tensors(a, b, tolerance, false)
   end
   local storageA, storageB = torch.isStorage(a), torch.isStorage(b)
   if storageA or storageB then
      if not (storageA and storageB) then return false, 'a storage compared with a ' .. torch.type(storageA and b or a) end
      return compare.storages(a, b, tolerance)
   end
   if a == b then return true end
   return false, string.format('%s (%s) ~= %s (%s)', tostring(a), ta, tostring(b), tb)
end

function compare.tables(a, b, tolerance)
   local queue, head = {{a, b, nil}}, 1
   while queue[head] do
      local t1, t2, where = queue[head][1], queue[head][2], queue[head][3]
      head = head + 1
      local function at(key) return where and where .. '.' .. tostring(key) or tostring(key) end
      for key, v1 in pairs(t1) do
         local v2 = t2[key]
         if v2 == nil then
            return false, string.format('Entry %s missing in second table (is %s in first)', at(key), tostring(v1))
         end
         if type(v1) == 'table' and type(v2) == 'table' then
            queue[#queue + 1] = {v1, v2, at(key)}
         else
            local ok, why = compare.values(v1, v2, tolerance)
            if not ok then return false, 'At table location ' .. at(key) .. ': ' .. why end
         end
      end
      for key, v2 in pairs(t2) do
         if t1[key] == nil then
            return false, string.format('Entry %s missing in first table (is %s in second)', at(key), tostring(v2))
         end
      end
   end
   return true
end

Tester._compare = compare

-- ------------------------------------------------------------ assertions

function Tester:assert(condition, ...)
   local message = messageOf(...)
   if type(condition) ~= 'boolean' then
      self:_warning(' :assert should only be used for boolean conditions; to check that a value is '
                    .. 'not nil, say so: tester:assert(value ~= nil)')
   end
   return self:_assert_sub(condition, message .. 'BOOL violation condition=' .. tostring(condition))
end

-- got == expected (deep, see compare.values), or ~= when `negate`.
function Tester:_eqOrNeq(got, expected, negate, ...)
   local tolerance, message = toleranceAndMessage(0, ...)
   local equal, why = compare.values(got, expected, tolerance)
   if negate then
      return self:_assert_sub(not equal, message .. 'NE failed: the values are equal'
                                         .. (tolerance > 0 and ' within tolerance=' .. tostring(tolerance) or ''))
   end
   return self:_assert_sub(equal, message .. 'EQ failed: ' .. tostring(why))
end

function Tester:assertGeneralEq(got, expected, ...) return self:_eqOrNeq(got, expected, false, ...) end
function Tester:assertGeneralNe(got, unexpected, ...) return self:_eqOrNeq(got, unexpected, true, ...) end
Tester.eq = Tester.assertGeneralEq
Tester.ne = Tester.assertGeneralNe

local function ordered(name, op, holds, shown)
   Tester[name] = function(self, a, b, ...)
      local message = messageOf(...)
      return self:_assert_sub(holds(a, b), string.format('%s%s failed: %s %s %s', message, op, tostring(a),
                                                         shown, tostring(b)))
   end
end
ordered('assertlt', 'LT', function(a, b) return a < b end, '>=')
ordered('assertgt', 'GT', function(a, b) return a > b end, '<=')
ordered('assertle', 'LE', function(a, b) return a <= b end, '>')
ordered('assertge', 'GE', function(a, b) return a >= b end, '<')
ordered('asserteq', 'EQ', function(a, b) return a == b end, '~=')

function Tester:assertne(a, b, ...)
   local message = messageOf(...)
   local ta = type(a)
   if (ta == 'table' and type(b) == 'table') or ta == 'userdata' or ta == 'cdata' then
      self:_warning(' :assertne should only be used to compare basic lua objects (numbers, booleans, '
                    .. 'strings); for tables, tensors and other objects use :assertGeneralNe or :assert(a ~= b)')
   end
   return self:_assert_sub(a ~= b, string.format('%sNE failed: %s == %s', message, tostring(a), tostring(b)))
end

function Tester:assertalmosteq(a, b, ...)
   local tolerance, message = toleranceAndMessage(1e-16, ...)
   return self:_assert_sub(math.abs(a - b) <= tolerance,
                           string.format('%sALMOST_EQ failed: %s ~= %s with tolerance=%s', message, tostring(a),
                                         tostring(b), tostring(tolerance)))
end

function Tester:_assertTensorEqOrNeq(a, b, negate, ...)
   if not torch.isTensor(a) then error('First argument should be a Tensor, got a ' .. torch.type(a), 3) end
   if not torch.isTensor(b) then error('Second argument should be a Tensor, got a ' .. torch.type(b), 3) end
   local tolerance, message = toleranceAndMessage(0, ...)
   local ignoreDims = self._assertTensorEqIgnoresDims
   local equal, why = compare.tensors(a, b, tolerance, ignoreDims)
   if negate then
      return self:_assert_sub(not equal, message .. 'TensorNE(==) violation: the tensors are equal within tolerance='
                                         .. tostring(tolerance))
   end
   if equal and ignoreDims and not a:isSameSizeAs(b) then
      self:_warning('Tensors have the same content but different dimensions; they count as equal for '
                    .. 'backwards compatibility (set _assertTensorEqIgnoresDims = false, or use :eq, to compare sizes too)')
   end
   return self:_assert_sub(equal, message .. tostring(why))
end

function Tester:assertTensorEq(a, b, ...) return self:_assertTensorEqOrNeq(a, b, false, ...) end
function Tester:assertTensorNe(a, b, ...) return self:_assertTensorEqOrNeq(a, b, true, ...) end

function Tester:_assertTableEqOrNeq(a, b, negate, ...)
   if type(a) ~= 'table' then error('First argument should be a Table, got a ' .. torch.type(a), 3) end
   if type(b) ~= 'table' then error('Second argument should be a Table, got a ' .. torch.type(b), 3) end
   return self:_eqOrNeq(a, b, negate, ...)
end

function Tester:assertTableEq(a, b, ...) return self:_assertTableEqOrNeq(a, b, false, ...) end
function Tester:assertTableNe(a, b, ...) return self:_assertTableEqOrNeq(a, b, true, ...) end

-- f() must raise an error that errcomp(err) accepts.
function Tester:assertErrorObj(f, errcomp, ...)
   local message = messageOf(...)
   local ok, err = pcall(f)
   return self:_assert_sub(not ok and errcomp(err) and true or false,
                           message .. (ok and 'ERROR violation: no error was raised'
                                          or 'ERROR violation: err=' .. tostring(err)))
end

function Tester:assertError(f, ...)
   return self:assertErrorObj(f, function() return true end, ...)
end

function Tester:assertErrorMsg(f, errmsg, ...)
   return self:assertErrorObj(f, function(err) return err == errmsg end, ...)
end

function Tester:assertErrorPattern(f, pattern, ...)
   return self:assertErrorObj(f, function(err) return string.find(tostring(err), pattern) ~= nil end, ...)
end

function Tester:assertNoError(f, ...)
   local message = messageOf(...)
   local ok, err = pcall(f)
   return self:_assert_sub(ok, message .. 'ERROR violation: err=' .. tostring(err))
end

-- ------------------------------------------------------------ registry

-- add(function [, name]), add(TestSuite) or add(table of functions). _setUp and
-- _tearDown are called with the test name before and after each test.
function Tester:add(f, name)
   if type(f) == 'table' then
      if name ~= nil then error('Tester:add: a name is not allowed with a table of tests (which one would it name?)', 2) end
      local tests = f
      if rawget(f, '__isTestSuite') then
         tests = rawget(f, '__tests')
      else
         self:_warning('Should use TestSuite rather than plain lua table: a TestSuite refuses duplicate test names')
      end
      for testName, fn in pairs(tests) do
         if type(fn) == 'table' then error('Nested sets of tests are not supported', 2) end
         self:add(fn, testName)
      end
      return self
   end
   if type(f) ~= 'function' then
      error('Tester:add: a function, a table of functions or a TestSuite expected, got a ' .. torch.type(f), 2)
   end
   if name == '_setUp' or name == '_tearDown' then
      if self[name] then error('Only one ' .. name .. ' function allowed', 2) end
      self[name] = f
      return self
   end
   name = name or 'unknown'
   if self.tests[name] ~= nil then error('Test with name ' .. tostring(name) .. ' already exists!', 2) end
   self.tests[name] = f
   return self
end

function Tester:disable(names)
   if type(names) == 'string' then names = {names} end
   if type(names) ~= 'table' then error('Tester:disable: a test name or a list of names expected', 2) end
   for _, name in ipairs(names) do
      if not self.tests[name] then error("Unrecognized test '" .. tostring(name) .. "'", 2) end
      self.disabledTests[name] = true
   end
   return self
end

-- name -> function of the tests matching any of the Lua patterns (all without).
function Tester:_getTests(patterns)
   if patterns == nil then return self.tests end
   if type(patterns) == 'string' then patterns = {patterns} end
   if type(patterns) ~= 'table' then
      error('Tester:run: a test name, a list of names (Lua patterns) or nil for all tests expected', 3)
   end
   local selected = {}
   for _, pattern in ipairs(patterns) do
      local found = false
      for name, fn in pairs(self.tests) do
         if string.match(name, pattern) then selected[name] = fn; found = true end
      end
      if not found then error("Couldn't find test '" .. tostring(pattern) .. "'", 3) end
   end
   return selected
end

-- ------------------------------------------------------------ running

local function plural(n, word) return n .. ' ' .. word .. (n == 1 and '' or 's') end

local colour = {}
do  -- colours only on a terminal
   local ffi = require 'ffi'
   pcall(ffi.cdef, 'int isatty(int fd);')
   local ok, tty = pcall(function() return ffi.C.isatty(1) == 1 end)
   if ok and tty and os.getenv('TERM') ~= 'dumb' then
      colour = {green = '\27[32m', red = '\27[31m', magenta = '\27[35m', yellow = '\27[33m', cyan = '\27[36m',
                none = '\27[0m'}
   end
end
local function paint(text, c)
   if colour[c] then return colour[c] .. text .. colour.none end
   return text
end

local function sortedNames(tests)
   local names = {}
   for name in pairs(tests) do names[#names + 1] = name end
   table.sort(names, function(a, b) return tostring(a) < tostring(b) end)
   return names
end

-- Run one test protected; record an error entry if it raises.
function Tester:_pcall(fn)
   local before = #self.errors
   local ok, result = xpcall(fn, debug.traceback)
   if not ok then
      self.errors[#self.errors + 1] = self._currentTestName .. '\n Function call failed\n' .. tostring(result) .. '\n'
   end
   return ok, result, ok and #self.errors == before
end

function Tester:_run(tests)
   local names = sortedNames(tests)
   local n = #names
   local counter = '%' .. #tostring(n) .. 'd/' .. n .. ' '
   io.write('Running ' .. plural(n, 'test') .. '\n')
   for i, name in ipairs(names) do
      self._currentTestName = name
      local head = string.format(counter, i) .. tostring(name) .. ' '
      head = head .. string.rep('.', math.max(1, WIDTH - 9 - #head)) .. ' '
      io.write(head .. '[' .. paint('WAIT', 'cyan') .. ']')
      io.flush()
      local skipped, ok, passed = self.disabledTests[name], true, true
      if not skipped then
         if self._setUp then self._setUp(name) end
         if self.rethrow then
            local before = #self.errors
            tests[name]()
            passed = #self.errors == before
         else
            ok, _, passed = self:_pcall(tests[name])
         end
         if self._tearDown then self._tearDown(name) end
      end
      local verdict
      if skipped then verdict = paint('SKIP', 'yellow')
      elseif not ok then self.testError[name] = 1; verdict = paint('ERROR', 'magenta')
      elseif not passed then verdict = paint('FAIL', 'red')
      else verdict = paint('PASS', 'green') end
      io.write('\r' .. head .. '[' .. verdict .. ']\n')
      if ok and passed and not skipped and (self._warningCount[name] or 0) > 0 then
         io.write(string.rep(' ', WIDTH - 10) .. '[' .. paint('+warning', 'yellow') .. ']\n')
      end
      io.flush()
      if self.earlyAbort and not skipped and not (ok and passed) and i < n then
         io.write('Aborting on first error, not all tests have been executed\n')
         break
      end
      collectgarbage()
   end
   self._currentTestName = ''
end

function Tester:_report(tests)
   local ntests, nfail, nerr, nwarn, nskip, asserts = 0, 0, 0, 0, 0, 0
   for name in pairs(tests) do
      ntests = ntests + 1
      asserts = asserts + self.assertionPass[name] + self.assertionFail[name]
      if self.assertionFail[name] > 0 then nfail = nfail + 1 end
      if self.testError[name] > 0 then nerr = nerr + 1 end
      if (self._warningCount[name] or 0) > 0 then nwarn = nwarn + 1 end
      if self.disabledTests[name] then nskip = nskip + 1 end
   end
   nwarn = nwarn + (self._warningCount[''] or 0)  -- warnings outside tests (Tester:add)
   self.countasserts = asserts
   local line = 'Completed ' .. plural(asserts, 'assert') .. ' in ' .. plural(ntests, 'test') .. ' with '
                .. paint(plural(nfail, 'failure'), nfail == 0 and 'green' or 'red') .. ' and '
                .. paint(plural(nerr, 'error'), nerr == 0 and 'green' or 'magenta')
   if nwarn > 0 then line = line .. ' and ' .. paint(plural(nwarn, 'warning'), 'yellow') end
   if nskip > 0 then line = line .. ' and ' .. paint(nskip .. ' disabled', 'yellow') end
   io.write(line .. '\n')
   if self.summaryOnly then return end
   local rule = string.rep('-', WIDTH) .. '\n'
   local first = true
   for _, list in ipairs {self.errors, self.warnings} do
      for _, entry in ipairs(list) do
         if first then io.write(rule); first = false end
         io.write(entry .. '\n' .. rule)
      end
   end
end

-- Run the tests matching `names` (a name/pattern or a list of them; all
-- without), print a line per test and a summary, and raise an error when any
-- test failed or raised, so that a test script exits non-zero.
function Tester:run(names)
   local tests = self:_getTests(names)
   self.assertionPass, self.assertionFail, self.testError = {}, {}, {}
   for name in pairs(tests) do
      self.assertionPass[name], self.assertionFail[name], self.testError[name] = 0, 0, 0
      self._warningCount[name] = 0
   end
   self:_run(tests)
   self:_report(tests)
   for name in pairs(tests) do
      if self.assertionFail[name] > 0 or self.testError[name] > 0 then
         error('An error was found while running tests!', 2)
      end
   end
   return 0
end
