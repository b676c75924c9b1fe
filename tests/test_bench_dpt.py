"""`luatorch bench dpt` runs end to end on a tiny size and writes the JSON keys it promises."""
import json


def test_bench_dpt(tmp_path):
    from run import bench_dpt

    out = tmp_path / "d.json"
    assert bench_dpt.main(["--model", "resnet20", "--batch", "3", "--iters", "1", "--warmup", "0",
                           "--devices", "1,2", "--json", str(out)]) == 0
    recs = json.loads(out.read_text())
    assert [(r["impl"], r["devices"]) for r in recs] == [("plain", 1), ("baseline", 1), ("optimized", 1),
                                                         ("baseline", 2), ("optimized", 2)]
    assert all({"step_s", "images_per_s", "vs_baseline", "phases_s", "loadavg"} <= set(r) for r in recs)
    assert "reduce" in recs[3]["phases_s"] and "device_fb" in recs[4]["phases_s"]
