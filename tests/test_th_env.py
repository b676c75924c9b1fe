"""What a Torch7 program finds under `luatorch th`, as under Torch7's th: its own modules before
luatorch's (a local train.lua), the Lua 5.2 library of Torch7's LuaJIT build, the packages th loaded
(paths, sys, xlua) and lfs (checked against Python's os), torch.class/setmetatable/pointer/data,
memory-mapped storages, and a clear message for an nn class luatorch lacks."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from pytorch_bridge import LuaError
from pytorch_bridge.runtime import SYSTEM_LUA_DIRS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def th(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "run.cli", "th", *args], capture_output=True, text=True,
                          cwd=str(cwd), timeout=120, stdin=subprocess.DEVNULL)


def lua_str(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


# ------------------------------------------------------------------ a Torch7-style program

PROGRAM = r"""
require 'torch'
local train = require 'train'            -- the program's own train.lua, not luatorch's package
assert(type(train.step) == 'function', 'require found another train module than ./train.lua')
local doubled, five = table.unpack({train.step(21), 5})
local out = paths.concat(paths.cwd(), 'snapshots')
assert(paths.mkdir(out) and paths.dirp(out), 'paths.mkdir')
local t0 = sys.clock()
for i = 1, 3 do
   torch.save(paths.concat(out, 'model_' .. i .. '.t7'), torch.Tensor(i):fill(i))
   xlua.progress(i, 3)
end
local names = {}
for name in lfs.dir(out) do
   if name:match('%.t7$') then names[#names + 1] = name end
end
table.sort(names)
print('step', doubled, five)
print('saved', table.concat(names, ','))
print('clock', sys.clock() >= t0)
print('ext', paths.extname(names[1]), paths.basename(names[1], 't7'))
"""


def test_torch7_program_with_a_local_train_module(tmp_path):
    (tmp_path / "train.lua").write_text("local M = {}\nfunction M.step(x) return 2 * x end\nreturn M\n")
    (tmp_path / "main.lua").write_text(PROGRAM)
    r = th("main.lua", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "step\t42\t5" in lines
    assert "saved\tmodel_1.t7,model_2.t7,model_3.t7" in lines
    assert "clock\ttrue" in lines
    assert "ext\tt7\tmodel_1" in lines
    assert "3/3" in r.stdout and "[" in r.stdout, "xlua.progress draws its bar"
    assert sorted(os.listdir(tmp_path / "snapshots")) == ["model_1.t7", "model_2.t7", "model_3.t7"]


def test_program_modules_are_found_next_to_the_script_from_elsewhere(tmp_path):
    prog = tmp_path / "prog"
    prog.mkdir()
    (prog / "helpers.lua").write_text("return {answer = 6 * 7}\n")
    (prog / "lib").mkdir()
    (prog / "lib" / "init.lua").write_text("return {name = 'lib'}\n")
    (prog / "main.lua").write_text(
        "local h = require 'helpers'\nlocal h2 = require './helpers'\nlocal lib = require './lib'\n"
        "print(h.answer, h2.answer, lib.name)\n"
        "local ok, err = pcall(require, 'no_such_module_here')\nprint(ok, err:match(\"module 'no_such_module_here' not found\") ~= nil)\n")
    r = th(str(prog / "main.lua"), cwd=ROOT)   # run from another folder
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["42\t42\tlib", "false\ttrue"]


def test_missing_nn_class_is_named_and_existence_tests_still_work(tmp_path):
    script = tmp_path / "net.lua"
    script.write_text("require 'nn'\n"
                      "local conv = nn.NoSuchConvolution or nn.SpatialConvolution\n"
                      "if nn.NoSuchConvolution then print('has it') else print('not there') end\n"
                      "print(torch.typename(conv(1, 1, 3, 3)))\n"
                      "local m = nn.Sequential():add(nn.NoSuchLayerXYZ())\n")
    r = th(str(script))
    assert r.returncode == 1
    assert r.stdout.splitlines() == ["not there", "nn.SpatialConvolution"]
    first = r.stderr.splitlines()[0]
    assert "net.lua:5: nn.NoSuchLayerXYZ: no such class in luatorch's nn (it has " in first, first
    assert "Sequential" in first and "attempt to call" not in first


def test_other_nil_calls_keep_lua_messages(tmp_path):
    script = tmp_path / "other.lua"
    script.write_text("local t = {}\nt.Missing()\n")
    r = th(str(script))
    assert r.returncode == 1 and "attempt to call field 'Missing' (a nil value)" in r.stderr


# ------------------------------------------------------------------ the Lua 5.2 library

def test_lua52_library_of_torch7s_luajit(rt, tmp_path):
    rt.execute("""
        local a, b, c = table.unpack({1, 2, 3})
        assert(a == 1 and c == 3 and table.unpack == unpack)
        local p = table.pack(1, nil, 3)
        assert(p.n == 3 and p[3] == 3)
        assert(rawlen({1, 2}) == 2 and rawlen('abc') == 3)
        assert(not pcall(rawlen, 5))
        assert(package.searchers == package.loaders)
        local proxy = setmetatable({}, {__pairs = function(t) return function(_, k) if not k then return 1, 'one' end end, t, nil end,
                                        __ipairs = function(t) return function(_, i) if i == 0 then return 1, 'first' end end, t, 0 end})
        for k, v in pairs(proxy) do assert(k == 1 and v == 'one') end
        for i, v in ipairs(proxy) do assert(i == 1 and v == 'first') end
        local n = 0
        for k, v in pairs({x = 1, y = 2}) do n = n + v end
        assert(n == 3, 'plain pairs unchanged')
        assert(io.write('') == io.stdout, 'io.write returns the file')
        local ok, how, code = os.execute('exit 3')
        assert(ok == nil and how == 'exit' and code == 3)
        ok, how, code = os.execute('true')
        assert(ok == true and how == 'exit' and code == 0)
        assert(os.execute() == true)
        local t = {}
        assert(debug.setmetatable(t, {}) == t)
    """)
    out = tmp_path / "w.txt"
    rt.execute("local f = assert(io.open(%s, 'w')); f:write('a'):write('b', 'c'); f:close()" % lua_str(out))
    assert out.read_text() == "abc"


def test_require_searches_the_current_folder_first(rt):
    path = rt.eval("package.path").split(";")
    assert path[:2] == ["./?.lua", "./?/init.lua"]
    lua = path.index(os.path.join(rt.eval("paths.install_lua_path"), "?.lua"))
    assert all(path.index(os.path.join(d, "?.lua")) > lua for d in SYSTEM_LUA_DIRS)


# ------------------------------------------------------------------ torch's class helpers

def test_class_setmetatable_pointer_data(rt):
    rt.execute("""
        local Base, none = torch.class('envtest.Base')
        assert(none == nil and torch.getmetatable('envtest.Base') == Base)
        function Base:__init(x) self.x = x end
        local Child, parent = torch.class('envtest.Child', 'envtest.Base')
        assert(parent == Base)
        local c = Child.new(5)
        assert(torch.typename(c) == 'envtest.Child' and c.x == 5, 'Class.new constructs')
        assert(envtest.Child(6).x == 6)
        local plain = torch.setmetatable({x = 1}, 'envtest.Child')
        assert(torch.typename(plain) == 'envtest.Child' and torch.isTypeOf(plain, 'envtest.Base'))
        assert(not pcall(torch.setmetatable, {}, 'envtest.Nope'))
        -- pointers: identity of tables/functions/instances, strings, storages shared by handles
        local t = {}
        assert(torch.pointer(t) == torch.pointer(t) and torch.pointer(t) ~= torch.pointer({}))
        assert(type(torch.pointer(c)) == 'number', 'a class instance (with __tostring) has a pointer')
        assert(torch.pointer(c) ~= torch.pointer(envtest.Child(1)))
        assert(type(torch.pointer(print)) == 'number' and type(torch.pointer('abc')) == 'number')
        local x = torch.FloatTensor(3)
        assert(torch.pointer(x:storage()) == torch.pointer(x:storage()))
        assert(not pcall(torch.pointer, 12))
        local ffi = require 'ffi'
        assert(torch.data(x) == x:data() and tonumber(torch.data(x, true)) == tonumber(ffi.cast('intptr_t', x:data())))
        assert(x:cdata().ndim == 1 and x:cdata().size[0] == 3, 'cdata is the C struct')
        assert(x:storage():cdata().size == 3)
        assert(tonumber(torch.cdata(x, true)) == torch.pointer(x))
    """)


# ------------------------------------------------------------------ memory-mapped storages

def test_shared_file_storage_maps_the_file(rt, tmp_path):
    path = tmp_path / "floats.bin"
    rt.execute("""
        local s = torch.FloatStorage(%s, true, 10)
        assert(s:size() == 10)
        torch.FloatTensor(s):copy(torch.range(1, 10))
        local again = torch.FloatStorage(%s, true, 10)
        assert(again[7] == 7, 'a second mapping sees the writes')
        again[7] = -1
        assert(s[7] == -1)
        assert(not pcall(s.resize, s, 20), 'a mapped storage cannot be resized')
    """ % (lua_str(path), lua_str(path)))
    data = np.fromfile(path, np.float32)
    np.testing.assert_array_equal(data, [1, 2, 3, 4, 5, 6, -1, 8, 9, 10])


def test_private_mapping_reads_a_file_without_writing_it(rt, tmp_path):
    path = tmp_path / "doubles.bin"
    want = np.arange(12, dtype=np.float64) / 3
    want.tofile(path)
    got = rt.call(rt.eval("""function(p)
        local s = torch.DoubleStorage(p)      -- size 0: the whole file
        local t = torch.DoubleTensor(s):clone()
        s[1] = 100                            -- a private copy-on-write page
        return t, s:size()
    end"""), str(path))
    np.testing.assert_array_equal(rt.to_numpy(got[0]), want)
    assert got[1] == 12
    np.testing.assert_array_equal(np.fromfile(path, np.float64), want)
    with pytest.raises(LuaError, match="smaller than"):
        rt.execute("torch.DoubleStorage(%s, false, 100)" % lua_str(path))
    with pytest.raises(LuaError, match="cannot open the file"):
        rt.execute("torch.DoubleStorage(%s)" % lua_str(tmp_path / "missing.bin"))


@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm (POSIX shared memory) on this system")
def test_shared_memory_storage_lives_with_the_storage(rt):
    name = "luatorch_test_%d_%d" % (os.getpid(), time.monotonic_ns())
    shm = os.path.join("/dev/shm", name)
    rt.execute("shared_storage = torch.IntStorage(%s, true, 6, true):fill(9)" % lua_str(name))
    assert os.path.getsize(shm) == 24
    assert np.all(np.fromfile(shm, np.int32) == 9)
    rt.execute("shared_storage = nil; collectgarbage(); collectgarbage()")
    assert not os.path.exists(shm)


# ------------------------------------------------------------------ lfs, paths, sys, xlua

def test_lfs_against_os(rt, tmp_path):
    (tmp_path / "f.txt").write_text("hello")
    (tmp_path / "sub").mkdir()
    os.symlink("f.txt", tmp_path / "link")
    attrs = rt.call(rt.eval("function(p) return lfs.attributes(p) end"), str(tmp_path / "f.txt"))
    st = os.stat(tmp_path / "f.txt")
    assert attrs["mode"] == "file" and attrs["size"] == 5 and attrs["ino"] == st.st_ino and attrs["dev"] == st.st_dev
    assert attrs["modification"] == int(st.st_mtime) and attrs["nlink"] == st.st_nlink
    assert attrs["permissions"] == "".join(c if st.st_mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
    names = rt.call(rt.eval("function(p) local t = {} for n in lfs.dir(p) do t[#t + 1] = n end return t end"),
                    str(tmp_path))
    assert sorted(names.values()) == sorted(os.listdir(tmp_path) + [".", ".."])
    rt.execute("""
        local base = ...
    """.replace("...", lua_str(tmp_path)))
    checks = rt.call(rt.eval("""function(base)
        local r = {}
        r.sub = lfs.attributes(base .. '/sub', 'mode')
        r.link = lfs.symlinkattributes(base .. '/link', 'mode')
        r.target = lfs.symlinkattributes(base .. '/link').target
        r.followed = lfs.attributes(base .. '/link', 'mode')
        local ok, msg, code = lfs.attributes(base .. '/none')
        r.missing = tostring(ok) .. ' ' .. tostring(code)
        r.mkdir = lfs.mkdir(base .. '/new')
        r.mkdir_again = select(3, lfs.mkdir(base .. '/new'))
        r.rmdir = lfs.rmdir(base .. '/new')
        r.touch = lfs.touch(base .. '/f.txt', 1000000, 2000000)
        local old = lfs.currentdir()
        lfs.chdir(base .. '/sub'); r.cwd = lfs.currentdir(); lfs.chdir(old)
        r.back = lfs.currentdir() == old
        r.dir_error = select(2, pcall(lfs.dir, base .. '/none'))
        r.link_made = lfs.link(base .. '/f.txt', base .. '/hard')
        return r
    end"""), str(tmp_path))
    assert checks["sub"] == "directory" and checks["link"] == "link" and checks["followed"] == "file"
    assert checks["target"] == "f.txt" and checks["missing"] == "nil 2"
    assert checks["mkdir"] is True and checks["mkdir_again"] == 17 and checks["rmdir"] is True
    assert checks["touch"] is True and os.stat(tmp_path / "f.txt").st_mtime == 2000000
    assert os.stat(tmp_path / "f.txt").st_atime == 1000000
    assert checks["cwd"] == str(tmp_path / "sub") and checks["back"] is True
    assert "cannot open" in checks["dir_error"]
    assert checks["link_made"] is True and os.stat(tmp_path / "hard").st_ino == st.st_ino


@pytest.mark.parametrize("path", ["/a/b/c.txt", "a/b/", "c.txt", "/", "//x//y//", "a.b/c", "/x/.hidden",
                                  "dir.d/file.tar.gz", ""])
def test_paths_names_like_os_path(rt, path):
    f = rt.eval("function(p) return paths.dirname(p), paths.basename(p), paths.extname(p) end")
    dirname, basename, ext = rt.call(f, path)
    trimmed = path.rstrip("/") or path
    want_dir = os.path.dirname(trimmed).rstrip("/") or ("/" if trimmed.startswith("/") else ".")
    assert dirname == want_dir
    want_base = os.path.basename(trimmed) if trimmed != "/" else "/"
    assert basename == want_base
    root, e = os.path.splitext(want_base)
    assert ext == (e[1:] if e else (None if "." not in want_base else want_base.rsplit(".", 1)[1]))


def test_paths_concat_files_and_dirs(rt, tmp_path):
    (tmp_path / "a.t7").write_text("")
    (tmp_path / "b.txt").write_text("")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x").write_text("")
    r = rt.call(rt.eval("""function(base)
        local r = {}
        r.concat = paths.concat(base, 'd', '..', './d/x')
        r.noarg = paths.concat()
        r.abs = paths.concat('rel', '/abs/p', 'q')
        r.filep, r.dirp = paths.filep(base .. '/a.t7'), paths.dirp(base .. '/d')
        r.notfile = paths.filep(base .. '/d')
        local function collect(it) local t = {} for n in it do t[#t + 1] = n end table.sort(t) return table.concat(t, ',') end
        r.files = collect(paths.files(base, '%.t7$'))
        r.iterfiles = collect(paths.iterfiles(base))
        r.iterdirs = collect(paths.iterdirs(base))
        r.dir = #paths.dir(base)
        r.nodir = paths.dir(base .. '/none') == nil
        r.rmall_refused = paths.rmall(base .. '/d') == nil
        r.rmall = paths.rmall(base .. '/d', 'yes')
        r.gone = not paths.dirp(base .. '/d')
        r.sys = (paths.uname())
        return r
    end"""), str(tmp_path))
    assert r["concat"] == os.path.join(str(tmp_path), "d", "x")
    assert r["noarg"] == os.getcwd()
    assert r["abs"] == "/abs/p/q"
    assert r["filep"] is True and r["dirp"] is True and r["notfile"] is False
    assert r["files"] == "a.t7" and r["iterfiles"] == "a.t7,b.txt" and r["iterdirs"] == "d"
    assert r["dir"] == 5 and r["nodir"] is True
    assert r["rmall_refused"] is True and r["rmall"] is True and r["gone"] is True
    assert r["sys"] == os.uname().sysname


def test_paths_mkdir_makes_parents_and_answers_as_torch7(rt, tmp_path):
    """Torch7's paths.mkdir made the missing parents first (pix2pix's test.lua writes into
    results/<name>/<epoch>_net_G_val/images/... on a fresh clone) and answered true, or nil, 'PATH: reason', errno;
    rmdir likewise. The reasons and numbers are the C library's, as Python's os module gives them."""
    import errno

    deep = str(tmp_path / "results" / "name" / "3_net_G_val" / "images")
    got = rt.call(rt.eval("""function(deep, top)
        local r = {paths.mkdir(deep)}
        local again = {paths.mkdir(deep)}
        local busy = {paths.rmdir(top)}
        local file = top .. '/plain'
        io.open(file, 'w'):close()
        local under = {paths.mkdir(file .. '/sub')}
        return r[1], paths.dirp(deep), again[1], again[2], again[3], busy[2], busy[3], under[1], under[3]
    end"""), deep, str(tmp_path / "results"))
    made, isdir, again, message, code, busy_message, busy_code, under, under_code = got
    assert made is True and isdir is True and os.path.isdir(deep)
    assert again is None and code == errno.EEXIST and message == "%s: %s" % (deep, os.strerror(errno.EEXIST))
    assert busy_code == errno.ENOTEMPTY and busy_message.endswith(os.strerror(errno.ENOTEMPTY))
    assert under is None and under_code == errno.ENOTDIR


def test_sys_clock_execute_and_helpers(rt):
    before = time.time()
    rt.require("sys")
    r = rt.call(rt.eval("""function()
        local r = {}
        r.clock = sys.clock()
        sys.tic(); sys.sleep(0.05); r.toc = sys.toc()
        r.exec = sys.execute('(echo hello; echo err 1>&2)')
        r.fexec = sys.fexecute('printf "  padded  "')
        r.split = table.concat(sys.split('a,b,,c', ','), '|')
        r.nan = sys.isNaN(0 / 0) and not sys.isNaN(1)
        r.os = sys.OS
        r.red = sys.COLORS.red
        r.folder, r.file = sys.fpath()
        return r
    end"""))
    assert before - 1 <= r["clock"] <= time.time() + 1
    assert 0.04 <= r["toc"] < 2
    assert r["exec"] == "hello\nerr" and r["fexec"] == "padded"
    assert r["split"] == "a|b||c" and r["nan"] is True
    assert r["os"] == "linux" and r["red"] == "\x1b[0;31m"


def test_xlua_helpers(rt):
    rt.require("xlua")
    r = rt.call(rt.eval("""function()
        local r = {}
        r.t1, r.t2, r.t3 = xlua.formatTime(3725.5), xlua.formatTime(0.25), xlua.formatTime(0)
        r.missing = xlua.require('no_such_package_xyz')
        r.found = xlua.require('paths') == paths
        local args, a, b = xlua.unpack({{lr = 0.5}}, 'f', 'demo',
                                       {arg = 'lr', type = 'number', help = 'rate'},
                                       {arg = 'n', type = 'number', help = 'count', default = 3})
        r.lr, r.n, r.a, r.b = args.lr, args.n, a, b
        r.missing_arg = not pcall(xlua.unpack, {{}}, 'f', 'demo', {arg = 'x', type = 'number', help = 'x', req = true})
        r.installed = (xlua.installed('torch'))
        r.t2s = xlua.table2string({1, 'two'})
        r.splice = table.concat((table.splice({1, 2, 3, 4}, 2, 2)), ',')
        r.split = table.concat(('a b  c'):split(' '), '|')
        return r
    end"""))
    assert (r["t1"], r["t2"], r["t3"]) == ("1h2m", "250ms", "0ms")
    assert r["missing"] is False and r["found"] is True
    assert (r["lr"], r["n"], r["a"], r["b"]) == (0.5, 3, 0.5, 3)
    assert r["missing_arg"] is True and r["installed"] is True
    assert r["t2s"] == '{1,"two"}' and r["splice"] == "1,4" and r["split"] == "a|b||c"


def test_penlight_uses_luatorch_lfs(rt):
    if not any(os.path.isfile(os.path.join(d, "pl", "path.lua")) for d in SYSTEM_LUA_DIRS):
        pytest.skip("penlight is not installed (Debian: apt-get install lua-penlight)")
    r = rt.call(rt.eval("""function()
        local path, dir, pretty = require 'pl.path', require 'pl.dir', require 'pl.pretty'
        return path.isdir(paths.install_lua_path), #dir.getfiles(paths.install_lua_path .. '/torch', '*.lua') > 5,
               pretty.write({1, 2}, ''), package.loaded.lfs == lfs
    end"""))
    assert r == (True, True, "{1,2}", True)
