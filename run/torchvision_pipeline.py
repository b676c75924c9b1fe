"""torchvision's ImageNet input pipeline, timed the way `luatorch bench data` times ours.

    PYTHON run/torchvision_pipeline.py --folder IMAGES/train --workers 2 --batches 12 --batch-size 32
                                       [--transform train|val] [--seed 1]

Runs under any interpreter that has torch and torchvision (it imports nothing of luatorch, so it can be a
venv of its own: PyPI's torchvision does not import beside the CPU torch that luatorch's tests use).
What a PyTorch user writes for fb.resnet.torch's recipe: ImageFolder (Pillow decode) +
RandomResizedCrop(224) + ColorJitter(0.4, 0.4, 0.4) + ToTensor + Lighting(0.1) (AlexNet's PCA noise, which
torchvision lacks, as a tensor transform) + Normalize + RandomHorizontalFlip, batched by a DataLoader with
`--workers` worker processes; validation: Resize(256) + CenterCrop(224) + ToTensor + Normalize.
The workers are started and warm (persistent, one batch pulled and the iterator dropped) before the clock
starts, as `bench data` starts our loader's threads first; the clock then runs from asking for the first
batch of a fresh epoch to holding the last, first batch included. Prints one JSON line.
"""
import argparse
import json
import os
import time

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
EIGVAL = (0.2175, 0.0188, 0.0045)
EIGVEC = ((-0.5675, 0.7192, 0.4009), (-0.5808, -0.0045, -0.8140), (-0.5836, -0.6948, 0.4203))


class Lighting:
    """AlexNet-style PCA lighting noise on a 3 x H x W tensor (fb.resnet.torch's Lighting(0.1))."""

    def __init__(self, alphastd):
        import torch
        self.alphastd = alphastd
        self.eigval, self.eigvec = torch.tensor(EIGVAL), torch.tensor(EIGVEC)

    def __call__(self, img):
        import torch
        alpha = torch.randn(3) * self.alphastd
        rgb = (self.eigvec * alpha[None, :] * self.eigval[None, :]).sum(1)
        return img + rgb[:, None, None]


def pipeline(train):
    from torchvision import transforms as T
    if train:
        return T.Compose([T.RandomResizedCrop(224), T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(), Lighting(0.1),
                          T.Normalize(MEAN, STD), T.RandomHorizontalFlip()])
    return T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", required=True, help="an ImageFolder: one sub-folder of JPEGs per class")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--transform", default="train", choices=("train", "val"))
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    import torch
    import torchvision
    from torch.utils.data import DataLoader
    from torchvision.datasets import ImageFolder
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)   # the main process only receives batches; the workers have 1 thread each
    ds = ImageFolder(a.folder, transform=pipeline(a.transform == "train"))
    dl = DataLoader(ds, batch_size=a.batch_size, shuffle=True, num_workers=a.workers, persistent_workers=True,
                    drop_last=False)
    batches = min(a.batches, len(dl))
    warm = iter(dl)
    next(warm)   # the worker processes are up, their imports and first decode done
    del warm
    t0 = time.perf_counter()
    it = iter(dl)
    n = 0
    for _ in range(batches):
        x, y = next(it)
        n += len(y)
    wall = time.perf_counter() - t0
    assert tuple(x.shape[1:]) == (3, 224, 224) and x.dtype == torch.float32
    print(json.dumps(dict(images=n, batches=batches, wall_s=wall, images_per_s=n / wall, workers=a.workers,
                          torch=torch.__version__, torchvision=torchvision.__version__,
                          pillow=__import__("PIL").__version__, loadavg_end=os.getloadavg()[0])), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
