"""`luatorch cluster`: an emulated cluster of N hosts on this machine (root only).

    luatorch cluster up --nodes 4 --links 1 --rate 1gbit [--delay 50us]
    luatorch cluster status | down
    luatorch cluster exec lt-h1 -- python -c 'import socket; print(socket.gethostname())'
    luatorch cluster speed [--seconds 2]          # measured TCP throughput per link
    luatorch cluster up --nodes 4 --storage DIR [--storage-rate 1gbit]   # + a file server

With --storage, one more namespace lt-storage (address 10.77.0.250 on link 0, its own veth to the
switch, shaped like the hosts' links) runs sshd and serves DIR read-only over SFTP; every host mounts it
with sshfs (FUSE) at STATE_DIR/mnt/<host>, so a file read there crosses that host's link and the
storage link, which all hosts share. The keys (client and host) are made in STATE_DIR/ssh, never in
~/.ssh; `down` unmounts and stops sshfs and sshd (also what a crashed `up` left).

Each host is a network namespace lt-h<i> whose processes see their own
hostname (a UTS namespace entered by `exec`) and an /etc/hosts that names
every host (`ip netns exec` binds /etc/netns/<ns>/hosts over /etc/hosts).
Link k of every host is a veth pair eth<k> <-> h<i>l<k>; the switch end sits
on bridge br<k> in a switch namespace lt-sw, so link k is subnet
10.77.<k>.0/24 (host i is .i+1) and the host's own network namespace is never
touched. Both ends of every veth shape their egress (tbf, optionally behind
netem for delay), so each direction of each link is limited to the rate.

The state (namespaces, rate, host list, launcher agent) is recorded in
STATE_DIR/state.json; `down` removes what it names (and anything lt-*
that a crashed run left), `up` first cleans a stale setup, and a failure
in the middle of `up` rolls back.

MPI: `exec` doubles as the remote launcher (MPICH hydra `-launcher ssh
-launcher-exec STATE_DIR/agent`, Open MPI `--mca plm_rsh_agent STATE_DIR/agent`):
the agent runs its command line with `sh -c` inside the host's namespace,
as ssh would. `mpi_launch()` gives the launch command and environment that
keep MPI on the emulated links (TCP only, no shared memory).
"""
import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time

# LUATORCH_CLUSTER names a cluster (default "lt"), so a test can run beside a measurement
NAME = os.environ.get("LUATORCH_CLUSTER", "lt")
if not re.fullmatch(r"[a-z][a-z0-9]{0,7}", NAME):
    raise SystemExit("LUATORCH_CLUSTER must be 1-8 lowercase letters/digits, starting with a letter")
STATE_DIR = "/run/luatorch-cluster" + ("" if NAME == "lt" else "-" + NAME)
PREFIX = NAME + "-h"
SWITCH = NAME + "-sw"
SUBNET = "10.77"


def storage_name():
    """The storage host's namespace: lt-storage (named after the switch, so it follows the cluster's name)."""
    return SWITCH[:-len("-sw")] + "-storage"

STORAGE_HOST = 250   # the storage's address on link 0: 10.77.0.250 (hosts are .1 .. .64)


class ClusterError(RuntimeError):
    pass


# ------------------------------------------------------------- the plan

def parse_rate(s):
    """tc-style rate ('1gbit', '500mbit', '100kbit', '1000000') in bits per second."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([kmg]?)(bit|bps)?\s*", str(s).lower())
    if not m:
        raise ClusterError("bad rate %r (e.g. 1gbit, 500mbit)" % s)
    bits = float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]
    if m.group(3) == "bps":   # tc's bps means bytes per second
        bits *= 8
    if bits <= 0:
        raise ClusterError("rate must be positive: %r" % s)
    return int(bits)


def parse_delay(s):
    """'50us', '1ms', '0' -> seconds."""
    if not s:
        return 0.0
    m = re.fullmatch(r"\s*([0-9.]+)\s*(us|ms|s)?\s*", str(s).lower())
    if not m:
        raise ClusterError("bad delay %r (e.g. 50us, 1ms)" % s)
    return float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, None: 1.0}[m.group(2)]


def host_name(i):
    return "%s%d" % (PREFIX, i)


def address(i, k):
    return "%s.%d.%d" % (SUBNET, k, i + 1)


def plan(nodes, links, rate, delay=None, storage=None, storage_rate=None):
    """The commands that build the cluster, in order, and the state that undoes it (pure).
    `storage`: a directory the storage namespace serves (its link at `storage_rate`, default `rate`)."""
    if not 2 <= nodes <= 64:
        raise ClusterError("--nodes must be 2..64 (got %d)" % nodes)
    if not 1 <= links <= 8:
        raise ClusterError("--links must be 1..8 (got %d)" % links)
    bits = parse_rate(rate)
    secs = parse_delay(delay)
    # tbf: a bucket of 2 ms of traffic (at least 64 KiB so a GSO packet fits), queue up to 20 ms
    burst = max(65536, int(bits / 8 * 0.002))
    hosts = [host_name(i) for i in range(nodes)]
    cmds = [["ip", "netns", "add", SWITCH], ["ip", "-n", SWITCH, "link", "set", "lo", "up"]]
    for k in range(links):
        cmds += [["ip", "-n", SWITCH, "link", "add", "br%d" % k, "type", "bridge"],
                 ["ip", "-n", SWITCH, "link", "set", "br%d" % k, "up"]]
    for i, h in enumerate(hosts):
        cmds += [["ip", "netns", "add", h], ["ip", "-n", h, "link", "set", "lo", "up"]]
        for k in range(links):
            dev, peer = "eth%d" % k, "h%dl%d" % (i, k)
            cmds += [["ip", "-n", h, "link", "add", dev, "type", "veth", "peer", "name", peer, "netns", SWITCH],
                     ["ip", "-n", SWITCH, "link", "set", peer, "master", "br%d" % k],
                     ["ip", "-n", h, "addr", "add", address(i, k) + "/24", "dev", dev]]
            for ns, d in ((h, dev), (SWITCH, peer)):
                cmds += shape(ns, d, bits, burst, secs)
            cmds += [["ip", "-n", SWITCH, "link", "set", peer, "up"], ["ip", "-n", h, "link", "set", dev, "up"]]
    state = {"nodes": nodes, "links": links, "rate": rate, "rate_bits": bits, "delay": delay or "",
             "delay_s": secs, "burst": burst, "hosts": hosts, "switch": SWITCH,
             "addresses": {h: [address(i, k) for k in range(links)] for i, h in enumerate(hosts)},
             "namespaces": [SWITCH] + hosts}
    if storage:
        sbits = parse_rate(storage_rate or rate)
        sburst = max(65536, int(sbits / 8 * 0.002))
        peer, addr, ns_st = "st0", "%s.0.%d" % (SUBNET, STORAGE_HOST), storage_name()
        cmds += [["ip", "netns", "add", ns_st], ["ip", "-n", ns_st, "link", "set", "lo", "up"],
                 ["ip", "-n", ns_st, "link", "add", "eth0", "type", "veth", "peer", "name", peer, "netns", SWITCH],
                 ["ip", "-n", SWITCH, "link", "set", peer, "master", "br0"],
                 ["ip", "-n", ns_st, "addr", "add", addr + "/24", "dev", "eth0"]]
        for ns, d in ((ns_st, "eth0"), (SWITCH, peer)):
            cmds += shape(ns, d, sbits, sburst, secs)
        cmds += [["ip", "-n", SWITCH, "link", "set", peer, "up"], ["ip", "-n", ns_st, "link", "set", "eth0", "up"]]
        state["storage"] = {"namespace": ns_st, "address": addr, "dir": os.path.abspath(storage),
                            "rate": storage_rate or rate, "rate_bits": sbits}
        state["namespaces"].append(ns_st)
    return cmds, state


def shape(ns, dev, bits, burst, delay):
    """Egress shaping of one veth end: tbf at the rate, behind netem when there is a delay."""
    tbf = ["tbf", "rate", "%dbit" % bits, "burst", str(burst), "latency", "20ms"]
    if not delay:
        return [["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", *tbf]]
    return [["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem", "delay",
             "%dus" % round(delay * 1e6), "limit", "100000"],
            ["tc", "-n", ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *tbf]]


def hosts_file(state):
    """/etc/hosts as every emulated host sees it: each name at its link-0 address."""
    lines = ["127.0.0.1 localhost"]
    for h in state["hosts"]:
        addrs = state["addresses"][h]
        lines.append("%s %s" % (addrs[0], h))
        lines += ["%s %s-l%d" % (a, h, k) for k, a in enumerate(addrs) if k]
    if state.get("storage"):
        lines.append("%s %s" % (state["storage"]["address"], state["storage"]["namespace"]))
    return "\n".join(lines) + "\n"


def agent_script(state_dir):
    """The remote-shell stand-in MPI launchers call as `agent [-opts] HOST COMMAND...`."""
    return """#!/bin/sh
# luatorch cluster agent: run COMMAND in emulated host HOST, as ssh would (one shell command line).
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
[ $# -ge 2 ] || { echo "usage: $0 HOST COMMAND..." >&2; exit 2; }
host=$1; shift
[ -e /run/netns/$host ] && grep -qx "$host" %s/hosts || { echo "luatorch cluster: no host $host" >&2; exit 255; }
exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
""" % shlex.quote(state_dir)


def stale_namespaces(listing):
    """Names from `ip netns list` output that belong to a cluster (ours or a crashed one)."""
    names = [ln.split()[0] for ln in listing.splitlines() if ln.strip()]
    return [n for n in names if n in (SWITCH, storage_name()) or re.fullmatch(re.escape(PREFIX) + r"\d+", n)]


def read_state(state_dir=None):
    try:
        with open(os.path.join(state_dir or STATE_DIR, "state.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------- doing it

def _run(cmd, check=True):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise ClusterError("%s: %s" % (" ".join(cmd), (r.stderr or r.stdout).strip()))
    return r


def _require_root():
    if os.geteuid() != 0:
        raise ClusterError("luatorch cluster needs root (network namespaces, tc)")
    for tool in ("ip", "tc", "unshare"):
        if not shutil.which(tool):
            raise ClusterError("luatorch cluster needs `%s` (iproute2 / util-linux)" % tool)


# ------------------------------------------------------- the storage host

def sshd_config(state_dir, address):
    """sshd serving SFTP only, with keys from the state dir (nothing of the system's sshd setup)."""
    ssh = os.path.join(state_dir, "ssh")
    return "\n".join([
        "ListenAddress %s" % address, "Port 22",
        "HostKey %s/host_key" % ssh, "AuthorizedKeysFile %s/authorized_keys" % ssh,
        "PidFile %s/sshd.pid" % ssh, "PermitRootLogin prohibit-password", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no", "X11Forwarding no",
        "AllowTcpForwarding no", "Subsystem sftp internal-sftp", "ForceCommand internal-sftp -R", ""])


def sshfs_argv(state, host):
    """Mount the storage's directory (read-only) at the host's mount point; the ssh it runs uses only the
    state dir's key and known_hosts. No reconnect: a storage host that goes away fails the reads (EIO /
    ENOTCONN) once the keepalives time out (~6 s), rather than blocking them."""
    ssh = os.path.join(state["state_dir"], "ssh")
    sto = state["storage"]
    opts = ["ro", "IdentityFile=%s/client_key" % ssh, "IdentitiesOnly=yes", "UserKnownHostsFile=%s/known_hosts" % ssh,
            "GlobalKnownHostsFile=/dev/null", "StrictHostKeyChecking=yes", "BatchMode=yes",
            "ServerAliveInterval=2", "ServerAliveCountMax=3", "ConnectTimeout=10"]
    return ["sshfs", "-F", "/dev/null", "root@%s:%s" % (sto["address"], sto["dir"]), mount_point(state, host),
            "-o", ",".join(opts)]


def mount_point(state, host):
    return os.path.join(state["state_dir"], "mnt", host)


def _mounts_under(path):
    """Mount points at or below `path` (from /proc/mounts, deepest first)."""
    out = []
    with open("/proc/mounts") as f:
        for ln in f:
            mp = ln.split()[1].replace("\\040", " ")
            if mp == path or mp.startswith(path.rstrip("/") + "/"):
                out.append(mp)
    return sorted(out, key=len, reverse=True)


def _our_processes(namespaces, state_dir, names=("sshd", "sshfs", "ssh")):
    """Pids of sshd / sshfs / ssh processes in our namespaces whose command line names our state dir."""
    pids = []
    for ns in namespaces:
        for pid in _run(["ip", "netns", "pids", ns], check=False).stdout.split():
            try:   # comm, not argv[0]: sshd rewrites its argv ("sshd: /usr/sbin/sshd -f ... [listener]")
                with open("/proc/%s/comm" % pid) as f:
                    comm = f.read().strip()
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmdline = f.read().decode(errors="replace")
            except OSError:
                continue
            # sshd's sessions ("sshd: root@notty") do not name the state dir; in the storage namespace all are ours
            if comm in names and (state_dir in cmdline or (comm == "sshd" and ns == storage_name())):
                pids.append(int(pid))
    return pids


def _stop_storage(state_dir, namespaces):
    """Unmount every mount under the state dir, then stop our sshfs / ssh / sshd processes."""
    for mp in _mounts_under(state_dir):
        if _run(["fusermount3", "-u", "-z", mp], check=False).returncode != 0:
            _run(["umount", "-l", mp], check=False)
    pids = _our_processes(namespaces, state_dir)
    for pid in pids:
        try:
            os.kill(pid, 15)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    for pid in pids:
        while os.path.exists("/proc/%d" % pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def _start_storage(state):
    sto, state_dir = state["storage"], state["state_dir"]
    for tool in ("sshfs", "ssh-keygen", "fusermount3", "nsenter"):
        if not shutil.which(tool):
            raise ClusterError("--storage needs `%s` (apt-get install sshfs openssh-server)" % tool)
    if not os.path.exists("/usr/sbin/sshd"):
        raise ClusterError("--storage needs /usr/sbin/sshd (apt-get install openssh-server)")
    if not os.path.isdir(sto["dir"]):
        raise ClusterError("--storage %s: no such directory" % sto["dir"])
    if not os.path.exists("/dev/fuse"):
        raise ClusterError("--storage needs FUSE (/dev/fuse) for sshfs")
    ssh = os.path.join(state_dir, "ssh")
    os.makedirs(ssh, mode=0o700)
    for key in ("client_key", "host_key"):
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "luatorch-cluster", "-f", os.path.join(ssh, key)])
    shutil.copy(os.path.join(ssh, "client_key.pub"), os.path.join(ssh, "authorized_keys"))
    with open(os.path.join(ssh, "host_key.pub")) as f:
        _write(os.path.join(ssh, "known_hosts"), "%s %s" % (sto["address"], f.read()))
    _write(os.path.join(ssh, "sshd_config"), sshd_config(state_dir, sto["address"]))
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)   # sshd's privilege-separation directory
    _run(["ip", "netns", "exec", sto["namespace"], "/usr/sbin/sshd", "-f", os.path.join(ssh, "sshd_config"),
          "-E", os.path.join(ssh, "sshd.log")])
    mounts = {}
    for h in state["hosts"]:
        mp = mount_point(state, h)
        os.makedirs(mp)
        for attempt in range(50):   # sshd may still be binding its address
            # nsenter, not `ip netns exec`: that one gives the command a mount namespace of its own, where
            # the mount would stay; this way only the network is the host's, the mount is everyone's
            r = _run(["nsenter", "--net=/run/netns/%s" % h] + sshfs_argv(state, h), check=False)
            if r.returncode == 0:
                break
            time.sleep(0.1)
        else:
            raise ClusterError("sshfs on %s could not mount %s:%s: %s" % (h, sto["address"], sto["dir"],
                                                                           (r.stderr or r.stdout).strip()))
        mounts[h] = mp
    return mounts


def down(state_dir=None, quiet=False):
    """Remove every namespace of the recorded cluster and any stale lt-* one; idempotent."""
    state_dir = state_dir or STATE_DIR
    st = read_state(state_dir) or {}
    names = list(st.get("namespaces", []))
    names += [n for n in stale_namespaces(_run(["ip", "netns", "list"], check=False).stdout) if n not in names]
    _stop_storage(state_dir, names)
    if _mounts_under(state_dir):   # never delete below a live mount (it would be the served folder)
        raise ClusterError("cannot unmount %s; unmount it by hand, then run `luatorch cluster down` again"
                           % " ".join(_mounts_under(state_dir)))
    for ns in names:   # deleting a namespace deletes its veths (and so their peers) and bridges
        _run(["ip", "netns", "delete", ns], check=False)
        shutil.rmtree(os.path.join("/etc/netns", ns), ignore_errors=True)
    shutil.rmtree(state_dir, ignore_errors=True)
    if not quiet:
        print("luatorch cluster: down (%s)" % (", ".join(names) if names else "nothing was up"))
    return names


def up(nodes, links, rate, delay=None, state_dir=None, quiet=False, storage=None, storage_rate=None):
    _require_root()
    state_dir = state_dir or STATE_DIR
    cmds, state = plan(nodes, links, rate, delay, storage, storage_rate)
    down(state_dir, quiet=True)
    os.makedirs(state_dir)
    # the state is written first, so a failure below (or a kill) leaves down() a full list
    state["state_dir"] = state_dir
    _write(os.path.join(state_dir, "state.json"), json.dumps(state, indent=1))
    try:
        for cmd in cmds:
            try:
                _run(cmd)
            except ClusterError as err:
                if "netem" in cmd and "unknown" in str(err):
                    raise ClusterError("--delay needs tc's netem qdisc (kernel module sch_netem), which this "
                                       "kernel (%s) does not have" % os.uname().release) from None
                raise
        for h in state["hosts"]:
            os.makedirs(os.path.join("/etc/netns", h), exist_ok=True)
            _write(os.path.join("/etc/netns", h, "hosts"), hosts_file(state))
        _write(os.path.join(state_dir, "hosts"), "\n".join(state["hosts"]) + "\n")
        agent = os.path.join(state_dir, "agent")
        _write(agent, agent_script(state_dir))
        os.chmod(agent, 0o755)
        if storage:
            state["storage"]["mounts"] = _start_storage(state)
            _write(os.path.join(state_dir, "state.json"), json.dumps(state, indent=1))
    except BaseException:
        down(state_dir, quiet=True)
        raise
    if not quiet:
        print("luatorch cluster: up: %d hosts (%s), %d link(s) each at %s%s; agent %s" % (
            nodes, " ".join(state["hosts"]), links, rate, " + %s delay" % delay if delay else "", agent))
        if storage:
            sto = state["storage"]
            print("luatorch cluster: storage %s (%s, link at %s) serves %s read-only; mounted (sshfs) at %s"
                  % (sto["namespace"], sto["address"], sto["rate"], sto["dir"], os.path.join(state_dir, "mnt", "<host>")))
    return state


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def current():
    st = read_state()
    if not st:
        raise ClusterError("no emulated cluster is up (luatorch cluster up --nodes N ...)")
    return st


def exec_argv(host, argv):
    """The argv that runs argv on an emulated host (its namespace and hostname)."""
    st = current()
    if host not in st["hosts"]:
        raise ClusterError("no host %s (hosts: %s)" % (host, " ".join(st["hosts"])))
    return ["ip", "netns", "exec", host, "unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, *argv]


def counters(state):
    """Bytes sent and received by every host link (switch-side counters are the mirror image)."""
    out = {}
    for h in state["hosts"]:
        for k in range(state["links"]):
            r = _run(["ip", "-n", h, "-s", "-j", "link", "show", "eth%d" % k])
            s = json.loads(r.stdout)[0]["stats64"]
            out["%s/eth%d" % (h, k)] = (s["tx"]["bytes"], s["rx"]["bytes"])
    return out


def storage_counters(state):
    """(tx, rx) bytes of the storage host's link."""
    r = _run(["ip", "-n", state["storage"]["namespace"], "-s", "-j", "link", "show", "eth0"])
    s = json.loads(r.stdout)[0]["stats64"]
    return s["tx"]["bytes"], s["rx"]["bytes"]


def status(verbose=True):
    st = read_state()
    present = stale_namespaces(_run(["ip", "netns", "list"], check=False).stdout)
    if not st:
        print("luatorch cluster: down" + (" (stale namespaces: %s; run `luatorch cluster down`)"
                                          % " ".join(present) if present else ""))
        return 1
    print("luatorch cluster: %d hosts x %d link(s) at %s%s; namespaces present: %s" % (
        st["nodes"], st["links"], st["rate"], " + %s delay" % st["delay"] if st["delay"] else "",
        " ".join(present)))
    if verbose:
        for dev, (tx, rx) in counters(st).items():
            print("  %-14s %s  tx %d B  rx %d B" % (dev, st["addresses"][dev.split("/")[0]][int(dev[-1])], tx, rx))
        if st.get("storage"):
            sto = st["storage"]
            tx, rx = storage_counters(st)
            print("  %-14s %s  tx %d B  rx %d B  serves %s at %s" % (sto["namespace"] + "/eth0", sto["address"], tx, rx,
                                                                   sto["dir"], " ".join(sto.get("mounts", {}).values())))
    return 0


# ------------------------------------------------------- measured speed

SPEED_SERVER = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8); print("ready", flush=True)
conns = [s.accept()[0] for _ in range(int(sys.argv[3]))]
import threading
res = []
def drain(c):
    n, t0, buf = 0, None, bytearray(1 << 20)
    while True:
        k = c.recv_into(buf)
        if not k: break
        if t0 is None: t0 = time.perf_counter()
        n += k
    res.append((n, time.perf_counter() - t0))
ts = [threading.Thread(target=drain, args=(c,)) for c in conns]
[t.start() for t in ts]; [t.join() for t in ts]
print(" ".join("%d:%.6f" % r for r in res), flush=True)
"""

SPEED_CLIENT = r"""
import socket, sys, time, threading
dsts, port, secs = sys.argv[1].split(","), int(sys.argv[2]), float(sys.argv[3])
def blast(d):
    c = socket.create_connection((d, port)); buf = bytes(1 << 18); end = time.perf_counter() + secs
    while time.perf_counter() < end: c.sendall(buf)
    c.close()
ts = [threading.Thread(target=blast, args=(d,)) for d in dsts]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def speed(seconds=2.0, src=0, dst=1, links=None, port=5201):
    """Throughput host src -> host dst, one TCP stream per link at once, in bit/s per link."""
    st = current()
    links = range(st["links"]) if links is None else links
    dsts = [address(dst, k) for k in links]
    results = []
    srv = subprocess.Popen(exec_argv(st["hosts"][dst], [sys.executable, "-c", SPEED_SERVER, "0.0.0.0", str(port),
                                                        str(len(dsts))]), stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        subprocess.run(exec_argv(st["hosts"][src], [sys.executable, "-c", SPEED_CLIENT, ",".join(dsts), str(port),
                                                    str(seconds)]), check=True)
        line = srv.stdout.readline().split()
        for item in line:
            n, t = item.split(":")
            results.append(int(n) * 8 / float(t))
    finally:
        srv.wait(timeout=30)
    return results


# ------------------------------------------------------------ MPI launch

def mpi_launch(family, nranks, python_env=None, per_host=1):
    """(argv prefix, environment) that run an MPI job of nranks across the cluster, TCP only.

    The prefix ends where the program's argv starts; it runs the launcher
    itself inside the first host."""
    st = current()
    hosts = st["hosts"]
    if nranks > len(hosts) * per_host:
        raise ClusterError("%d ranks on %d hosts x %d" % (nranks, len(hosts), per_host))
    agent = os.path.join(st["state_dir"], "agent")
    # all "hosts" share this machine's cores: with more ranks than cores, spinning ranks
    # starve the one with work, so our progress loop backs off (coll_core.c) and so does MPICH's
    shared = {"LUATORCH_MPI_SPIN": "32", "MPIR_CVAR_POLLS_BEFORE_YIELD": "100", "MPIR_CVAR_ENABLE_HEAVY_YIELD": "1",
              "OMPI_MCA_mpi_yield_when_idle": "1"} if nranks > (os.cpu_count() or 1) else {}
    ifaces = ["eth%d" % k for k in range(st["links"])]
    if family == "openmpi":
        mpirun = shutil.which("mpirun.openmpi") or "mpirun"
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **shared}
        hostlist = ",".join("%s:%d" % (h, per_host) for h in hosts)
        argv = [mpirun, "-n", str(nranks), "--host", hostlist, "--map-by", "node",
                "--mca", "plm_rsh_agent", agent,
                "--mca", "pml", "ob1", "--mca", "btl", "tcp,self",   # no vader: ranks are on "other hosts"
                "--mca", "btl_tcp_if_include", ",".join(ifaces), "--mca", "oob_tcp_if_include", "eth0"]
        for var in ("PYTHONPATH", "LUATORCH_CACHE", "PATH", "MPI4PY_MPIABI"):
            if var in os.environ or var == "PYTHONPATH":   # the bench sets PYTHONPATH in the launch's env
                argv += ["-x", var]
    else:
        mpiexec = os.path.join(os.path.dirname(sys.executable), "mpiexec")
        # the wheel's ch4:ofi (libfabric tcp) uses one interface even with
        # MPIR_CVAR_CH4_OFI_ENABLE_MULTI_NIC_STRIPING; ch4:ucx's tcp transport stripes over rails
        env = {"MPIR_CVAR_CH4_NETMOD": "ucx", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": ",".join(ifaces),
               "UCX_MAX_RNDV_RAILS": str(len(ifaces)), "UCX_MAX_EAGER_RAILS": str(len(ifaces)),
               "MPIR_CVAR_NOLOCAL": "1", **shared}
        argv = [mpiexec, "-launcher", "ssh", "-launcher-exec", agent, "-iface", "eth0",
                "-hosts", ",".join("%s:%d" % (h, per_host) for h in hosts), "-n", str(nranks), "-genvall"]
    return exec_argv(hosts[0], argv), env


# ------------------------------------------------------------------ CLI

def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="luatorch cluster", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="bring up N emulated hosts (replaces a previous cluster)")
    u.add_argument("--nodes", type=int, default=4)
    u.add_argument("--links", type=int, default=1)
    u.add_argument("--rate", default="1gbit", help="per link and direction (tc syntax: 1gbit, 500mbit)")
    u.add_argument("--delay", default="", help="one-way delay per link end (netem), e.g. 50us")
    u.add_argument("--storage", metavar="DIR", help="add a storage host serving DIR (sshfs, read-only), mounted on "
                   "every host at STATE_DIR/mnt/<host>")
    u.add_argument("--storage-rate", help="the storage host's link, per direction (default: --rate)")
    sub.add_parser("down", help="remove the emulated cluster")
    sub.add_parser("status", help="what is up, with per-link byte counters")
    e = sub.add_parser("exec", help="run a command on an emulated host: exec HOST -- CMD ...")
    e.add_argument("host")
    e.add_argument("command", nargs=argparse.REMAINDER)
    s = sub.add_parser("speed", help="measured TCP throughput from host 0 to host 1, all links at once")
    s.add_argument("--seconds", type=float, default=2.0)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "up":
            up(a.nodes, a.links, a.rate, a.delay, storage=a.storage, storage_rate=a.storage_rate)
        elif a.cmd == "down":
            _require_root()
            down()
        elif a.cmd == "status":
            return status()
        elif a.cmd == "exec":
            cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
            if not cmd:
                raise ClusterError("exec: no command")
            os.execvp("ip", exec_argv(a.host, cmd))
        elif a.cmd == "speed":
            st = current()
            res = speed(a.seconds)
            for k, bps in enumerate(res):
                print("link %d: %.1f Mbit/s (%.0f%% of %s)" % (k, bps / 1e6, 100 * bps / st["rate_bits"], st["rate"]))
    except ClusterError as err:
        print("luatorch cluster: %s" % err, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
