"""Plots and reports: round axis ticks (run/svgplot.py), the training plots' accuracy axis, the allreduce report's
--svg-dir, and `bench data`'s cold cache without --drop-caches."""
import json
import math
import re

import pytest

from pytorch_bridge.host import plot_log
from run.svgplot import nice_ticks, tick_label


def assert_round_cover(ticks, lo, hi, most):
    assert 2 <= len(ticks) <= most
    diff = (ticks[-1] - ticks[0]) / (len(ticks) - 1)
    k = math.floor(math.log10(diff) + 1e-9)
    m = min((1, 2, 5, 10), key=lambda m: abs(diff / 10 ** k - m))
    step = m * 10.0 ** k  # 1, 2 or 5 x 10^k (10 x 10^k is 1 x 10^(k+1))
    assert abs(diff - step) < 1e-6 * step, (diff, ticks)
    for i, t in enumerate(ticks):  # evenly spaced on the step's grid
        n = round(t / step)
        assert abs(t - n * step) < 1e-6 * step and n == round(ticks[0] / step) + i, (t, step, ticks)
    assert ticks[0] <= lo + 1e-9 * step and ticks[-1] >= hi - 1e-9 * step, (lo, hi, ticks)


@pytest.mark.parametrize("lo,hi", [(0, 61.9), (0, 99.2), (0, 2.59), (0.3, 0.42), (0, 1e-5), (1, 90), (-3, 7),
                                   (0, 1234567), (12.5, 12.51)])
def test_nice_ticks_are_round_and_cover(lo, hi):
    for most in (4, 7, 10):
        assert_round_cover(nice_ticks(lo, hi, most=most), lo, hi, most)


def test_nice_ticks_random_ranges(rng):
    for _ in range(500):
        scale = 10.0 ** int(rng.integers(-15, 12))
        lo = float(rng.uniform(-1, 1)) * scale
        hi = lo + float(rng.uniform(1e-6, 1)) * scale  # spans a plot can show: >= 1e-6 of the values
        most = int(rng.integers(3, 12))
        assert_round_cover(nice_ticks(lo, hi, most=most), lo, hi, most)


def test_nice_ticks_integer_and_labels():
    assert nice_ticks(1, 2, most=10, integer=True) == [1, 2]
    assert nice_ticks(0, 61.9) == [0, 20, 40, 60, 80]
    t = nice_ticks(0, 2.59)
    assert [tick_label(v, t) for v in t] == ["0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"]
    t = nice_ticks(0, 99.5)
    assert [tick_label(v, t, "%") for v in t][-1] == "100%"


def y_labels(svg):
    return re.findall(r'text-anchor="end">([^<]*)</text>', svg)


def test_accuracy_plot_never_above_100_percent(tmp_path):
    log = tmp_path / "log.jsonl"
    with open(log, "w") as f:
        for e, (tr, v1, v5) in enumerate([(80.0, 91.0, 99.2), (97.5, 98.9, 99.9), (99.8, 99.1, 100.0)], 1):
            f.write(json.dumps({"epoch": e, "train_top1": tr, "val_top1": v1, "val_top5": v5, "train_loss": 0.31 / e,
                                "val_loss": 0.4 / e, "time_compute": 1.0, "val_seconds": 0.2}) + "\n")
    plot_log(str(log), str(tmp_path))
    acc = y_labels((tmp_path / "accuracy.svg").read_text())
    assert acc[0] == "0%" and acc[-1] == "100%" and all(float(v.rstrip("%")) <= 100 for v in acc), acc
    loss = [float(v) for v in y_labels((tmp_path / "loss.svg").read_text())]
    assert loss[0] == 0 and loss[-1] >= 0.4
    assert_round_cover(loss, 0, 0.4, 7)


def test_allreduce_report_creates_svg_dir(tmp_path, capsys):
    from run.allreduce_report import main

    recs = [{"algorithm": alg, "ranks": 2, "bytes": b, "dtype": "float32", "time_us_median": t,
             "busbw_GBps": b / t / 1e3, "correct": True, "library": "MPICH 4\nmore"}
            for alg, scale in (("mpi", 1.0), ("ring", 0.8)) for b, t in ((4096, 20.0 * scale), (1 << 20, 900 * scale))]
    path = tmp_path / "allreduce-tiny.json"
    path.write_text(json.dumps(recs))
    out_dir = tmp_path / "new" / "plots"
    main([str(path), "--svg-dir", str(out_dir)])
    svg = (out_dir / "allreduce-tiny.svg").read_text()
    assert svg.startswith("<svg") and "ring" in svg
    ticks = [float(v) for v in y_labels(svg)]
    assert_round_cover(ticks, 0, max(r["busbw_GBps"] for r in recs), 7)
    assert "![allreduce float32, 2 ranks (MPICH 4)](allreduce-tiny.svg)" in capsys.readouterr().out


def test_bench_data_cold_without_flag_evicts_only_its_files(tmp_path, capsys):
    """Without --drop-caches the cold cache is per-file posix_fadvise, and the output says how to get the
    machine-wide drop (which this test must not do: other processes share the page cache)."""
    from pytorch_bridge.data.synth import synth
    from run.cli import main

    synth(str(tmp_path / "src"), 8, 2, seed=1, progress=False, size=(48, 40))
    assert main(["pack", str(tmp_path / "src"), str(tmp_path / "p")]) == 0
    out = tmp_path / "d.json"
    capsys.readouterr()
    assert main(["bench", "data", "--data", str(tmp_path / "p"), "--files", str(tmp_path / "src"), "--workers", "1",
                 "--modes", "threads", "--caches", "cold", "--batches", "1", "--batch-size", "4", "--iter-ms", "0",
                 "--json", str(out)]) == 0
    assert {r["cold_method"] for r in json.loads(out.read_text())} == {"fadvise"}
    assert "--drop-caches" in capsys.readouterr().out
