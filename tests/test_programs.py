"""`luatorch programs`: real Torch7 programs from a git copy of their repository (FB_RESNET_GIT names one of
fb.resnet.torch, CHAR_RNN_GIT one of karpathy/char-rnn, DCGAN_GIT one of soumith/dcgan.torch, PIX2PIX_GIT one of phillipi/pix2pix,
CYCLEGAN_GIT one of junyanz/CycleGAN, NEURAL_STYLE_GIT one of jcjohnson/neural-style; without it that run skips), and the data sets made for them in their own format."""
import os
import subprocess
import sys

import numpy as np
import pytest

from run.programs import (GRAMMAR, cifar_like, colour_folder, grammar_text, grammatical_share, grid_cells, mean_l1,
                          paired_folder, small_vgg, total_losses, unaligned_folder, val_losses)

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


def test_the_colour_folder_and_the_grid_reader(tmp_path):
    """dcgan.torch's data (a primary colour per class folder) and the reader of the windows it shows: each cell's mean
    colour, checked on a grid drawn here with Pillow."""
    from PIL import Image

    colour_folder(str(tmp_path / "data"), 3, 4, np.random.default_rng(1))
    for c in range(3):
        files = sorted(os.listdir(tmp_path / "data" / ("class%d" % c)))
        assert len(files) == 4
        a = np.asarray(Image.open(tmp_path / "data" / ("class%d" % c) / files[0]), dtype=np.float64) / 255
        assert 96 <= min(a.shape[:2]) and max(a.shape[:2]) < 128
        assert np.argmax(a.mean((0, 1))) == c and a.mean((0, 1))[c] - np.sort(a.mean((0, 1)))[1] > 0.6
    colours = np.random.default_rng(2).integers(0, 256, (2, 3, 3))
    grid = np.kron(colours, np.ones((8, 8, 1))).astype(np.uint8)   # 2 x 3 cells of 8 x 8
    Image.fromarray(grid).save(tmp_path / "grid.png")
    cells = grid_cells(str(tmp_path / "grid.png"), 8)
    assert len(cells) == 6
    assert np.allclose(cells, colours.reshape(6, 3) / 255)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("DCGAN_GIT"), reason="DCGAN_GIT (a git copy of soumith/dcgan.torch) not set")
def test_dcgan_runs_unmodified():
    _every_step_passes("dcgan.torch", os.environ["DCGAN_GIT"], 600)


def test_the_paired_folder_and_the_l1_between_folders(tmp_path):
    """pix2pix's aligned pictures (A | B, B the colour negative of A) and the distance its check compares."""
    from PIL import Image

    paired_folder(str(tmp_path / "data"), 3, 2, np.random.default_rng(3))
    assert sorted(os.listdir(tmp_path / "data")) == ["train", "val"]
    assert len(os.listdir(tmp_path / "data" / "train")) == 3 and len(os.listdir(tmp_path / "data" / "val")) == 2
    ab = np.asarray(Image.open(tmp_path / "data" / "train" / "0.jpg"), dtype=np.float64)
    assert ab.shape == (256, 512, 3)
    assert np.abs(ab[:, :256] + ab[:, 256:] - 255).mean() < 3   # (JPEG's rounding)
    for name, value in (("a", 10), ("b", 61)):
        (tmp_path / name).mkdir()
        for i in range(2):
            Image.fromarray(np.full((4, 4, 3), value + i, np.uint8)).save(tmp_path / name / ("%d.png" % i))
    assert mean_l1(str(tmp_path / "a"), str(tmp_path / "b")) == pytest.approx(51 / 255)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("PIX2PIX_GIT"), reason="PIX2PIX_GIT (a git copy of phillipi/pix2pix) not set")
def test_pix2pix_runs_unmodified():
    _every_step_passes("pix2pix", os.environ["PIX2PIX_GIT"], 900)


def test_the_unaligned_folders_hold_negatives_of_other_pictures(tmp_path):
    from PIL import Image

    unaligned_folder(str(tmp_path), 4, 2, np.random.default_rng(6))
    assert sorted(os.listdir(tmp_path)) == ["testA", "testB", "trainA", "trainB"]
    a = [np.asarray(Image.open(tmp_path / "trainA" / ("%d.jpg" % i)), dtype=np.float64) for i in range(4)]
    b = [np.asarray(Image.open(tmp_path / "trainB" / ("%d.jpg" % i)), dtype=np.float64) for i in range(4)]
    assert a[0].shape == (80, 80, 3) and len(os.listdir(tmp_path / "testB")) == 2
    # B's pictures are negatives (a background colour c in A is 255 - c' in B) but of pictures other than A's own
    for x, y in zip(a, b):
        assert np.abs(x + y - 255).mean() > 20


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("CYCLEGAN_GIT"), reason="CYCLEGAN_GIT (a git copy of junyanz/CycleGAN) not set")
def test_cyclegan_runs_unmodified():
    _every_step_passes("CycleGAN", os.environ["CYCLEGAN_GIT"], 600)


def test_small_vgg_loads_with_neural_styles_layer_names(rt, tmp_path):
    # neural-style finds its layers by these names; the weights are the caffemodel's
    pytest.importorskip("google.protobuf", reason="the protobuf package (the test extra) writes the Caffe files")
    proto, model = str(tmp_path / "vgg.prototxt"), str(tmp_path / "vgg.caffemodel")
    net = small_vgg(proto, model, (2, 3, 4, 5, 6), seed=1)
    got = rt.eval("""function(proto, model)
       require 'loadcaffe'
       local cnn = loadcaffe.load(proto, model, 'nn')
       local names = {}
       for i = 1, #cnn do names[i] = cnn:get(i).name .. ' ' .. torch.type(cnn:get(i)) end
       return table.concat(names, ','), cnn:get(29).weight, #cnn
    end""")(proto, model)
    names = got[0].split(",")
    assert got[2] == 30 and names[:5] == ["conv1_1 nn.SpatialConvolution", "relu1_1 nn.ReLU",
                                          "conv1_2 nn.SpatialConvolution", "relu1_2 nn.ReLU",
                                          "pool1 nn.SpatialMaxPooling"]
    assert names[22] == "relu4_2 nn.ReLU" and names[-1] == "relu5_1 nn.ReLU" and names[-2] == "conv5_1 nn.SpatialConvolution"
    want = np.array(net.layers[-2].blobs[0].data, np.float32).reshape(6, 5, 3, 3)
    np.testing.assert_array_equal(np.array(rt.to_numpy(got[1])), want)
    assert total_losses("Iteration 10 / 40\n  Total loss: 1.5e+03\n  Total loss: 42.000000\n") == [1500.0, 42.0]


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("NEURAL_STYLE_GIT"),
                    reason="NEURAL_STYLE_GIT (a git copy of jcjohnson/neural-style) not set")
def test_neural_style_runs_unmodified():
    _every_step_passes("neural-style", os.environ["NEURAL_STYLE_GIT"], 900)
