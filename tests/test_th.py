"""`luatorch th`: scripts with arguments, -e, errors with tracebacks, the REPL."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def th(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "run.cli", "th", *args], input=stdin, capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_script_gets_arg_like_th(tmp_path):
    script = tmp_path / "s.lua"
    script.write_text("print(arg[0], arg[1], arg[2], #arg, ...)\nprint(torch.typename(torch.Tensor(2)))\n")
    r = th(str(script), "alpha", "7")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == [str(script), "alpha", "7", "2", "alpha", "7"]
    assert lines[1] == "torch.DoubleTensor"


def test_exec_option():
    r = th("-e", "print(torch.LongTensor(3):fill(2):size(1) * 7)")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "21"


def test_lua_error_exits_nonzero_with_traceback(tmp_path):
    script = tmp_path / "bad.lua"
    script.write_text("local function f()\n  torch.FloatTensor(2):copy(torch.FloatTensor(3))\nend\nf()\n")
    r = th(str(script))
    assert r.returncode == 1
    assert "inconsistent tensor size" in r.stderr
    assert "stack traceback" in r.stderr
    assert "bad.lua:2" in r.stderr


def test_syntax_error_and_missing_script(tmp_path):
    script = tmp_path / "syntax.lua"
    script.write_text("x = = 1\n")
    r = th(str(script))
    assert r.returncode == 1 and "syntax.lua:1" in r.stderr
    r = th(str(tmp_path / "nope.lua"))
    assert r.returncode == 1 and "cannot open" in r.stderr


def test_repl_evaluates_expressions_and_statements():
    r = th(stdin="x = 6\nx * 7\nfor i = 1, 2 do\nprint('loop', i)\nend\nerror('oops')\nx + 1\n")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "42" in out
    assert "loop\t1" in out and "loop\t2" in out
    assert "7" in out.split("loop\t2")[1]
    assert "oops" in r.stderr


def test_require_nn_style_packages_resolve_to_lua_dir():
    r = th("-e", "print(package.searchpath('torch', package.path))")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().endswith(os.path.join("torch", "init.lua"))
