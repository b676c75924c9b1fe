"""The benchmark programs run end to end on tiny sizes and write the JSON keys they promise.
(Timings are never asserted: benchmarks are programs, not tests.)"""
import json

import pytest


def test_bench_gemm(tmp_path):
    from run import bench_gemm

    out = tmp_path / "g.json"
    assert bench_gemm.main(["--n", "96", "--threads", "1", "--repeat", "2", "--json", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert {"ours_gflops", "numpy_gflops", "ratio"} <= set(rec)
    assert rec["max_rel_error"] < 1e-5


def test_bench_tensor(tmp_path):
    from run import bench_tensor

    out = tmp_path / "t.json"
    assert bench_tensor.main(["--size", "100000", "--repeat", "2", "--threads", "1", "--json", str(out)]) == 0
    recs = json.loads(out.read_text())
    assert {r["op"] for r in recs} == {"add", "mul", "sum"}
    assert all({"ours_ms", "numpy_ms", "ratio"} <= set(r) for r in recs)


def test_bench_model(tmp_path):
    pytest.importorskip("torch")
    from run import bench_model

    out = tmp_path / "m.json"
    assert bench_model.main(["--model", "resnet20", "--batch", "2", "--iters", "1", "--warmup", "0",
                             "--threads", "1", "--json", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert {"model", "batch", "threads", "ours_images_per_s", "pytorch_images_per_s", "ratio"} <= set(rec)
    assert rec["layers"] and rec["layers"][0]["seconds"] >= rec["layers"][-1]["seconds"]


def test_bench_overhead(tmp_path):
    pytest.importorskip("torch")
    from run import bench_overhead

    out = tmp_path / "o.json"
    assert bench_overhead.main(["--calls", "20", "--repeat", "1", "--batch", "1", "--iters", "1", "--json", str(out),
                                "--svg", str(tmp_path / "o.svg")]) == 0
    recs = json.loads(out.read_text())
    calls = [r for r in recs if r.get("kind") != "iteration"]
    its = [r for r in recs if r.get("kind") == "iteration"]
    assert {r["pass"] for r in calls} == {"forward", "forward+backward"}
    assert all(r["ours_us"] > 0 and r["pytorch_us"] > 0 for r in calls)
    assert len(its) == 2 and (tmp_path / "o.svg").exists()
    for r in its:
        # kernel time is measured, not assumed: positive and below the iteration time
        assert 0 < r["kernel_ms"] <= r["iteration_ms"] and 0 <= r["outside_share"] < 1


def test_bench_train(tmp_path):
    from run import bench_train

    out = tmp_path / "t.json"
    assert bench_train.main(["--configs", "scaling", "--ranks", "1", "--iters", "2", "--batch-per-rank", "4",
                             "--json", str(out), "--svg", str(tmp_path / "t.svg")]) == 0
    (rec,) = json.loads(out.read_text())
    assert rec["ranks"] == 1 and rec["global_batch"] == 4 and rec["iter_ms"] > 0
    assert rec["compute_ms"] <= rec["iter_ms"] and rec["weak_scaling_efficiency"] == 1.0
