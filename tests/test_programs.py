"""`luatorch programs`: real Torch7 programs from a git copy of their repository (FB_RESNET_GIT names one of
fb.resnet.torch, CHAR_RNN_GIT one of karpathy/char-rnn; without it that run skips), and the data sets made for them
in their own format."""
import os
import subprocess
import sys

import numpy as np
import pytest

from run.programs import GRAMMAR, cifar_like, grammar_text, grammatical_share, val_losses

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
    _every_step_passes("fb.resnet.torch", os.environ["FB_RESNET_GIT"], 1800)


def _every_step_passes(program, git, timeout):
    r = subprocess.run([sys.executable, "-m", "run.cli", "programs", program, git], cwd=ROOT, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "%s: every step passed" % program in r.stdout


def test_the_grammar_text_and_its_checks():
    text = grammar_text(3000, np.random.default_rng(2))
    lines = text.splitlines()
    assert 2990 <= len(text) < 3100 and len(lines) > 50
    # every line a sentence of the grammar, and every word of it used
    share, n = grammatical_share("cut\n" + text + "cut")
    assert share == 1.0 and n == len(lines)
    for words in GRAMMAR:
        assert all(any(w in ln for ln in lines) for w in words)
    # a misspelt line and a run-on line are not sentences; the cut first and last lines are not counted
    share, n = grammatical_share("he cat sees the moon.\nthe cat sees the moon.\nthe cat sees the mon.\n"
                                 "a dog calls a tree.a dog calls a tree.\nthe cat")
    assert (share, n) == (1 / 3, 3)
    assert grammatical_share("no complete line") == (0.0, 0)


def test_val_losses_reads_char_rnn_checkpoint_names(tmp_path):
    for name in ("lm_lstm_epoch1.00_2.5000.t7", "lm_gru_epoch0.50_3.1000.t7", "lm_lstm_epoch10.00_0.2500.t7",
                 "lm_lstm_epoch1.00_2.5000.t7_cpu.t7", "notes.txt"):
        (tmp_path / name).write_text("")
    got = [(e, v, os.path.basename(p)) for e, v, p in val_losses(str(tmp_path))]
    assert got == [(0.5, 3.1, "lm_gru_epoch0.50_3.1000.t7"), (1.0, 2.5, "lm_lstm_epoch1.00_2.5000.t7"),
                   (10.0, 0.25, "lm_lstm_epoch10.00_0.2500.t7")]
    assert val_losses(str(tmp_path / "missing")) == []


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CHAR_RNN_GIT"), reason="CHAR_RNN_GIT (a git copy of karpathy/char-rnn) not set")
def test_char_rnn_runs_unmodified():
    _every_step_passes("char-rnn", os.environ["CHAR_RNN_GIT"], 1200)
