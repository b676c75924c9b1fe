-- One test of cutorch's test/test.lua or cunn's test.lua, unmodified, on the GPU backend (torch7_gpu_suites.py
-- starts one process per test):
--   luatorch th torch7_gpu_suite_driver.lua SUITE FILE NAME|--list OUT [SEED]
-- SUITE cutorch or cunn; FILE the suite's extracted test file. --list writes the test names (one per line) and runs
-- nothing; otherwise the test NAME (an exact name: Torch7's Tester takes patterns) runs through the suite's own
-- entry point (cutorch.test / nn.testcuda) with SEED (default 1234), and OUT gets one line:
-- pass|fail <TAB> assertions passed <TAB> errors and failures <TAB> the error that ended it, if one did.
local suite, file, mode, out, seed = ...
assert(suite == 'cutorch' or suite == 'cunn', 'usage: SUITE FILE NAME|--list OUT [SEED]')
seed = tonumber(seed) or 1234
require 'cutorch'
require 'nn'
if suite == 'cunn' then require 'cunn' end

local tester   -- the suite's own Tester, seen when it adds the tests
local add = torch.Tester.add
torch.Tester.add = function(self, ...) tester = self; return add(self, ...) end
local names = {}
if mode == '--list' then
   torch.Tester.run = function(self) for name in pairs(self.tests) do names[#names + 1] = name end end
end
dofile(file)
local function runSuite(patterns, s)
   if suite == 'cutorch' then cutorch.test(patterns, s) else nn.testcuda(patterns, false, nil, s) end
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
