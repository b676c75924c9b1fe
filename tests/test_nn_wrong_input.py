"""Every nn class given the wrong kind of input — a table where it takes a tensor, a tensor where it takes a
table, a LongTensor, an empty tensor, and a table as gradOutput or target — raises a Lua error; none crashes
the process (a Lua table passed to a C kernel arrives there as a NULL tensor). The classes and their good
inputs are test_nn_every_class's, so a new class is covered when it gets its entry there."""
import os
import subprocess
import sys

from test_nn_every_class import CASES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = r"""
require 'nn'
local cases = loadstring(io.open(arg[1]):read('*a'))()
local names = {}
for name in pairs(cases) do names[#names + 1] = name end
table.sort(names)
local function try(name, what, f)
   io.stdout:write(name, ' ', what, '\n')
   io.stdout:flush()
   local ok = pcall(f)
   return ok
end
local count = 0
local from = tonumber(arg[2]) or 1
for k, name in ipairs(names) do if k >= from then
   io.stdout:write('#', k, '\n')
   torch.manualSeed(1)
   local m, input, target = cases[name]()
   local bad = {}
   if torch.isTensor(input) then
      bad = {{'a table', {input}}, {'a LongTensor', input:long()}, {'an empty tensor', input.new()}}
   else
      bad = {{'a tensor', torch.randn(3, 5)}, {'a table of tables', {{input}}}}
   end
   for _, b in ipairs(bad) do
      local mm = m:clone()
      if target ~= nil then
         try(name, 'forward with ' .. b[1], function() return mm:forward(b[2], target) end)
      else
         try(name, 'forward with ' .. b[1], function() return mm:forward(b[2]) end)
      end
      count = count + 1
   end
   local mm = m:clone()
   if target ~= nil then
      try(name, 'target as a table', function() return mm:forward(input, {target}) end)
      try(name, 'backward with a table target', function() return mm:backward(input, {target}) end)
      count = count + 2
   elseif torch.isTensor(input) then
      local ok, out = pcall(function() return mm:forward(input) end)
      if ok and torch.isTensor(out) then
         try(name, 'backward with a table gradOutput', function() return mm:backward(input, {out:clone()}) end)
         count = count + 1
      end
   end
end end
print('calls: ' .. count)
"""


def test_wrong_inputs_raise_errors_not_crashes(tmp_path):
    cases, script = tmp_path / "cases.lua", tmp_path / "wrong.lua"
    cases.write_text(CASES)
    script.write_text(SCRIPT)
    crashes, start, calls = [], 1, 0
    while True:  # after a crash, go on with the next class, so that one run lists every crash
        r = subprocess.run([sys.executable, "-m", "run.cli", "th", str(script), str(cases), str(start)],
                           capture_output=True, text=True, cwd=ROOT, timeout=600)
        lines = r.stdout.strip().splitlines()
        if r.returncode == 0:
            calls += int(lines[-1].split()[1])
            break
        where = [ln for ln in lines if ln.startswith("#")]
        assert where, "the script failed before any class: %s" % r.stderr[-2000:]
        crashes.append("%s (exit %d)" % (lines[-1], r.returncode))
        start = int(where[-1][1:]) + 1
    assert not crashes, "crashes:\n" + "\n".join(crashes)
    assert calls > 300
