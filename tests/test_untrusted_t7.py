"""Untrusted .t7 files: a file may hold Lua functions, whose bytecode LuaJIT loads unverified. `luatorch
train` refuses them in every file it is given (--model, -retrain, --resume's checkpoints, -optimState)
unless --trust-model; LUATORCH_T7_FUNCTIONS=0 turns them off for every torch.load in the process; plain
torch.load keeps Torch7's behaviour. Mutated files holding functions, read the untrusted way: every one is
refused or loads without its functions, none runs code."""
import os
import subprocess
import sys

import numpy as np
import pytest

from test_t7_fuzz import mutate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = ["--depth", "8", "--workers", "1", "--max-iters", "1", "--val-iters", "1", "--batch-size", "8"]
SMALL = SHAPE + ["--epochs", "1"]

# A model for the built-in 28x28 set holding a function that leaves a mark if it ever runs.
MAKE_MODEL = r"""
local path, mark = ...
local m = nn.Sequential():add(nn.View(784)):add(nn.Linear(784, 10)):add(nn.LogSoftMax())
m.hook = loadstring("io.open('" .. mark .. "', 'w'):close()")
torch.save(path, m)
"""


def run(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "run.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          env=e, timeout=600)


@pytest.fixture
def model_with_function(rt, tmp_path):
    path, mark = str(tmp_path / "fn.t7"), str(tmp_path / "RAN")
    rt.execute("require 'nn'")
    rt.call(rt.eval("function(src, ...) return loadstring(src)(...) end"), MAKE_MODEL, path, mark)
    return path, mark


def test_train_refuses_a_model_with_functions_unless_trusted(model_with_function, tmp_path):
    path, mark = model_with_function
    r = run("train", "--model", path, "--save", str(tmp_path / "a"), *SMALL)
    assert r.returncode != 0
    line = [ln for ln in r.stderr.splitlines() if "holds Lua functions" in ln]
    assert line and path in line[0] and "--trust-model" in line[0], r.stderr[-2000:]
    r = run("train", "--model", path, "--trust-model", "--save", str(tmp_path / "b"), *SMALL)
    assert r.returncode == 0, r.stderr[-2000:]
    assert not os.path.exists(mark)  # loading never runs the function


def test_resume_refuses_checkpoints_with_functions(rt, tmp_path):
    save = str(tmp_path / "run")
    r = run("train", "--save", save, *SMALL)
    assert r.returncode == 0, r.stderr[-2000:]
    # a tampered optimState: the state table now carries a function
    rt.call(rt.eval("""function(dir)
       local latest = torch.load(dir .. '/latest.t7')
       local s = torch.load(dir .. '/' .. latest.optimFile)
       s.evil = function() end
       torch.save(dir .. '/' .. latest.optimFile, s)
    end"""), save)
    r = run("train", "--resume", save, *SHAPE, "--epochs", "2")
    assert r.returncode != 0 and "holds Lua functions" in r.stderr and "--trust-model" in r.stderr, r.stderr[-2000:]


def test_environment_setting_turns_functions_off_everywhere(model_with_function):
    path, _ = model_with_function
    code = "local m = torch.load('%s'); print(type(m.hook))" % path
    r = run("th", "-l", "nn", "-e", code)
    assert r.returncode == 0 and r.stdout.strip() == "function", r.stderr  # Torch7's behaviour by default
    r = run("th", "-l", "nn", "-e", code, env={"LUATORCH_T7_FUNCTIONS": "0"})
    assert r.returncode != 0 and "reading functions is disabled (LUATORCH_T7_FUNCTIONS=0)" in r.stderr, r.stderr


def test_mutated_files_with_functions_never_run_code(rt, rng, model_with_function, tmp_path):
    path, mark = model_with_function
    data = open(path, "rb").read()
    inputs = [mutate(data, rng) for _ in range(3000)]
    fuzz = rt.eval(r"""function(inputs, mark)
       local refused, loaded, withFunctions = 0, 0, 0
       for i = 1, #inputs do
          local ok, res = pcall(torch.deserialize, inputs[i], 'binary', true, {functions = false})
          if ok then
             loaded = loaded + 1
             if type(res) == 'table' and type(res.hook) == 'function' then withFunctions = withFunctions + 1 end
          else
             refused = refused + 1
          end
       end
       return refused, loaded, withFunctions
    end""")
    refused, loaded, with_functions = rt.call(fuzz, rt.table(*inputs), mark)
    assert refused + loaded == len(inputs) and refused > 2000
    assert with_functions == 0
    assert not os.path.exists(mark)
