"""Benchmarks that compare against PyTorch say, in one line, how to get it when it is not installed."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# sys.modules['torch'] = None makes `import torch` raise ModuleNotFoundError, exactly as without the package
HIDE_TORCH = "import sys; sys.modules['torch'] = None; from run.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("what", ["model", "conv", "overhead"])
def test_bench_without_torch_names_the_extra(what, tmp_path):
    r = subprocess.run([sys.executable, "-c", HIDE_TORCH, "bench", what], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, env={**os.environ, "PYTHONPATH": ROOT})
    assert r.returncode != 0
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "luatorch bench %s" % what in lines[0] and "luatorch[bench]" in lines[0] and "cpu" in lines[0], lines[0]
