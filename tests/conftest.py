"""Shared fixtures, and collection of the Lua spec files in tests/lua/.

A Lua spec file `tests/lua/<name>_spec.lua` returns a table of test functions;
each becomes one pytest item run in a fresh Runtime. A failing `assert` or
`error` shows its Lua message and traceback in the pytest report. The module
`spec` (tests/lua/spec.lua) gives assertion helpers.
"""
import os

import numpy as np
import pytest

from pytorch_bridge import LuaError, Runtime

TESTS = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.abspath(os.path.join(TESTS, "..", "..", "shared"))
T7_DIR = os.path.join(SHARED, "testdata", "t7")


@pytest.fixture
def rt():
    """A fresh LuaJIT state with torch loaded."""
    return Runtime(extra_path=[os.path.join(TESTS, "lua")])


@pytest.fixture(scope="session")
def shared_rt():
    """One LuaJIT state for the whole session (for read-only checks)."""
    return Runtime(extra_path=[os.path.join(TESTS, "lua")])


@pytest.fixture
def rng():
    """Fresh random inputs every run; the seed is printed on failure, and LT_TEST_SEED=<seed> replays it."""
    seed = int(os.environ.get("LT_TEST_SEED") or int.from_bytes(os.urandom(4), "little"))
    print("numpy seed", seed)
    return np.random.default_rng(seed)


@pytest.fixture(scope="session")
def simt(tmp_path_factory):
    """The kernels of native/cuda/ built for the SIMT emulator (tests/simt_emulator.py), once per session."""
    from simt_emulator import simt_builder
    yield from simt_builder(tmp_path_factory)


@pytest.fixture
def t7_dir():
    if not os.path.isdir(T7_DIR):
        pytest.skip("../shared/testdata/t7 is not present")
    return T7_DIR


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".lua" and file_path.name.endswith("_spec.lua"):
        return LuaSpecFile.from_parent(parent, path=file_path)


class LuaSpecFile(pytest.File):
    def collect(self):
        rt = Runtime(extra_path=[os.path.join(TESTS, "lua")])
        names = rt.execute(
            "local f = assert(loadfile(...)); local t = f(); local n = {}\n"
            "for k, v in pairs(t) do if type(v) == 'function' then n[#n + 1] = k end end\n"
            "table.sort(n); return n".replace("...", repr(str(self.path)))
        )
        for i in range(len(names)):
            yield LuaSpecItem.from_parent(self, name=str(names[i + 1]))


class LuaSpecItem(pytest.Item):
    def runtest(self):
        rt = Runtime(extra_path=[os.path.join(TESTS, "lua")])
        rt.execute(
            "local f = assert(loadfile(%r)); local t = f(); t[%r]()" % (str(self.path), self.name),
            "=" + self.path.name,
        )

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, LuaError):
            return "Lua spec failed: %s\n%s" % (excinfo.value.lua_message, excinfo.value.lua_traceback)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, "lua: %s" % self.name


@pytest.fixture
def sigint_default():
    """Python's own SIGINT handler (KeyboardInterrupt) for the test: a process started in the background by a
    shell without job control inherits SIGINT ignored, and Python then leaves it so."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)
