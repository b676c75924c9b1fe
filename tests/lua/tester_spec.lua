-- torch.Tester and torch.TestSuite: registry, running, counting, reporting,
-- and every assertion's pass/fail verdict and argument forms.
local spec = require 'spec'

local T = {}

-- Run `tester` with io.write captured; returns ok (run did not raise), the output.
local function runQuiet(tester, names)
   local out = {}
   local write = io.write
   io.write = function(...)
      for i = 1, select('#', ...) do out[#out + 1] = tostring((select(i, ...))) end
   end
   local ok, err = pcall(tester.run, tester, names)
   io.write = write
   return ok, table.concat(out), err
end

-- A tester whose single test `body(tester)` runs; returns its counters after the run.
local function verdict(body)
   local t = torch.Tester()
   t:add(function() body(t) end, 'only')
   local ok, out = runQuiet(t)
   return {ok = ok, pass = t.assertionPass.only, fail = t.assertionFail.only, errors = t.testError.only,
           warnings = t._warningCount.only, out = out, tester = t}
end

local function passes(body, what)
   local v = verdict(body)
   if not (v.ok and v.fail == 0 and v.errors == 0 and v.pass >= 1) then
      error((what or 'assertion') .. ' should pass:\n' .. v.out, 2)
   end
   return v
end

local function fails(body, what)
   local v = verdict(body)
   if v.ok or v.fail ~= 1 or v.errors ~= 0 then error((what or 'assertion') .. ' should fail once:\n' .. v.out, 2) end
   return v
end

function T.loaded_with_torch()
   spec.eq(torch.typename(torch.Tester()), 'torch.Tester')
   spec.eq(type(torch.TestSuite), 'function')
end

function T.suite_refuses_duplicates_and_non_functions()
   local s = torch.TestSuite()
   function s.a() end
   spec.raises(function() function s.a() end end, 'Test a is already defined.')
   spec.raises(function() s.b = 3 end, 'holds only functions')
   spec.raises(function() s.c = {function() end} end, 'Nested tables')
   spec.eq(type(s.a), 'function')
   spec.eq(rawget(s, '__isTestSuite'), true)
end

function T.run_counts_asserts_and_reports()
   local t = torch.Tester()
   local s = torch.TestSuite()
   function s.good() t:assert(true); t:eq(1, 1) end
   function s.bad() t:assert(false, 'the message'); t:assert(true) end
   function s.broken() error('boom') end
   t:add(s)
   local ok, out = runQuiet(t)
   spec.eq(ok, false, 'run raises after failures')
   spec.eq(t.countasserts, 4)
   spec.eq(t.assertionPass.good, 2); spec.eq(t.assertionFail.good, 0)
   spec.eq(t.assertionPass.bad, 1); spec.eq(t.assertionFail.bad, 1)
   spec.eq(t.testError.broken, 1); spec.eq(t.testError.good, 0)
   assert(out:find('Completed 4 asserts in 3 tests with 1 failure and 1 error', 1, true), out)
   assert(out:find('[PASS]', 1, true) and out:find('[FAIL]', 1, true) and out:find('[ERROR]', 1, true), out)
   -- a failure entry: test name, message, then where; an error entry: name, ' Function call failed', traceback
   local failure, err
   for _, e in ipairs(t.errors) do
      if e:match('^bad\n') then failure = e end
      if e:match('^broken\n') then err = e end
   end
   assert(failure and failure:find('the message\nBOOL violation', 1, true), tostring(failure))
   assert(failure:find('tester_spec.lua:%d+'), failure)
   assert(err and err:find('^broken\n Function call failed\n') and err:find('boom', 1, true), tostring(err))
end

function T.run_selects_by_pattern_and_refuses_unknown_names()
   local t = torch.Tester()
   local ran = {}
   for _, name in ipairs {'alpha', 'alphabet', 'beta'} do t:add(function() ran[#ran + 1] = name end, name) end
   local ok = runQuiet(t, '^alpha$')
   assert(ok)
   spec.eq(table.concat(ran, ','), 'alpha')
   ran = {}
   runQuiet(t, {'^alpha', 'beta'})
   table.sort(ran)
   spec.eq(table.concat(ran, ','), 'alpha,alphabet,beta')
   local ok2, _, err = runQuiet(t, 'gamma')
   assert(not ok2 and tostring(err):find("Couldn't find test 'gamma'", 1, true), tostring(err))
end

function T.early_abort_stops_after_the_first_failure()
   for _, abort in ipairs {false, true} do
      local t = torch.Tester()
      local calls = 0
      t:add(function() calls = calls + 1; t:assert(false) end, 'a')
      t:add(function() calls = calls + 1; t:assert(false) end, 'b')
      t:setEarlyAbort(abort)
      local _, out = runQuiet(t)
      spec.eq(calls, abort and 1 or 2)
      spec.eq(out:find('Aborting on first error', 1, true) ~= nil, abort)
   end
end

function T.rethrow_lets_errors_and_failures_out()
   local t = torch.Tester():setRethrowErrors(true)
   t:add(function() error('raised here') end, 'e')
   local ok, _, err = runQuiet(t)
   assert(not ok and tostring(err):find('raised here', 1, true), tostring(err))
   local t2 = torch.Tester():setRethrowErrors(true)
   t2:add(function() t2:assert(false, 'failing assert') end, 'f')
   local ok2, _, err2 = runQuiet(t2)
   assert(not ok2 and tostring(err2):find('failing assert', 1, true), tostring(err2))
end

function T.disable_skips_and_summary_only_hides_sections()
   local t = torch.Tester()
   local ran = {}
   t:add(function() ran.a = true end, 'a')
   t:add(function() ran.b = true; t:assert(false, 'visible only without summaryOnly') end, 'b')
   spec.raises(function() t:disable('nope') end, "Unrecognized test 'nope'")
   t:disable('a')
   local _, out = runQuiet(t)
   spec.eq(ran.a, nil); spec.eq(ran.b, true)
   assert(out:find('[SKIP]', 1, true) and out:find('1 disabled', 1, true), out)
   assert(out:find('visible only without summaryOnly', 1, true), out)
   t:setSummaryOnly(true)
   local _, out2 = runQuiet(t)
   assert(not out2:find('visible only without summaryOnly', 1, true), out2)
end

function T.setup_and_teardown_run_around_each_test()
   local t = torch.Tester()
   local log = {}
   local s = torch.TestSuite()
   function s._setUp(name) log[#log + 1] = 'up:' .. name end
   function s._tearDown(name) log[#log + 1] = 'down:' .. name end
   function s.one() log[#log + 1] = 'one' end
   t:add(s)
   spec.eq(t.tests._setUp, nil, 'set-up is not a test')
   runQuiet(t)
   spec.eq(table.concat(log, ' '), 'up:one one down:one')
   spec.raises(function() t:add(function() end, '_setUp') end, 'Only one _setUp')
end

function T.add_forms()
   local t = torch.Tester()
   spec.raises(function() t:add({{function() end}}) end, 'Nested sets of tests are not supported')
   spec.raises(function() t:add({}, 'name') end, 'a name is not allowed')
   spec.raises(function() t:add(42) end, 'a function, a table of functions or a TestSuite expected')
   t:add(function() end)
   assert(t.tests.unknown, 'an unnamed test is "unknown"')
   spec.raises(function() t:add(function() end) end, 'Test with name unknown already exists!')
   local plain = torch.Tester()
   plain:add({}) -- a plain table works, with a warning
   spec.eq(plain._warningCount[''], 1)
   assert(plain.warnings[1]:find('TestSuite', 1, true))
end

function T.assert_and_ordering_assertions()
   passes(function(t) t:assert(true) end)
   fails(function(t) t:assert(false) end)
   local v = passes(function(t) t:assert(1 == 1, 'with a message') end)
   spec.eq(v.warnings, 0)
   v = verdict(function(t) t:assert({}) end)   -- not a boolean: passes with a warning
   spec.eq(v.warnings, 1)
   local e = verdict(function(t) t:assert(true, 'msg', 'extra') end)
   spec.eq(e.errors, 1, 'extra arguments are an error')
   passes(function(t) t:assertlt(1, 2) end); fails(function(t) t:assertlt(2, 2) end)
   passes(function(t) t:assertle(2, 2) end); fails(function(t) t:assertle(3, 2) end)
   passes(function(t) t:assertgt(3, 2) end); fails(function(t) t:assertgt(2, 2) end)
   passes(function(t) t:assertge(2, 2) end); fails(function(t) t:assertge(1, 2) end)
   passes(function(t) t:asserteq('a', 'a') end); fails(function(t) t:asserteq(1, 2) end)
   passes(function(t) t:assertne(1, 2) end); fails(function(t) t:assertne(1, 1) end)
   v = fails(function(t) t:asserteq(1, 2, 'numbers differ') end)
   assert(v.tester.errors[1]:find('numbers differ\nEQ failed: 1 ~= 2', 1, true), v.tester.errors[1])
end

function T.almost_equal_tolerance_and_message_in_either_order()
   passes(function(t) t:assertalmosteq(1, 1 + 1e-17) end)
   fails(function(t) t:assertalmosteq(1, 1 + 1e-10) end)
   passes(function(t) t:assertalmosteq(1, 1.5, 0.6, 'msg') end)
   passes(function(t) t:assertalmosteq(1, 1.5, 'msg', 0.6) end)
   local e = verdict(function(t) t:assertalmosteq(1, 1, -1) end)
   spec.eq(e.errors, 1, 'a negative tolerance is an error')
end

function T.general_equality_is_deep()
   local one = torch.Tensor {1}
   passes(function(t) t:eq({1, {2, 'x'}, k = one}, {1, {2, 'x'}, k = one:clone()}) end)
   fails(function(t) t:eq({1, 2}, {1, 2, 3}) end)
   fails(function(t) t:eq('1', 1) end)
   fails(function(t) t:eq(one, one + 1e-10) end)
   passes(function(t) t:eq(one, one + 1e-10, 1e-9) end)
   passes(function(t) t:ne(one, torch.Tensor {2}) end)
   fails(function(t) t:eq(torch.FloatStorage {1}, torch.DoubleStorage {1}) end)
   passes(function(t) t:eq(torch.IntStorage {1, 2}, torch.IntStorage {1, 2}) end)
   fails(function(t) t:eq(one, torch.DoubleStorage {1}) end)
   local v = fails(function(t) t:assertTableEq({a = {b = 1}}, {a = {b = 2}}) end)
   assert(v.tester.errors[1]:find('At table location a.b', 1, true), v.tester.errors[1])
   v = fails(function(t) t:assertTableEq({a = 1}, {b = 1}) end)
   assert(v.tester.errors[1]:find('Entry a missing in second table', 1, true), v.tester.errors[1])
   passes(function(t) t:assertTableNe({1}, {2}) end)
   local e = verdict(function(t) t:assertTableEq(1, {}) end)
   spec.eq(e.errors, 1)
end

function T.tensor_equality_sizes_types_tolerance()
   local a = torch.randn(4, 5)
   passes(function(t) t:assertTensorEq(a, a:clone()) end)
   passes(function(t) t:assertTensorEq(a, a + 1e-7, 1e-6) end)
   fails(function(t) t:assertTensorEq(a, a + 1e-5, 1e-6) end)
   passes(function(t) t:assertTensorNe(a, a + 1e-5, 1e-6) end)
   fails(function(t) t:assertTensorEq(a, a:float()) end)                         -- types differ
   passes(function(t) t:assertTensorEq(torch.ByteTensor {200}, torch.ByteTensor {200}) end)
   fails(function(t) t:assertTensorEq(torch.ByteTensor {0}, torch.ByteTensor {255}, 254) end)
   passes(function(t) t:assertTensorEq(a:t(), a:t():contiguous()) end)          -- non-contiguous
   passes(function(t) t:assertTensorEq(torch.Tensor(), torch.Tensor()) end)
   -- same elements, other shape: equal by default, with a warning; unequal when dims count
   local v = passes(function(t) t:assertTensorEq(torch.Tensor {{1, 2}}, torch.Tensor {1, 2}) end)
   spec.eq(v.warnings, 1)
   fails(function(t)
      t._assertTensorEqIgnoresDims = false
      t:assertTensorEq(torch.Tensor {{1, 2}}, torch.Tensor {1, 2})
   end)
   fails(function(t) t:eq(torch.Tensor {{1, 2}}, torch.Tensor {1, 2}) end)   -- :eq always compares sizes
   local e = verdict(function(t) t:assertTensorEq(a, 2) end)
   spec.eq(e.errors, 1)
   assert(e.tester.errors[1]:find('Second argument should be a Tensor', 1, true))
end

function T.error_assertions()
   local function bad() error('kaboom 42') end
   local function good() end
   passes(function(t) t:assertError(bad) end); fails(function(t) t:assertError(good) end)
   passes(function(t) t:assertNoError(good) end); fails(function(t) t:assertNoError(bad) end)
   passes(function(t) t:assertErrorPattern(bad, 'kaboom %d+') end)
   fails(function(t) t:assertErrorPattern(bad, 'other') end)
   local obj = {}
   passes(function(t) t:assertErrorMsg(function() error(obj) end, obj) end)
   fails(function(t) t:assertErrorMsg(bad, 'kaboom 42') end)   -- the message carries a position
   passes(function(t) t:assertErrorObj(function() error({code = 7}) end, function(e) return e.code == 7 end) end)
end

function T.hooks_can_be_overridden()
   -- scripts replace _success/_failure to inspect assertions (torch7's test_Tester does)
   local t = torch.Tester()
   t._success = function() return true, 'seen' end
   t._failure = function(_, message) return false, message end
   local ok, msg = t:assert(true)
   spec.eq(ok, true); spec.eq(msg, 'seen')
   ok, msg = t:asserteq(1, 2, 'why')
   spec.eq(ok, false)
   assert(msg:find('why', 1, true))
end

return T
