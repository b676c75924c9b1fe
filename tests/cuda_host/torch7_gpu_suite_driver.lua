-- One test of cutorch's test/test.lua, cunn's test.lua or cunn's test_DataParallelTable.lua, unmodified, on the GPU
-- backend (torch7_gpu_suites.py starts one process per test):
--   luatorch th torch7_gpu_suite_driver.lua SUITE FILE NAME|--list OUT [SEED]
-- SUITE cutorch, cunn or cunn-dpt; FILE the suite's extracted test file. --list writes the test names (one per line)
-- and runs nothing; otherwise the test NAME (an exact name: Torch7's Tester takes patterns) runs through the suite's
-- own entry point (cutorch.test / nn.testcuda; test_DataParallelTable.lua runs its Tester itself at its end, which is
-- then given the name) with SEED (default 1234), and OUT gets one line:
-- pass|fail <TAB> assertions passed <TAB> errors and failures <TAB> the error that ended it, if one did.
local suite, file, mode, out, seed = ...
assert(suite == 'cutorch' or suite == 'cunn' or suite == 'cunn-dpt', 'usage: SUITE FILE NAME|--list OUT [SEED]')
seed = tonumber(seed) or 1234
require 'cutorch'
require 'nn'
if suite ~= 'cutorch' then require 'cunn' end
local selfRunning = suite == 'cunn-dpt'   -- the file calls its Tester's run itself

local tester   -- the suite's own Tester, seen when it adds the tests
local add = torch.Tester.add
torch.Tester.add = function(self, ...) tester = self; return add(self, ...) end
local names = {}
if mode == '--list' then
   torch.Tester.run = function(self) for name in pairs(self.tests) do names[#names + 1] = name end end
elseif selfRunning then
   local run = torch.Tester.run
   torch.Tester.run = function(self) return run(self, {'^' .. mode .. '$'}) end
end
local loaded, loadError = true, nil
if selfRunning and mode ~= '--list' then
   torch.manualSeed(seed)
   loaded, loadError = pcall(dofile, file)
else
   dofile(file)
end
local function runSuite(patterns, s)
   if selfRunning then
      if not loaded then error(loadError, 0) end
   elseif suite == 'cutorch' then
      cutorch.test(patterns, s)
   else
      nn.testcuda(patterns, false, nil, s)
   end
end

local f = assert(io.open(out, 'w'))
if mode == '--list' then
   runSuite(nil, seed)
   table.sort(names)
   f:write(table.concat(names, '\n'), '\n')
else
   local ok, err = pcall(runSuite, {'^' .. mode .. '$'}, seed)
   local passed = 0
   for _, n in pairs(tester and tester.assertionPass or {}) do passed = passed + n end
   local errors = tester and #tester.errors or -1
   f:write(string.format('%s\t%d\t%d\t%s\n', (ok and errors == 0) and 'pass' or 'fail', passed, errors,
                         ok and '' or (tostring(err):gsub('%s+', ' '))))
end
f:close()
