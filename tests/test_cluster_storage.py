"""The emulated cluster's storage host (`luatorch cluster up --storage DIR`): sshd in its own namespace serving
DIR over SFTP, mounted with sshfs on every host; the file loader reading through it; `bench data
--cluster-hosts` and the store's fills over it; a storage host that goes away; `down` leaving nothing.

Fast: the plan and the config files (pure). Slow: a real 2-host cluster with a storage host (root, ip, tc,
sshfs, sshd, FUSE), named "lts" so that it runs beside a cluster someone has up.
"""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from run import bench_data, cluster  # noqa: E402

NAME = "lts"
STATE = "/run/luatorch-cluster-" + NAME


def test_plan_with_storage():
    cmds, st = cluster.plan(2, 1, "1gbit", storage="/srv/images", storage_rate="200mbit")
    sto = st["storage"]
    assert sto["namespace"] == cluster.storage_name() == cluster.SWITCH[:-3] + "-storage"
    assert sto["address"] == "10.77.0.250" and sto["dir"] == "/srv/images" and sto["rate_bits"] == 200 * 10 ** 6
    assert st["namespaces"][-1] == sto["namespace"]   # so down() removes it
    # its own veth on the link-0 bridge, shaped at both ends at the storage rate
    assert ["ip", "-n", cluster.SWITCH, "link", "set", "st0", "master", "br0"] in cmds
    q = [c for c in cmds if c[0] == "tc" and ("st0" in c or sto["namespace"] in c)]
    assert len(q) == 2 and all("200000000bit" in c for c in q)
    assert "10.77.0.250 %s" % sto["namespace"] in cluster.hosts_file(st)
    _, plain = cluster.plan(2, 1, "1gbit")
    assert "storage" not in plain and cluster.storage_name() not in plain["namespaces"]
    assert cluster.stale_namespaces("%s\nother\n" % sto["namespace"]) == [sto["namespace"]]


def test_ssh_files_stay_in_the_state_dir():
    st = {"state_dir": "/run/x", "storage": {"address": "10.77.0.250", "dir": "/srv/images"}}
    argv = cluster.sshfs_argv(st, "lt-h1")
    opts = argv[argv.index("-o") + 1]
    assert argv[:3] == ["sshfs", "-F", "/dev/null", ] and "root@10.77.0.250:/srv/images" in argv
    assert argv[4] == "/run/x/mnt/lt-h1"
    for o in ("ro", "IdentityFile=/run/x/ssh/client_key", "UserKnownHostsFile=/run/x/ssh/known_hosts",
              "GlobalKnownHostsFile=/dev/null", "BatchMode=yes", "StrictHostKeyChecking=yes"):
        assert o in opts.split(",")
    assert "reconnect" not in opts and "~" not in opts and ".ssh" not in opts
    cfg = cluster.sshd_config("/run/x", "10.77.0.250")
    assert "ListenAddress 10.77.0.250" in cfg and "HostKey /run/x/ssh/host_key" in cfg
    assert "ForceCommand internal-sftp -R" in cfg and "PasswordAuthentication no" in cfg


def test_host_path_maps_into_each_mount():
    st = {"storage": {"dir": "/srv/data", "mounts": {"a": "/run/x/mnt/a", "b": "/run/x/mnt/b"}}}
    assert bench_data.host_path("/srv/data/src", st, "b") == "/run/x/mnt/b/src"
    assert bench_data.host_path("/run/x/mnt/a/packed", st, "b") == "/run/x/mnt/b/packed"
    with pytest.raises(SystemExit, match="not in the folder the storage host serves"):
        bench_data.host_path("/elsewhere/src", st, "a")


# ------------------------------------------------------------------ slow: a real cluster

def _cannot():
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "tc", "unshare", "nsenter", "sshfs", "ssh-keygen", "fusermount3"):
        if not shutil.which(tool):
            return "%s missing (apt-get install iproute2 sshfs openssh-server)" % tool
    if not os.path.exists("/usr/sbin/sshd"):
        return "sshd missing (apt-get install openssh-server)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse"
    return None


slow_cluster = [pytest.mark.slow, pytest.mark.skipif(bool(_cannot()), reason=str(_cannot()))]
ENV = {**os.environ, "PYTHONPATH": ROOT, "LUATORCH_CLUSTER": NAME}
ENV.pop("MPI4PY_MPIABI", None)


def _cli(*args, timeout=300, name=NAME):
    return subprocess.run([sys.executable, "-m", "run.cli", *args], env={**ENV, "LUATORCH_CLUSTER": name},
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout)


def _leftovers(name=NAME):
    """What a cluster leaves once down: namespaces, mounts, processes naming its state dir, the state dir."""
    state = "/run/luatorch-cluster-" + name
    out = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    out += [ln.split()[0] for ln in ns.splitlines() if ln.startswith(name + "-")]
    with open("/proc/mounts") as f:
        out += [ln.split()[1] for ln in f if state + "/" in ln]
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().decode(errors="replace")
        except OSError:
            continue
        if state + "/" in cmd and ("sshd" in cmd or "sshfs" in cmd or cmd.startswith("ssh")):
            out.append("pid %s: %s" % (pid, cmd.replace("\0", " ")[:120]))
    if os.path.exists(state):
        out.append(state)
    return out


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    """A 2-host cluster whose storage host serves a small image set and its packed form."""
    if _cannot():
        pytest.skip(_cannot())
    d = tmp_path_factory.mktemp("served")
    r = subprocess.run([sys.executable, "-m", "run.cli", "synth-data", str(d / "src"), "--images", "48",
                        "--classes", "4", "--val", "4", "--seed", "0"], env=ENV, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([sys.executable, "-m", "run.cli", "pack", str(d / "src"), str(d / "packed"), "--shard-mb", "1"],
                       env=ENV, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    home_ssh = os.path.expanduser("~/.ssh")
    before = sorted(os.listdir(home_ssh)) if os.path.isdir(home_ssh) else None
    r = _cli("cluster", "up", "--nodes", "2", "--rate", "1gbit", "--storage", str(d))
    assert r.returncode == 0, r.stderr
    try:
        with open(os.path.join(STATE, "state.json")) as f:
            st = json.load(f)
        yield d, st
    finally:
        r = _cli("cluster", "down")
        assert r.returncode == 0, r.stderr
        assert _leftovers() == []
        assert os.path.isdir(d / "src") and len(os.listdir(d / "src" / "train")) == 4   # the served folder is intact
        after = sorted(os.listdir(home_ssh)) if os.path.isdir(home_ssh) else None
        assert before == after   # nothing written to the user's ~/.ssh


def _rx(st, host):
    r = subprocess.run(["ip", "-n", host, "-s", "-j", "link", "show", "eth0"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)[0]["stats64"]["rx"]["bytes"]


@pytest.mark.slow
def test_every_host_reads_through_its_own_link(storage):
    d, st = storage
    assert sorted(st["storage"]["mounts"]) == sorted(st["hosts"])
    assert os.path.exists(os.path.join(STATE, "ssh", "client_key")) and os.path.exists(os.path.join(STATE, "ssh", "host_key"))
    name = sorted(os.listdir(d / "packed"))[0]
    want = (d / "packed" / name).read_bytes()
    for h in st["hosts"]:
        before = _rx(st, h)
        path = os.path.join(st["storage"]["mounts"][h], "packed", name)
        r = _cli("cluster", "exec", h, "--", "sh", "-c", "cat %s" % path)
        assert r.returncode == 0, r.stderr
        with open(path, "rb") as f:
            assert f.read() == want
        assert _rx(st, h) - before >= len(want)   # it came over this host's emulated link
    with pytest.raises(OSError):   # served read-only
        open(os.path.join(st["storage"]["mounts"][st["hosts"][0]], "new-file"), "w")


@pytest.mark.slow
def test_bench_loaders_and_fills_on_the_cluster(storage, tmp_path):
    d, st = storage
    out = tmp_path / "loaders.json"
    r = _cli("bench", "data", "--cluster-hosts", "1,2", "--data", str(d / "packed"), "--files", str(d / "src"),
             "--loaders", "memory,files", "--workers", "1", "--batches", "3", "--batch-size", "8", "--iter-ms", "20",
             "--json", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    recs = json.loads(out.read_text())
    assert sorted((x["cluster_hosts"], x["loader"]) for x in recs) == \
        [(1, "files"), (1, "memory"), (2, "files"), (2, "files"), (2, "memory"), (2, "memory")]
    for x in recs:
        assert x["images"] == 24 and x["images_per_s"] > 0 and 0 <= x["data_wait_fraction"] <= 1
        if x["loader"] == "files":   # 24 JPEGs of ~100 KB per host, through the storage link
            assert x["throughput_storage_tx_bytes"] > 24 * 50000 * x["cluster_hosts"]
        else:
            assert x["throughput_storage_tx_bytes"] < 200000
    out = tmp_path / "fill.json"
    r = _cli("bench", "data", "--cluster-hosts", "2", "--fill", "replicate,distributed", "--data", str(d / "packed"),
             "--files", str(d / "src"), "--json", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    recs = {x["fill"]: x for x in json.loads(out.read_text())}
    size = recs["replicate"]["set_bytes"]
    # replicate: the set crosses the storage link once per host; distributed: once, the rest host to host
    assert 2 * size <= recs["replicate"]["storage_tx_bytes"] < 2.3 * size
    assert size <= recs["distributed"]["storage_tx_bytes"] < 1.3 * size
    assert [x["read_bytes"] for x in recs["distributed"]["ranks"]] == [size // 2, size - size // 2]
    assert all(x["created"] and x["store_bytes"] == size for x in recs["distributed"]["ranks"])
    assert not [n for n in os.listdir("/dev/shm") if n.startswith("luatorch-bench-%s-" % NAME)]   # nothing left


DEAD = r"""
import sys, time
from pytorch_bridge.data import Dataset
ds = Dataset(sys.argv[1])
t0 = time.time()
with ds.loader("train", batch_size=4, workers=1, source="files", root=sys.argv[2], fast=False) as ld:
    try:
        for k, _ in enumerate(ld):
            print("batch", k, flush=True)
            time.sleep(0.5)
        print("NO ERROR corrupt=%d" % ld.stats()["corrupt"])
    except RuntimeError as e:
        print("ENDED %.1f %s" % (time.time() - t0, e), flush=True)
"""


@pytest.mark.slow
def test_storage_gone_mid_epoch_ends_the_file_loader(storage, tmp_path):
    """Last: it kills the hosts' sshfs (no reconnect), so later tests would find the mounts dead."""
    d, st = storage
    h = st["hosts"][1]
    script = tmp_path / "dead.py"
    script.write_text(DEAD)
    p = subprocess.Popen(cluster_exec(h, [sys.executable, str(script), str(d / "packed"),
                                          os.path.join(st["storage"]["mounts"][h], "src")]),
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    first = p.stdout.readline()
    assert first.startswith("batch 0"), first + p.stderr.read()
    subprocess.run(["ip", "-n", st["storage"]["namespace"], "link", "set", "eth0", "down"], check=True)
    t0 = time.time()
    try:
        out, err = p.communicate(timeout=90)   # keepalives give up after ~6 s: an end, not a hang
    finally:
        subprocess.run(["ip", "-n", st["storage"]["namespace"], "link", "set", "eth0", "up"])
        if p.poll() is None:
            p.kill()
    assert time.time() - t0 < 60
    ended = [ln for ln in out.splitlines() if ln.startswith("ENDED")]
    assert ended, out + err
    assert "unreachable" in ended[0] and os.path.join(st["storage"]["mounts"][h], "src", "train") in ended[0], ended[0]


def cluster_exec(host, argv):
    return [sys.executable, "-m", "run.cli", "cluster", "exec", host, "--", *argv]


@pytest.mark.slow
@pytest.mark.skipif(bool(_cannot()), reason=str(_cannot()))
def test_down_after_a_crashed_up(tmp_path):
    """An `up` killed after mounting, before it recorded the mounts: `down` still unmounts and stops all."""
    name = "ltc"   # not the storage fixture's cluster
    state = "/run/luatorch-cluster-" + name
    served = tmp_path / "served"
    served.mkdir()
    (served / "f").write_bytes(b"x" * 1000)
    r = _cli("cluster", "up", "--nodes", "2", "--storage", str(served), name=name)
    assert r.returncode == 0, r.stderr
    try:
        path = os.path.join(state, "state.json")
        with open(path) as f:
            st = json.load(f)
        assert open(os.path.join(st["storage"]["mounts"][st["hosts"][0]], "f"), "rb").read() == b"x" * 1000
        del st["storage"]["mounts"]
        st["namespaces"] = st["namespaces"][:1]   # as if killed early: down must find the rest itself
        with open(path, "w") as f:
            json.dump(st, f)
    finally:
        r = _cli("cluster", "down", name=name)
    assert r.returncode == 0, r.stderr
    assert _leftovers(name) == []
    assert (served / "f").read_bytes() == b"x" * 1000
