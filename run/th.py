"""`luatorch th`: Torch7's `th` — run Lua scripts with torch loaded, or a REPL.

    luatorch th script.lua a b c     arg = {[0]='script.lua', 'a', 'b', 'c'}
    luatorch th -e 'print(torch.randn(2, 2))'
    luatorch th -l nn script.lua     require a package first
    luatorch th                      interactive (line editing through readline)
    luatorch th -i script.lua        run, then stay interactive

A Lua error ends the command with status 1 and the Lua traceback on stderr.
"""
import os
import sys

from pytorch_bridge import LuaError, Runtime, lua_dir

USAGE = __doc__.strip()


def _parse(argv):
    opts = {"exec": [], "libs": [], "interactive": False, "script": None, "args": []}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        elif a == "-e":
            if i + 1 >= len(argv):
                raise SystemExit("luatorch th: -e needs a Lua statement")
            opts["exec"].append(argv[i + 1])
            i += 1
        elif a.startswith("-l"):
            name = a[2:] or (argv[i + 1] if i + 1 < len(argv) else None)
            if not name:
                raise SystemExit("luatorch th: -l needs a package name")
            if not a[2:]:
                i += 1
            opts["libs"].append(name)
        elif a == "-i":
            opts["interactive"] = True
        elif a == "--":
            rest = argv[i + 1:]
            if rest:
                opts["script"], opts["args"] = rest[0], rest[1:]
            break
        elif a.startswith("-") and a != "-":
            from run.cli import suggestion, usage_error

            usage_error("luatorch th", "unknown option %s%s; see luatorch th --help" % (
                a, suggestion(a, ["-e", "-l", "-i", "-h", "--help", "--"])))
        else:
            opts["script"], opts["args"] = a, argv[i + 1:]
            break
        i += 1
    return opts


def _report(err, th_env=None):
    sys.stdout.flush()
    msg = err.lua_message if isinstance(err, LuaError) else str(err)
    if th_env is not None and isinstance(err, LuaError):
        msg = th_env.explain(msg, err.lua_source)  # e.g. a class luatorch's nn lacks, by name
    tb = err.lua_traceback if isinstance(err, LuaError) else ""
    print("luatorch th: " + msg, file=sys.stderr)
    if tb:
        print(tb.strip("\n"), file=sys.stderr)


# Lua side of the REPL: compile a line as an expression first (to print its
# values), then as a statement; tell "incomplete" apart from real errors.
_REPL_LUA = r"""
local M = {}
function M.compile(src)
   local f, err = loadstring('return ' .. src, '=stdin')
   if f then return f, false end
   f, err = loadstring(src, '=stdin')
   if f then return f, false end
   if err:match("'<eof>'") or err:match('<eof>$') or err:match('near <eof>') then return nil, 'incomplete' end
   return nil, err
end
function M.show(...)
   for i = 1, select('#', ...) do
      local v = select(i, ...)
      io.write(tostring(v), '\n')
   end
   io.flush()
end
return M
"""


def _repl(rt, th_env=None):
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    helper = rt.execute(_REPL_LUA)
    print("luatorch th — Torch7-compatible LuaJIT (%s). Ctrl-D to quit." % rt.eval("jit.version"))
    buf = ""
    while True:
        try:
            line = input("th> " if not buf else "..> ")
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            buf = ""
            continue
        buf = buf + "\n" + line if buf else line
        if not buf.strip():
            buf = ""
            continue
        fn, err = rt.call(helper.compile, buf)
        if err == "incomplete":
            continue
        src, buf = buf, ""
        if err:
            print(err, file=sys.stderr)
            continue
        try:
            res = rt.call(fn)
            if res is not None:
                res = res if isinstance(res, tuple) else (res,)
                rt.call(helper.show, *res)
        except LuaError as e:
            _report(e, th_env)


def run(argv):
    opts = _parse(argv)
    rt = Runtime()
    from pytorch_bridge.host import preload

    preload(rt)  # require 'luatorch.host': data, rank/world and logs for training scripts
    os.environ.setdefault("LUATORCH_PYTHON", sys.executable)  # for Lua that starts Python tools (display.start)
    th_env = rt.require("luatorch.th")  # th's globals (paths, sys, xlua, ...) and th's require
    g = rt.globals
    script = opts["script"]
    if script and script != "-" and not os.path.isfile(script):
        bundled = os.path.join(lua_dir(), "scripts", script)
        if os.path.isfile(bundled):  # scripts shipped with luatorch run by name: `luatorch th train.lua`
            script = bundled
    argtable = rt.table()
    argtable[-1] = "luatorch th"
    if script:
        argtable[0] = script
    for k, a in enumerate(opts["args"], 1):
        argtable[k] = a
    g.arg = argtable
    try:
        for lib in opts["libs"]:
            rt.require(lib)
        for code in opts["exec"]:
            rt.execute(code, "=(command line)")
        if script:
            if script == "-":
                rt.execute(sys.stdin.read(), "=stdin")
            else:
                if not os.path.isfile(script):
                    print("luatorch th: cannot open %s" % script, file=sys.stderr)
                    return 1
                rt.execute("local f = assert(loadfile(%s)); return f(unpack(arg, 1, #arg))" % _lua_string(script),
                           "=" + script)
    except LuaError as e:
        _report(e, th_env)
        return 1
    finally:
        sys.stdout.flush()
    interactive = opts["interactive"] or (not script and not opts["exec"])
    if interactive:
        return _repl(rt, th_env)
    return 0


def _lua_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def main(argv=None):
    return run(list(sys.argv[1:] if argv is None else argv))


DEMO_USAGE = """luatorch demo: a short tour of the torch package (tensors, math, BLAS, .t7 files), the script
lua/demos/tour.lua run as `luatorch th` runs scripts; it takes no options."""


def demo(argv=None):
    """Run the packaged tour script."""
    argv = list(argv or [])
    if any(a in ("-h", "--help", "-help") for a in argv):
        print(DEMO_USAGE)
        return 0
    if argv:
        from run.cli import usage_error

        usage_error("luatorch demo", "takes no arguments (got %s); see luatorch demo --help" % " ".join(argv))
    return run([os.path.join(lua_dir(), "demos", "tour.lua")])
