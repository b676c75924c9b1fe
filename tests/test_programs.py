"""`luatorch programs`: real Torch7 programs from a git copy of their repository (FB_RESNET_GIT names one of
fb.resnet.torch; without it that run skips), and the data set made for them in their own format."""
import os
import subprocess
import sys

import numpy as np
import pytest

from run.programs import cifar_like

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_cifar_cache_has_fb_resnet_layout(rt, tmp_path):
    from pytorch_bridge import t7

    rng = np.random.default_rng(1)
    path = str(tmp_path / "cifar10.t7")
    t7.save(path, {"train": cifar_like(20, rng), "val": cifar_like(6, rng)})
    # what fb.resnet.torch's datasets/cifar10.lua reads: data[i]:float() of 3x32x32, labels[i] in 1..10
    got = rt.eval("""function(p)
       local info = torch.load(p)
       local d, l = info.train.data, info.train.labels
       return torch.type(d), d:dim(), d:size(2), d:size(4), torch.type(l), l:min(), l:max(), info.val.data:size(1),
              d[1]:float():size(1)
    end""")(path)
    assert got[0] == "torch.ByteTensor" and got[1:4] == (4, 3, 32) and got[4] == "torch.ByteTensor"
    assert 1 <= got[5] and got[6] <= 10 and got[7] == 6 and got[8] == 3


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("FB_RESNET_GIT"), reason="FB_RESNET_GIT (a git copy of fb.resnet.torch) not set")
def test_fb_resnet_torch_runs_unmodified():
    r = subprocess.run([sys.executable, "-m", "run.cli", "programs", "fb.resnet.torch", os.environ["FB_RESNET_GIT"]],
                       cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "fb.resnet.torch: every step passed" in r.stdout
