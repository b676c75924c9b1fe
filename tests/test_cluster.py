"""The emulated cluster (run/cluster.py), bench --cluster and auto's table rules.

Fast: the plan, state parsing, the launch commands, the calibration rule, and
auto's lookup between measured sizes (2 MPICH ranks). Slow: a real 2-host
cluster (root + network namespaces), an allreduce across it checked against
MPI_Allreduce, with traffic on the emulated links, torn down without leftovers.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from run import bench_allreduce, cluster  # noqa: E402


def test_parse_rate_and_delay():
    assert cluster.parse_rate("1gbit") == 10 ** 9
    assert cluster.parse_rate("250mbit") == 250 * 10 ** 6
    assert cluster.parse_rate("100kbit") == 10 ** 5
    assert cluster.parse_rate("125000bps") == 10 ** 6      # tc: bps = bytes per second
    assert cluster.parse_rate("5000") == 5000
    for bad in ("fast", "0", "1tbit", "-3mbit"):
        with pytest.raises(cluster.ClusterError):
            cluster.parse_rate(bad)
    assert cluster.parse_delay("50us") == pytest.approx(50e-6)
    assert cluster.parse_delay("2ms") == pytest.approx(2e-3)
    assert cluster.parse_delay("") == 0
    with pytest.raises(cluster.ClusterError):
        cluster.parse_delay("soon")


def _qdiscs(cmds):
    return [c for c in cmds if c[0] == "tc"]


@pytest.mark.parametrize("nodes,links", [(2, 1), (4, 2), (5, 3)])
def test_plan(nodes, links):
    cmds, st = cluster.plan(nodes, links, "1gbit")
    hosts = [cluster.PREFIX + str(i) for i in range(nodes)]
    assert st["hosts"] == hosts and st["namespaces"] == [cluster.SWITCH] + hosts
    assert st["rate_bits"] == 10 ** 9 and st["burst"] >= 65536
    # one veth per host and link, each shaped at both ends (both directions limited)
    veths = [c for c in cmds if "veth" in c]
    assert len(veths) == nodes * links
    q = _qdiscs(cmds)
    assert len(q) == 2 * nodes * links and all("tbf" in c and "1000000000bit" in c for c in q)
    shaped = {(c[2], c[6]) for c in q}
    for i, h in enumerate(hosts):
        for k in range(links):
            assert (h, "eth%d" % k) in shaped and (cluster.SWITCH, "h%dl%d" % (i, k)) in shaped
            assert ["ip", "-n", cluster.SWITCH, "link", "set", "h%dl%d" % (i, k), "master", "br%d" % k] in cmds
    # link k is its own subnet; addresses unique
    addrs = [a for h in hosts for a in st["addresses"][h]]
    assert len(set(addrs)) == nodes * links
    assert all(st["addresses"][h][k].startswith("%s.%d." % (cluster.SUBNET, k)) for h in hosts for k in range(links))
    # nothing is done in the host's own namespace: every ip/tc command names a namespace
    for c in cmds:
        assert c[:3] == ["ip", "netns", "add"] or c[1] == "-n", c
    # loopback up everywhere; the namespace exists before anything is added to it
    for ns in st["namespaces"]:
        first = next(i for i, c in enumerate(cmds) if ns in c)
        assert cmds[first] == ["ip", "netns", "add", ns]
        assert ["ip", "-n", ns, "link", "set", "lo", "up"] in cmds


def test_plan_delay_and_errors():
    cmds, st = cluster.plan(2, 1, "100mbit", "50us")
    q = _qdiscs(cmds)
    assert sum("netem" in c for c in q) == 4 and sum("tbf" in c for c in q) == 4   # 2 hosts x both ends
    assert all("parent" in c for c in q if "tbf" in c)
    assert any("50us" in c for c in q)
    for args in [(1, 1), (65, 1), (2, 0), (2, 9)]:
        with pytest.raises(cluster.ClusterError):
            cluster.plan(*args, "1gbit")


def test_hosts_file_and_stale_parsing():
    _, st = cluster.plan(3, 2, "1gbit")
    lines = cluster.hosts_file(st).splitlines()
    assert "%s %s" % (st["addresses"][st["hosts"][2]][0], st["hosts"][2]) in lines
    assert "%s %s-l1" % (st["addresses"][st["hosts"][1]][1], st["hosts"][1]) in lines
    p = cluster.PREFIX
    listing = "%s0 (id: 3)\n%s\n%s12\nother\n%sx\nlt_probe\n\n" % (p, cluster.SWITCH, p, p)
    assert cluster.stale_namespaces(listing) == [p + "0", cluster.SWITCH, p + "12"]


def _fake_state(tmp_path, monkeypatch, links=2):
    _, st = cluster.plan(4, links, "1gbit")
    st["state_dir"] = str(tmp_path)
    (tmp_path / "state.json").write_text(json.dumps(st))
    monkeypatch.setattr(cluster, "STATE_DIR", str(tmp_path))
    return st


def test_read_state(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "STATE_DIR", str(tmp_path))
    assert cluster.read_state() is None
    with pytest.raises(cluster.ClusterError, match="no emulated cluster"):
        cluster.current()
    (tmp_path / "state.json").write_text("{not json")
    assert cluster.read_state() is None
    st = _fake_state(tmp_path, monkeypatch)
    assert cluster.current()["hosts"] == st["hosts"]


def test_mpi_launch_commands(tmp_path, monkeypatch):
    st = _fake_state(tmp_path, monkeypatch, links=2)
    agent = os.path.join(str(tmp_path), "agent")
    argv, env = cluster.mpi_launch("openmpi", 4)
    assert argv[:4] == ["ip", "netns", "exec", st["hosts"][0]]      # the launcher runs on host 0
    j = " ".join(argv)
    assert "--mca btl tcp,self" in j and "--mca btl_tcp_if_include eth0,eth1" in j
    assert "--mca plm_rsh_agent " + agent in j and "--map-by node" in j
    argv, env = cluster.mpi_launch("mpich", 3)
    assert "-launcher-exec" in argv and argv[argv.index("-launcher-exec") + 1] == agent
    assert argv[argv.index("-n") + 1] == "3"
    assert env["UCX_NET_DEVICES"] == "eth0,eth1" and env["UCX_TLS"] == "tcp,self" and env["UCX_MAX_RNDV_RAILS"] == "2"
    with pytest.raises(cluster.ClusterError):
        cluster.mpi_launch("mpich", 5)


def test_agent_refuses_unknown_host(tmp_path):
    path = tmp_path / "agent"
    path.write_text(cluster.agent_script(str(tmp_path)))
    (tmp_path / "hosts").write_text("nohost-h0\n")
    r = subprocess.run(["sh", str(path), "-x", "nohost-h9", "true"], capture_output=True, text=True)
    assert r.returncode == 255 and "no host nohost-h9" in r.stderr
    r = subprocess.run(["sh", str(path), "nohost-h0"], capture_output=True, text=True)
    assert r.returncode == 2


def test_calibration_keeps_mpi_without_a_repeatable_win():
    pick = bench_allreduce.pick_best
    assert pick({"mpi": [100, 100, 100], "ring": [80, 80, 80]}) == "ring"
    assert pick({"mpi": [100, 100, 100], "ring": [80, 80, 80], "rhd": [70, 75, 60]}) == "rhd"
    assert pick({"mpi": [100, 100, 100], "ring": [95, 94, 93]}) == "mpi"          # < 10% faster
    assert pick({"mpi": [100, 60, 100], "ring": [80, 80, 80]}) == "mpi"           # lost one round
    assert pick({"mpi": [100, 110, 120], "ring": [70, 80, 105]}) == "mpi"       # ranges overlap: noise
    assert pick({"mpi": [100], "ring": [89]}) == "ring"


def _mpiexec():
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return here if os.path.exists(here) else None


AUTO_WORKER = r"""
from mpi4py import MPI
from pytorch_bridge import mpi
w = mpi.world()
KiB, MiB = 1024, 1 << 20
w.set_table([(8, "mpi", 0), (32 * KiB, "rhd", 0), (1 * MiB, "ring", 0), (8 * MiB, "multicolor", 2),
             (32 * MiB, "mpi", 0)])
got = {n: w.choose(n)[0] for n in (1, 8, 100, 32 * KiB, 100 * KiB, 600 * KiB, 1 * MiB, 2 * MiB, 7 * MiB,
                                     25 * MiB, 32 * MiB, 1 << 30)}
if MPI.COMM_WORLD.rank == 0:
    print(repr(got))
"""


@pytest.mark.skipif(_mpiexec() is None, reason="no MPICH mpiexec in the venv")
def test_auto_table_lookup():
    env = {**os.environ, "PYTHONPATH": ROOT}
    env.pop("MPI4PY_MPIABI", None)
    r = subprocess.run([_mpiexec(), "-n", "2", sys.executable, "-c", AUTO_WORKER], env=env, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    got = eval(r.stdout.strip().splitlines()[-1])
    KiB, MiB = 1024, 1 << 20
    assert got == {1: "mpi", 8: "mpi", 100: "mpi",                 # below / between mpi and rhd: the library
                   32 * KiB: "rhd", 100 * KiB: "rhd", 600 * KiB: "ring",   # both ours: the nearer in log size
                   1 * MiB: "ring", 2 * MiB: "ring", 7 * MiB: "multicolor",
                   25 * MiB: "mpi", 32 * MiB: "mpi", 1 << 30: "mpi"}     # next to an mpi entry: mpi


# ------------------------------------------------------------------ slow: a real cluster

def _can_netns():
    if os.geteuid() != 0:
        return "not root"
    if not (shutil.which("ip") and shutil.which("tc") and shutil.which("unshare")):
        return "ip/tc/unshare missing"
    r = subprocess.run(["ip", "netns", "add", "ltprobe0"], capture_output=True, text=True)
    if r.returncode != 0:
        return "network namespaces unavailable: " + r.stderr.strip()
    subprocess.run(["ip", "netns", "delete", "ltprobe0"], capture_output=True)
    return None


@pytest.mark.slow
@pytest.mark.skipif(bool(_can_netns()), reason=str(_can_netns()))
@pytest.mark.skipif(_mpiexec() is None, reason="no MPICH mpiexec in the venv")
def test_two_host_cluster(tmp_path):
    name = "ltt"   # beside (not instead of) a cluster someone else has up
    env = {**os.environ, "PYTHONPATH": ROOT, "LUATORCH_CLUSTER": name}
    env.pop("MPI4PY_MPIABI", None)
    cli = [sys.executable, "-m", "run.cli", "cluster"]

    def run(args, **kw):
        return subprocess.run(cli + args, env=env, capture_output=True, text=True, cwd=ROOT, timeout=300, **kw)

    def ours():
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return [ln.split()[0] for ln in out.splitlines() if ln.startswith(name + "-")]

    try:
        r = run(["up", "--nodes", "2", "--links", "2", "--rate", "500mbit"])
        assert r.returncode == 0, r.stderr
        assert sorted(ours()) == sorted([name + "-h0", name + "-h1", name + "-sw"])
        r = run(["exec", name + "-h1", "--", "sh", "-c", "hostname; cat /etc/hosts"])
        assert r.returncode == 0 and r.stdout.split()[0] == name + "-h1" and "%s-h0" % name in r.stdout
        # shaped: one TCP stream per link gets close to, and not above, the rate
        r = run(["speed", "--seconds", "1.5"])
        assert r.returncode == 0, r.stderr
        rates = [float(ln.split()[2]) for ln in r.stdout.splitlines() if ln.startswith("link")]
        assert len(rates) == 2 and all(150 < x < 520 for x in rates), r.stdout
        # an allreduce across the hosts, checked against MPI_Allreduce; traffic on the veths
        before = _link_bytes(name)
        out = tmp_path / "r.json"
        r = subprocess.run([sys.executable, "-m", "run.cli", "bench", "allreduce", "--cluster", "--sizes", "8,1M",
                            "--algorithms", "multicolor,ring,mpi", "--iters", "2", "--quiet", "--json", str(out)],
                           env=env, capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        recs = json.loads(out.read_text())
        assert len(recs) == 6 and all(x["correct"] and x["ranks"] == 2 for x in recs)
        assert all(x["cluster_links"] == 2 and x["link_rate"] == "500mbit" for x in recs)
        after = _link_bytes(name)
        # >= 3 algorithms x (warm-up + 2 iterations + check) x 1 MiB through each host's links
        for h in (name + "-h0", name + "-h1"):
            sent = sum(after[d][0] - before[d][0] for d in after if d.startswith(h + "/"))
            assert sent > 8 * (1 << 20), (h, sent)
    finally:
        r = run(["down"])
    assert r.returncode == 0, r.stderr
    assert ours() == []
    assert not os.path.exists("/run/luatorch-cluster-" + name)
    assert not any(os.path.exists("/etc/netns/%s-h%d" % (name, i)) for i in range(2))


def _link_bytes(name):
    env = {**os.environ, "LUATORCH_CLUSTER": name, "PYTHONPATH": ROOT}
    code = "import json; from run import cluster; print(json.dumps(cluster.counters(cluster.current())))"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(r.stdout)


@pytest.mark.slow
@pytest.mark.skipif(bool(_can_netns()), reason=str(_can_netns()))
def test_up_rolls_back_and_cleans_stale(tmp_path, monkeypatch):
    monkeypatch.setattr(cluster, "PREFIX", "ltr-h")
    monkeypatch.setattr(cluster, "SWITCH", "ltr-sw")
    monkeypatch.setattr(cluster, "STATE_DIR", str(tmp_path / "state"))

    def ours():
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return sorted(ln.split()[0] for ln in out.splitlines() if ln.startswith("ltr-"))

    subprocess.run(["ip", "netns", "add", "ltr-h7"], check=True)   # a crashed run's leftover
    real_shape = cluster.shape
    calls = []

    def failing_shape(ns, dev, *a):
        calls.append(ns)
        cmds = real_shape(ns, dev, *a)
        return cmds + [["tc", "-n", ns, "qdisc", "add", "dev", "nosuchdev", "root", "tbf"]] if len(calls) == 3 else cmds

    monkeypatch.setattr(cluster, "shape", failing_shape)
    try:
        with pytest.raises(cluster.ClusterError, match="nosuchdev"):
            cluster.up(3, 1, "100mbit", quiet=True)
        assert ours() == [] and not os.path.exists(cluster.STATE_DIR)
        monkeypatch.setattr(cluster, "shape", real_shape)
        st = cluster.up(2, 1, "100mbit", quiet=True)
        assert ours() == sorted(st["namespaces"])
    finally:
        cluster.down(quiet=True)
    assert ours() == []
