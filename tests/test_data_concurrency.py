"""Processes that share packed data: two packers of one set (ranks of a host, two `luatorch pack`), half-written
packs, and the /dev/shm segments a process leaves when a signal ends it (issue 9, items 2 and 8).

Whatever involves more than one process runs in real ones (`python -c`, `python -m run.cli`); the segments
go to a private folder (Store's shm_dir, `--shm-dir`) so that cleaning here never touches another run's
segments in /dev/shm."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from data_sources import idx
from run.launch import child_env, project_root

ROOT = project_root()


GO = "#GO\n"   # in a code for _procs(go=...): where it waits for the others


def _procs(codes, env=None, go=None):
    """Start one `python -c` per code. With `go` (a path), each runs its code up to the line GO (imports),
    says it is ready, and waits for the file `go`, so that they start the contended part together."""
    ps = []
    for i, code in enumerate(codes):
        if go:
            code = code.replace(GO, "import os, time\nopen(%r, 'w').close()\n"
                                    "while not os.path.exists(%r): time.sleep(0.001)\n" % ("%s.ready%d" % (go, i), go))
        ps.append(subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=child_env(**(env or {})),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return ps


def _start_together(ps, go):
    deadline = time.time() + 120
    while not all(os.path.exists("%s.ready%d" % (go, i)) for i in range(len(ps))):
        assert time.time() < deadline and all(p.poll() is None for p in ps), [p.communicate() for p in ps]
        time.sleep(0.01)
    open(go, "w").close()
    out = []
    for p in ps:
        o, e = p.communicate(timeout=120)
        out.append((p.returncode, o, e))
    return out


def _leftovers(folder):
    return sorted(n for n in os.listdir(folder) if ".tmp" in n)


def _ok(results):
    for code, o, e in results:
        assert code == 0, "a packer failed (exit %d):\n%s\n%s" % (code, o, e)
        assert "Traceback" not in e, e


@pytest.fixture
def mnist_src(tmp_path, rng):
    idx(str(tmp_path / "src"), rng, n=60, nval=30)
    return str(tmp_path / "src")


# -- two packers of one set --

def test_two_luatorch_pack_at_once_pack_once(tmp_path, mnist_src):
    out = str(tmp_path / "packed")
    go = str(tmp_path / "go")
    # one record per shard: 90 shards, so two unsynchronised packers collide on nearly every file
    code = ("import sys\nfrom run.pack import main\n" + GO +
            "sys.exit(main([%r, %r, '--shard-mb', '0.0005', '--workers', '1']))" % (mnist_src, out))
    results = _start_together(_procs([code, code], go=go), go)
    _ok(results)
    assert _leftovers(out) == []
    said = "".join(o + e for _, o, e in results)
    assert said.count("already packed") == 1, said   # the second waited (or came after), then used the first's set
    m = json.load(open(os.path.join(out, "manifest.json")))
    assert m["splits"]["train"]["count"] == 60 and m["splits"]["val"]["count"] == 30
    r = subprocess.run([sys.executable, "-m", "run.cli", "pack", "--verify", out], cwd=ROOT, env=child_env(),
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_a_packer_waits_for_the_one_holding_the_folder(tmp_path, mnist_src):
    """While another process packs the folder, `luatorch pack` says whom it waits for, then packs once it may."""
    from pytorch_bridge.data.pack import pack_lock

    out = str(tmp_path / "packed")
    errfile = tmp_path / "stderr"
    with pack_lock(out):
        with open(errfile, "w") as err:
            p = subprocess.Popen([sys.executable, "-m", "run.cli", "pack", mnist_src, out], cwd=ROOT,
                                 env=child_env(), stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.time() + 120
        while "waiting for another process packing" not in errfile.read_text():
            assert p.poll() is None and time.time() < deadline, errfile.read_text()
            time.sleep(0.05)
        assert "(pid %d)" % os.getpid() in errfile.read_text()
        time.sleep(0.3)
        assert p.poll() is None   # still waiting while the lock is held
    assert p.wait(timeout=120) == 0, errfile.read_text()
    assert json.load(open(os.path.join(out, "manifest.json")))["splits"]["train"]["count"] == 60


BUILTIN = """
import json, sys
from pytorch_bridge.data import builtin, Dataset
builtin.FASHION_DIRS = (%r,)     # a small stand-in for Debian's Fashion-MNIST folder
#GO
path = builtin.builtin_path(progress=False)
ds = Dataset(path)
print(json.dumps({"path": path, "train": ds.size("train"), "val": ds.size("val")}))
"""


def test_ranks_packing_the_builtin_set_into_an_empty_cache(tmp_path, rng):
    """What `luatorch train --np 2` does on a fresh machine: every rank asks for the built-in set at once."""
    fake = tmp_path / "fashion"
    idx(str(fake), rng, n=20000, nval=5000)
    cache, go = tmp_path / "cache", str(tmp_path / "go")
    results = _start_together(_procs([BUILTIN % str(fake)] * 3, env={"LUATORCH_DATA": str(cache)}, go=go), go)
    _ok(results)
    got = [json.loads(o.strip().splitlines()[-1]) for _, o, _ in results]
    assert all(g == got[0] for g in got) and got[0]["train"] == 20000 and got[0]["val"] == 5000
    assert _leftovers(got[0]["path"]) == []
    # one process packed, the others waited on the lock and used its set
    assert sum("waiting for another process packing" in e for _, _, e in results) >= 1


def test_pack_twice_with_a_different_source_repacks(tmp_path, rng):
    from pytorch_bridge.data import pack
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    idx(a, rng, n=20, nval=5)
    idx(b, rng, n=21, nval=5)
    out = str(tmp_path / "p")
    pack(a, out, progress=False)
    assert pack(a, out, progress=False).get("already_packed")
    m = pack(b, out, shard_bytes=784 * 30, progress=False)
    assert not m.get("already_packed") and m["splits"]["train"]["count"] == 21
    assert len(m["splits"]["train"]["shards"]) == 1
    m = pack(b, out, shard_bytes=784 * 5, progress=False)        # other options: repacked too
    assert not m.get("already_packed") and len(m["splits"]["train"]["shards"]) == 5
    pack(b, out, shard_bytes=784 * 30, progress=False)
    assert sorted(os.listdir(out)) == sorted([".pack.lock", "manifest.json"] + [  # no shard of the old sets left
        "%s-00000.%s" % (split, ext) for split in ("train", "val") for ext in ("bin", "idx.npz", "done.json")])


# -- half-written packs --

def _packed_cache(tmp_path, rng, monkeypatch):
    from pytorch_bridge.data import builtin
    fake = tmp_path / "fashion"
    idx(str(fake), rng, n=40, nval=10)
    monkeypatch.setattr(builtin, "FASHION_DIRS", (str(fake),))
    monkeypatch.setenv("LUATORCH_DATA", str(tmp_path / "cache"))
    return builtin.builtin_path(progress=False)


@pytest.mark.parametrize("damage", ["deleted shard", "truncated shard", "leftover tmp", "no manifest"])
def test_half_written_cache_is_rebuilt(tmp_path, rng, monkeypatch, capsys, damage):
    from pytorch_bridge.data import builtin, open_dataset
    path = _packed_cache(tmp_path, rng, monkeypatch)
    ref = open(os.path.join(path, "val-00000.bin"), "rb").read()
    capsys.readouterr()
    if damage == "deleted shard":
        os.unlink(os.path.join(path, "val-00000.bin"))
    elif damage == "truncated shard":
        with open(os.path.join(path, "val-00000.bin"), "r+b") as f:
            f.truncate(100)
    elif damage == "leftover tmp":
        open(os.path.join(path, "train-00000.bin.tmp"), "wb").write(b"x" * 10)
        open(os.path.join(path, "train-00000.idx.tmp1234.npz"), "wb").write(b"x")
    else:
        os.unlink(os.path.join(path, "manifest.json"))
    ds = open_dataset("builtin", progress=False)
    said = capsys.readouterr().err
    assert ds.path == path and ds.size("val") == 10 and ds.size("train") == 40
    assert open(os.path.join(path, "val-00000.bin"), "rb").read() == ref
    assert _leftovers(path) == []
    assert len([line for line in said.splitlines() if line.strip()]) == 1, said     # one line saying so
    assert ("removed" if damage == "leftover tmp" else "rebuilding") in said, said
    ds = open_dataset("builtin", progress=False)      # complete now: nothing said, nothing done
    assert capsys.readouterr().err == ""
    assert builtin.builtin_path(progress=False) == path


def test_damaged_packed_folder_names_the_shard_and_the_fix(tmp_path, mnist_src):
    from pytorch_bridge.data import Dataset, SourceError, pack
    out = str(tmp_path / "p")
    pack(mnist_src, out, shard_bytes=784 * 10, progress=False)
    os.unlink(os.path.join(out, "train-00002.bin"))
    with pytest.raises(SourceError, match=r"train-00002\.bin.*missing.*luatorch pack"):
        Dataset(out)
    r = subprocess.run([sys.executable, "-m", "run.cli", "pack", mnist_src, out, "--shard-mb", str(784 * 10 / 2 ** 20)],
                       cwd=ROOT, env=child_env(), capture_output=True, text=True)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "shards already complete" in r.stdout, r.stdout
    assert Dataset(out).size("train") == 60


def test_shards_without_manifest_are_named(tmp_path, mnist_src):
    from pytorch_bridge.data import Dataset, SourceError, pack
    out = str(tmp_path / "p")
    pack(mnist_src, out, progress=False)
    os.unlink(os.path.join(out, "manifest.json"))
    with pytest.raises(SourceError, match="an interrupted pack"):
        Dataset(out)


# -- shared memory left behind --

HOLD = """
import os, signal, sys, time
# the dispositions of a program started from a terminal, whatever the launcher left (a backgrounded job ignores
# SIGINT, nohup SIGHUP), so that each signal below ends it
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
%s
from pytorch_bridge.data.store import Store
st = Store(%r, "train", %d, %d, shm_dir=%r)
%s
print(st.path, flush=True)
%s
"""


def _hold(packed, shm, lo, hi, setup="", wait="time.sleep(120)", before=""):
    p = _procs([HOLD % (before, packed, lo, hi, shm, setup, wait)])[0]
    line = p.stdout.readline().strip()
    assert line, p.communicate()
    return p, line


def _segments(shm):
    return sorted(n for n in os.listdir(shm) if n.startswith("luatorch-data-"))


@pytest.fixture
def packed(tmp_path, mnist_src):
    from pytorch_bridge.data import pack
    out = str(tmp_path / "p")
    pack(mnist_src, out, shard_bytes=784 * 10, progress=False)
    shm = tmp_path / "shm"
    shm.mkdir()
    return out, str(shm)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_leaves_no_segment(packed, sig):
    out, shm = packed
    p, path = _hold(out, shm, 0, 30)
    assert os.path.exists(path)
    p.send_signal(sig)
    p.communicate(timeout=30)
    assert p.returncode == -sig          # still ends as the signal ends it
    assert _segments(shm) == []


# the program's own SIGTERM handler, installed before the store's: it is chained to, and here it keeps the
# process (and its hold on the segment) alive a while after the store let go, as a slow rank would
SLOW_EXIT = """
def slow_exit(signum, frame):
    time.sleep(0.5)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
signal.signal(signal.SIGTERM, slow_exit)
"""


def test_holders_signalled_together_leave_no_segment(packed):
    """Ctrl-C or a launcher's SIGTERM reaches every rank of a host at once: each must see the others let go,
    else none is the last and the segment stays; a handler the program had is still called."""
    out, shm = packed
    held = [_hold(out, shm, 0, 60, before=SLOW_EXIT) for _ in range(3)]
    assert len({path for _, path in held}) == 1          # one segment, three holders
    for p, _ in held:
        p.send_signal(signal.SIGTERM)
    for p, _ in held:
        p.communicate(timeout=30)
        assert p.returncode == -signal.SIGTERM            # the program's handler ran, and ended it
    assert _segments(shm) == []


def test_sigterm_while_lua_runs_cleans_and_ends_at_once(packed):
    """A training rank spends its time inside Lua (or C called from Lua), where Python's signal handlers only
    run once Lua returns: the segment must still go, and SIGTERM must still end the process at once."""
    out, shm = packed
    # the LuaJIT state our Runtime is made of, without loading torch: only the main thread's being in Lua counts
    p, path = _hold(out, shm, 0, 30, wait="from lupa import luajit21\n"
                    "luajit21.LuaRuntime().execute('local t = os.time() while os.time() - t < 60 do end')")
    time.sleep(1.0)
    t0 = time.time()
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    assert time.time() - t0 < 10 and p.returncode == -signal.SIGTERM
    assert _segments(shm) == []


def test_sigterm_with_loader_worker_processes(packed):
    out, shm = packed
    setup = ("from pytorch_bridge.data import Dataset\n"
             "from pytorch_bridge.data.loader import Loader\n"
             "st.close()\n"
             "ld = Loader(Dataset(%r), 'train', 4, workers=2, mode='processes', shm_dir=%r)\n"
             "st = ld.store\n"
             "next(iter(ld))\n"
             "print(' '.join(str(q.pid) for q in ld._procs), flush=True)" % (out, shm))
    p, pids = _hold(out, shm, 0, 30, setup=setup)
    workers = [int(x) for x in pids.split()]
    seg = p.stdout.readline().strip()
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM
    deadline = time.time() + 10
    while time.time() < deadline and any(os.path.exists("/proc/%d" % w) for w in workers):
        time.sleep(0.05)
    assert not any(os.path.exists("/proc/%d" % w) for w in workers), "loader workers outlived their parent"
    assert not os.path.exists(seg)
    assert _segments(shm) == []


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "run.cli", *args], cwd=ROOT, env=child_env(),
                          capture_output=True, text=True, timeout=60)


def test_sigkill_leftover_is_removed_by_data_clean_but_held_segment_is_not(packed):
    out, shm = packed
    killed, dead_path = _hold(out, shm, 0, 30)
    live, live_path = _hold(out, shm, 30, 60)
    killed.kill()
    killed.communicate(timeout=30)
    assert os.path.exists(dead_path)                 # SIGKILL runs no handler: the segment stays
    size = os.path.getsize(dead_path)
    try:
        r = _cli("data", "list", "--shm-dir", shm)
        assert r.returncode == 0, r.stderr
        assert "pid %d" % live.pid in r.stdout and out in r.stdout and "unused" in r.stdout, r.stdout
        r = _cli("data", "clean", "--dry-run", "--shm-dir", shm)
        assert r.returncode == 0 and os.path.basename(dead_path) in r.stdout, r.stdout + r.stderr
        assert os.path.exists(dead_path)
        r = _cli("data", "clean", "--shm-dir", shm)
        assert r.returncode == 0, r.stderr
        assert os.path.basename(dead_path) in r.stdout and os.path.basename(live_path) not in r.stdout
        assert "%d bytes" % size in r.stdout, r.stdout
        assert not os.path.exists(dead_path) and not os.path.exists(dead_path + ".lock")
        assert os.path.exists(live_path)              # a live process holds it
        r = _cli("data", "clean", "--shm-dir", shm)
        assert r.returncode == 0 and "nothing to remove" in r.stdout, r.stdout
    finally:
        live.terminate()
        live.communicate(timeout=30)
    assert _segments(shm) == []


def test_data_clean_removes_a_killed_fill_and_pack_leftovers(packed, tmp_path):
    out, shm = packed
    # what a process killed while filling a segment leaves: a .tmpPID file (and its lock file)
    stale = os.path.join(shm, "luatorch-data-0123456789abcdef0123.tmp999999")
    open(stale, "wb").write(b"\0" * 4096)
    open(os.path.join(out, "val-00000.bin.tmp77"), "wb").write(b"x" * 100)
    r = _cli("data", "clean", "--shm-dir", shm, out)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(stale) and _leftovers(out) == []
    assert "4196 bytes" in r.stdout, r.stdout


def test_clean_only_what_given_pids_made(packed):
    """What a launcher does after a failed job: remove its own ranks' leftovers, not another job's."""
    from pytorch_bridge.data.store import clean_segments
    out, shm = packed
    mine, mine_path = _hold(out, shm, 0, 30)
    other, other_path = _hold(out, shm, 30, 60)
    for p in (mine, other):
        p.kill()
        p.communicate(timeout=30)
    assert [s.path for s in clean_segments(shm, created_by=[mine.pid])] == [mine_path]
    assert not os.path.exists(mine_path) and os.path.exists(other_path)
    assert [s.path for s in clean_segments(shm)] == [other_path]
    assert _segments(shm) == []


def test_two_jobs_share_one_copy_and_a_killed_one_strands_nothing(packed):
    """Two jobs on one host replicating the same packed set: one copy in shared memory, attached by both; one
    SIGKILLed (no handler runs) leaves the copy to the other, which still reads it, and, being the last holder,
    removes it when it ends."""
    out, shm = packed
    check = "assert st.get(5)[1] == st.get(5)[1]"  # reads a record through the mapping
    job_a, path_a = _hold(out, shm, 0, 40, setup=check)
    go = os.path.join(shm, "..", "go")
    job_b, path_b = _hold(out, shm, 0, 40, setup=check,
                          wait="while not os.path.exists(%r): time.sleep(0.01)\nprint(len(st), st.get(7)[1], flush=True)"
                          % go)
    try:
        assert path_a == path_b
        assert [n for n in _segments(shm) if not n.endswith(".lock")] == [os.path.basename(path_a)]
        job_a.kill()
        job_a.communicate(timeout=30)
        assert os.path.exists(path_a)          # the other job still holds it
        open(go, "w").close()
        line = job_b.stdout.readline().split()
        assert line and line[0] == "40", line
        job_b.communicate(timeout=30)
        assert job_b.returncode == 0
    finally:
        for p in (job_a, job_b):
            if p.poll() is None:
                p.kill()
                p.communicate(timeout=30)
    assert _segments(shm) == []                # the last holder removed it on exit
