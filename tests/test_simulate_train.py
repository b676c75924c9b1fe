"""`luatorch simulate train`: the training-iteration model's arithmetic on hand-computed cases, the
buckets as our optimized DataParallelTable cuts them, the paper's machine as a SimGrid platform, and the
command end to end on a small case (SMPI simulates the allreduces)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from run import simulate, simulate_train as st

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HAVE_SMPI = bool(shutil.which("smpicc") and shutil.which("smpirun"))
needs_smpi = pytest.mark.skipif(not HAVE_SMPI, reason="SimGrid's smpicc/smpirun are not installed "
                                                      "(apt-get install libsimgrid-dev simgrid)")
MB = 1e6

# a 2-GPU node with round numbers: 1 GB/s NCCL, 2 GB/s host<->GPU, 10 GB/s GPU memory
HW = dict(st.defaults(), gpus_per_node=2, batch_per_gpu=4, nccl_GBps=1.0, host_gpu_GBps=2.0, hbm_GBps=10.0,
          sgd_passes=5, dispatch_ms=1.0, loader_threads=2, decode_ms=1.0, fs_read_ms=4.0, mem_read_ms=0.0,
          overlap=1, mpi_slowdown=1.0)
# forward 10 ms; backward: a 2 MB bucket in 4 ms, then a 1 MB bucket in 6 ms; 3 MB of parameters
SPEC = {"model": "tiny", "forward_s": 0.010, "param_bytes": 3 * MB, "input_bytes_per_gpu": 1 * MB,
        "buckets": [{"bytes": 2 * MB, "backward_s": 0.004}, {"bytes": 1 * MB, "backward_s": 0.006}]}


def allreduce(nbytes):   # 1 ms per MB plus 0.5 ms
    return nbytes / 1e9 + 0.0005


def ms(it):
    return round(it["iteration_s"] * 1e3, 6)


def test_baseline_iteration_by_hand():
    it = st.iteration(SPEC, HW, 2, "memory", "baseline", allreduce)
    # setup: bcast 3 MB at 1 GB/s (3) + 2 input slices of 1 MB at 2 GB/s, serial (1) + 2 dispatch rounds (2)
    # forward 10, backward 10; nccl.reduce 3 MB (3) + zeroing the other GPU's 3 MB at 10 GB/s (0.3);
    # allreduce of 3 MB (3.5); 3 MB down and up at 2 GB/s (3); update 5 x 3 MB at 10 GB/s (1.5)
    assert ms(it) == pytest.approx(6 + 10 + 10 + 3.3 + 3.5 + 3 + 1.5)
    assert it["parts"]["data_wait"] == 0
    # the file system: 8 images x (1 + 4) ms over 2 threads = 20 ms, under the 37.3 ms of compute
    assert ms(st.iteration(SPEC, HW, 2, "fs", "baseline", allreduce)) == pytest.approx(37.3)
    # 14 ms per read: 8 x 15 / 2 = 60 ms of loading, 22.7 of it waited for
    slow = st.iteration(SPEC, dict(HW, fs_read_ms=14.0), 2, "fs", "baseline", allreduce)
    assert ms(slow) == pytest.approx(60.0) and slow["parts"]["data_wait"] * 1e3 == pytest.approx(22.7)
    # one node: no allreduce and no host copies
    assert ms(st.iteration(SPEC, HW, 1, "memory", "baseline", allreduce)) == pytest.approx(37.3 - 3.5 - 3)


def test_optimized_iteration_by_hand():
    # start: bcast 3 + own input slice 0.5 + one dispatch 1 = 4.5; forward ends at 14.5
    # bucket 1 (2 MB): backward done 18.5, reduced on the node by 20.5, on the host 21.5,
    #   allreduced 21.5 -> 24.0, back on the GPU 25.0
    # bucket 2 (1 MB): backward done 24.5, reduced 25.5, host 26.0, allreduced 26.0 -> 27.5, back 28.0
    # exposed 28.0 - 24.5 = 3.5; update 1.5: 29.5
    it = st.iteration(SPEC, HW, 2, "memory", "optimized", allreduce)
    assert ms(it) == pytest.approx(29.5)
    assert it["parts"]["exposed_communication"] * 1e3 == pytest.approx(3.5)
    # not overlapped: both buckets start after the backward (24.5): reduced 26.5, 27.5; allreduced
    # 27.5 -> 30.0 and max(28.0, 30.0) -> 31.5, back 32.0: exposed 7.5, iteration 33.5
    assert ms(st.iteration(SPEC, dict(HW, overlap=0), 2, "memory", "optimized", allreduce)) == pytest.approx(33.5)
    # one node: bucket 1 reduced 18.5 -> 20.5, bucket 2 24.5 -> 25.5: exposed 1.0, iteration 27.0
    assert ms(st.iteration(SPEC, HW, 1, "memory", "optimized", allreduce)) == pytest.approx(27.0)
    # flat (one rank per GPU): no bcast, no node reduction: start 1.5, forward ends 11.5; bucket 1 done
    # 15.5, on the host 16.5, allreduced -> 19.0, back 20.0; bucket 2 done 21.5, host 22.0, allreduced
    # -> 23.5, back 24.0: exposed 2.5, total 1.5 + 20 + 2.5 + 1.5 = 25.5
    assert ms(st.iteration(SPEC, HW, 2, "memory", "optimized", allreduce, flat=True)) == pytest.approx(25.5)


def test_epoch_is_iterations_times_iteration():
    assert st.iterations_per_epoch(st.defaults(), 64) == 157   # 1281167 / 8192, rounded up
    assert st.iterations_per_epoch(dict(st.defaults(), batch_per_gpu=1281167), 1) == 1


def test_buckets_follow_the_optimized_data_parallel_tables_rule():
    children = [{"index": 1, "params": 10, "backward_flops": 1.0}, {"index": 2, "params": 0, "backward_flops": 2.0},
                {"index": 3, "params": 5, "backward_flops": 4.0}, {"index": 4, "params": 20, "backward_flops": 8.0},
                {"index": 5, "params": 0, "backward_flops": 16.0}]
    # from the last child: 5 has no parameters and 4 makes 20 >= 15, one bucket; 3 (5) and 2 (0) are too
    # small, 1 is the first child with parameters and takes what is left
    assert st.buckets(children, 15) == [
        {"first": 4, "last": 5, "elements": 20, "backward_flops": 24.0},
        {"first": 1, "last": 3, "elements": 15, "backward_flops": 7.0}]
    assert [b["elements"] for b in st.buckets(children, 1)] == [20, 5, 10]


def test_the_assumptions_can_be_changed_and_mistakes_are_one_line():
    assert st.parse_sets(["nccl_GBps=30", "loader_threads=16"])["loader_threads"] == 16
    with pytest.raises(simulate.SimulateError, match="NAME=VALUE"):
        st.parse_sets(["nosuch=1"])
    with pytest.raises(simulate.SimulateError, match="not a number"):
        st.parse_sets(["nccl_GBps=fast"])


def test_resnet50_profile_is_our_model():
    prof = st.model_profile("resnet50")
    assert sum(c["params"] for c in prof["children"]) == 25557032
    # 4.09 G multiply-adds per 224x224 image forward, backward about twice
    fwd = sum(c["forward_flops"] for c in prof["children"])
    bwd = sum(c["backward_flops"] for c in prof["children"])
    assert 8.0e9 < fwd < 8.4e9 and 1.9 < bwd / fwd < 2.0
    bks = st.buckets(prof["children"])
    assert sum(b["elements"] for b in bks) == 25557032
    assert bks[0]["elements"] == 2049000   # the classifier's bucket comes first in backward order


def test_the_simulations_are_one_launch_per_algorithm_and_rank_count():
    hw = st.defaults()
    specs = [st.timing_spec(st.model_profile(m), hw) for m in ("resnet50", "googlenet")]
    every = sorted({s for sp in specs for s in st.needed_sizes(sp)})    # both models: buckets + whole gradient
    buckets = sorted({b["bytes"] for sp in specs for b in sp["buckets"]})
    assert len(every) == 9 and max(every) == 4 * 25557032

    def plan(*argv):
        args = st.parser().parse_args(list(argv))
        return st.simulation_plan(args, hw, ["resnet50", "googlenet"], [8, 32], st.parse_list(args.beyond, int),
                                  st.parse_list(args.flat, int) if args.flat else [])

    p = plan("--beyond", "32,256", "--flat", "32,64")
    assert p[("multicolor", 8, 1)] == every and p[("mpi:ompi", 32, 1)] == every
    # the beyond algorithms get the whole gradient too (the beyond table's last part)
    assert all(p[(a, 32, 1)] == every for a in ("multicolor", "multicolor_ring", "ring", "rhd", "tree", "mpi:ompi"))
    assert not any(k[1] == 256 for k in p)          # above 64 nodes, and 256 flat ranks, only with --large
    assert p[("ring", 128, 4)] == buckets and ("ring", 256, 4) not in p
    p = plan("--beyond", "256", "--large")
    assert {k for k in p if k[1] == 256} == {("multicolor", 256, 1), ("ring", 256, 1), ("mpi:ompi", 256, 1)}
    assert p[("ring", 256, 1)] == every


def test_smpi_algorithms_sizes_that_do_not_fit_in_memory_are_left_out(monkeypatch):
    # SMPI's own algorithms hold a private temporary of the message's size per rank; ours share theirs
    monkeypatch.setattr(st, "SMPI_PRIVATE_BYTES_MAX", 16e9)
    hw = st.defaults()
    args = st.parser().parse_args(["--beyond", "64,256", "--large"])
    p = st.simulation_plan(args, hw, ["resnet50", "googlenet"], [8], [64, 256], [])
    every = p[("ring", 256, 1)]
    assert p[("mpi:ompi", 64, 1)] == every                     # 64 x 102 MB = 6.5 GB
    assert p[("mpi:ompi", 256, 1)] == [s for s in every if s <= 59858944]   # 256 x 76.6 MB > 16 GB
    monkeypatch.setattr(st, "SMPI_PRIVATE_BYTES_MAX", 1e6)
    p = st.simulation_plan(args, hw, ["resnet50"], [8], [256], [])
    assert ("mpi:ompi", 256, 1) not in p and ("mpi:ompi", 8, 1) not in p and p[("multicolor", 8, 1)]


@needs_smpi
def test_minsky_platform_parses_and_an_allreduce_runs_on_it(tmp_path):
    info = simulate.platform_info(simulate.platform_path("minsky"))
    assert len(info["hosts"]) == 256 and info["hosts"][0] == "minsky-0"
    assert info["link_Bps"] == pytest.approx(12.5e9)
    out = tmp_path / "sim.json"
    env = {**os.environ, "LUATORCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-m", "run.cli", "simulate", "allreduce", "--platform", "minsky", "--np", "8",
                        "--sizes", "4000,8M", "--algorithms", "multicolor,ring,mpi:ompi", "--iters", "1",
                        "--warmup", "0", "--verify-mib", "1", "--network-only", "--quiet", "--json", str(out)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    recs = {(x["algorithm"], x["bytes"]): x for x in json.loads(out.read_text())}
    assert all(recs[(a, 4000)]["correct"] is True for a in ("multicolor", "ring", "mpi:ompi"))
    # 8 MiB over EDR: a ring moves 2 x 7/8 of it per node at 12.5 GB/s x 0.97, at least 1.21 ms. The 8 MiB case
    # is the network's time alone (--network-only; the 4000-byte case still sums and is checked): with the host
    # time SMPI benchmarks it came out 2,061 us on an idle machine and 2,404 us in a loaded CI run, as much as
    # halving the link's speed would add; network-only it is 1,233 us, the same on every run
    assert 1.21e3 < recs[("ring", 8 << 20)]["time_us_median"] < 1.4e3


@needs_smpi
def test_simulate_train_end_to_end(tmp_path):
    doc = tmp_path / "paper-scale.md"
    doc.write_text("# hand-written head\n\n%s\nold\n%s\nhand-written tail\n" % (st.BEGIN, st.END))
    out = tmp_path / "train.json"
    env = {**os.environ, "LUATORCH_CACHE": str(tmp_path / "cache"), "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-m", "run.cli", "simulate", "train", "--nodes", "2,4", "--model", "resnet50",
                        "--out", str(doc), "--json", str(out), "--quiet"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    text = doc.read_text()
    assert text.startswith("# hand-written head") and text.rstrip().endswith("hand-written tail")
    assert "old" not in text and "| memory+multicolor+DPT |" in text
    rows = json.loads(out.read_text())
    assert len(rows) == 8 * 2 and {r["nodes"] for r in rows} == {2, 4}
    by = {(r["nodes"], r["data"], r["allreduce"], r["dpt"]): r for r in rows}
    # every optimization helps or is neutral here, and the optimized DPT hides most of the allreduce
    base, best = by[(4, "fs", "mpi:ompi", "baseline")], by[(4, "memory", "multicolor", "optimized")]
    assert best["epoch_s"] < base["epoch_s"]
    assert best["parts"]["exposed_communication"] < base["parts"]["allreduce"]
    r = subprocess.run([sys.executable, "-m", "run.cli", "simulate", "train", "--model", "vgg"],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert r.returncode == 2 and "unknown model 'vgg'" in r.stderr and r.stderr.strip().count("\n") == 0
