"""torch.CmdLine as Torch7 scripts use it (opts.lua files): typed options, boolean flags, positional arguments, the
help and error exits, string() for run folder names, and log() (print teed into a file). Scripts run under
`luatorch th` in a process of their own, since help and errors end the process as Torch7's did."""
import os
import subprocess
import sys

import pytest

from pytorch_bridge import Runtime

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = """
local cmd = torch.CmdLine()
cmd:text('Train a thing')
cmd:text('Options:')
cmd:option('-LR', 0.1, 'learning rate')
cmd:option('-nesterov', false, 'a flag')
cmd:option('-shareGradInput', 'false', 'a string that says false')
cmd:option('-save', 'ck', 'folder')
cmd:argument('-data', 'data folder')
local opt = cmd:parse(arg)
if os.getenv('LOGFILE') then
   if os.getenv('ADDTIME') then cmd:addTime('run', '%Y') end
   if os.getenv('SILENT') then cmd:silent() end
   cmd:log(os.getenv('LOGFILE'), {LR = opt.LR})
   print('after log', 3)
end
io.write(string.format('LR=%s(%s) nesterov=%s share=%s save=%s data=%s\\n', tostring(opt.LR), type(opt.LR),
                       tostring(opt.nesterov), opt.shareGradInput, opt.save, opt.data))
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    p = tmp_path_factory.mktemp("cmdline") / "opts.lua"
    p.write_text(SCRIPT)
    return str(p)


def th(script, *args, env=None):
    return subprocess.run([sys.executable, "-m", "run.cli", "th", script, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("args,want", [
    ([], None),   # the argument is required
    (["d"], "LR=0.1(number) nesterov=false share=false save=ck data=d"),
    (["-LR", "0.5", "d", "-nesterov"], "LR=0.5(number) nesterov=true share=false save=ck data=d"),
    (["d", "-shareGradInput", "true", "-save", "out"], "LR=0.1(number) nesterov=false share=true save=out data=d"),
    (["--LR", "2e-3", "-nesterov", "false", "d"], "LR=0.002(number) nesterov=false share=false save=ck data=d"),
])
def test_parse_converts_and_flips_as_torch7(script, args, want):
    r = th(script, *args)
    if want is None:
        assert r.returncode == 1 and "not enough arguments" in r.stderr
        assert "Usage:" in r.stdout and "<data>" in r.stdout
    else:
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip().splitlines()[-1] == want


@pytest.mark.parametrize("args,message", [
    (["d", "-LR", "fast"], "invalid type for option -LR (should be number)"),
    (["d", "-save"], "missing argument for option -save"),
    (["d", "-nosuch", "1"], "unknown option -nosuch"),
    (["d", "e"], "invalid argument: e"),
])
def test_a_bad_command_line_prints_why_and_the_usage_and_exits_1(script, args, message):
    r = th(script, *args)
    assert r.returncode == 1 and message in r.stderr, (r.returncode, r.stderr)
    assert "learning rate [0.1]" in r.stdout


def test_help_prints_the_usage_and_exits_0(script):
    r = th(script, "-help")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Usage: ") and lines[0].endswith("[options] <data>")
    assert lines[1:3] == ["Train a thing", "Options:"]
    # one column for the names: the widest, -shareGradInput
    assert "  -LR             learning rate [0.1]" in lines
    assert "  -shareGradInput a string that says false [false]" in lines
    assert "  <data>          data folder" in lines


def test_log_tees_print_into_the_file(script, tmp_path):
    log = tmp_path / "run.log"
    r = th(script, "d", "-LR", "3", env={"LOGFILE": str(log)})
    assert r.returncode == 0, r.stderr
    text = [line.rstrip() for line in log.read_text().splitlines()]   # (Torch7's lines end in ' \n')
    assert text[0].startswith("[program started on ") and text[1] == "[command line arguments]"
    assert text[2].split() == ["LR", "3"] and text[3] == "[----------------------]"
    assert text[4].split() == ["after", "log", "3"]
    assert "after log\t3" in r.stdout
    r = th(script, "d", env={"LOGFILE": str(log), "ADDTIME": "1", "SILENT": "1"})
    assert "after log" not in r.stdout and "[program started" not in r.stdout
    last = log.read_text().splitlines()[-1]
    assert last.split()[0].endswith("[run]:") and last.split()[1:] == ["after", "log", "3"]


def test_default_string_and_the_definition_errors():
    rt = Runtime()
    r = rt.eval("""function()
       local cmd = torch.CmdLine()
       cmd:option('-lr', 0.1, 'lr')
       cmd:option('-depth', 20, 'depth')
       cmd:option('-tag', 'x', 'tag')
       cmd:option('-flag', false, 'flag')
       cmd:argument('-data', 'data')
       local d = cmd:default()
       local s = cmd:string('run', {lr = 0.2, depth = 20, tag = 'y', flag = true, data = 'imgs'}, {tag = true})
       local keep = cmd:string('run', {lr = 0.1, depth = 20}, {depth = false})
       local none = cmd:string('run', {lr = 0.1}, {})
       local e1 = select(2, pcall(function() cmd:option('-bad', nil, 'no default') end))
       local e2 = select(2, pcall(function() cmd:option('-bad', 1, 'wrong type', 'string') end))
       return d.lr, d.depth, d.tag, d.flag, d.data, s, keep, none, e1, e2, cmd.options['-lr'].type
    end""")()
    lr, depth, tag, flag, data, s, keep, none, e1, e2, kind = r
    assert (lr, depth, tag, flag, data) == (0.1, 20, "x", False, None)
    assert s == "run,data=imgs,flag=t,lr=0.2"
    assert keep == "run,depth=20" and none == "run"
    assert "option -bad has no default value" in e1 and "option -bad has wrong default type value" in e2
    assert kind == "number"
