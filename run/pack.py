"""`luatorch pack SRC OUT`, `luatorch pack --verify OUT` and `luatorch synth-data OUT ...`."""
import argparse
import os
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch pack", description=(
        "Pack an image folder (train/<class>/*, val/<class>/*), CIFAR-10/100 (python or binary), "
        "(Fashion-)MNIST IDX files or an fb.resnet.torch cifar .t7 into sharded, checksummed blobs."))
    p.add_argument("src", help="source folder/file, or with --verify the packed folder")
    p.add_argument("out", nargs="?", help="packed folder to write")
    p.add_argument("--verify", action="store_true", help="recheck every shard's checksum of a packed folder")
    p.add_argument("--shard-mb", type=float, default=256, help="target shard size in MiB (default 256)")
    p.add_argument("--workers", type=int, default=None, help="packing processes (default: all cores)")
    p.add_argument("--seed", type=int, default=0, help="seed of the stored (shuffled) record order")
    p.add_argument("--no-resume", action="store_true", help="rewrite shards even if complete")
    p.add_argument("--restart-markers", action="store_true",
                   help="store JPEGs transcoded losslessly with restart markers (the same pixels): the C pipeline "
                        "then entropy-decodes only the part of each image a training crop reads")
    p.epilog = ("One process packs OUT at a time: a second `luatorch pack` of the same OUT waits for the first, "
                "then reports it packed (or, if SRC or the options differ, repacks, reusing the shards that match). "
                "An interrupted pack is resumed by running the same command again.")
    a = p.parse_args(argv)
    from pytorch_bridge.data import pack, verify
    from pytorch_bridge.data.formats import SourceError
    try:
        if a.verify:
            bad = verify(a.src, progress=True)
            for b in bad:
                print("pack --verify: %s" % b, file=sys.stderr)
            print("%s: %s" % (a.src, "FAILED (%d)" % len(bad) if bad else "ok"))
            return 1 if bad else 0
        if not a.out:
            p.error("OUT is required (or use --verify OUT)")
        m = pack(a.src, a.out, shard_bytes=int(a.shard_mb * 2 ** 20), workers=a.workers, seed=a.seed,
                 resume=not a.no_resume, restarts=a.restart_markers)
    except SourceError as e:
        print("luatorch pack: %s" % e, file=sys.stderr)
        return 2
    for split, s in m["splits"].items():
        print("%s: %d images, %d shards, %d bytes" % (split, s["count"], len(s["shards"]),
                                                      sum(x["bytes"] for x in s["shards"])))
    if m.get("already_packed"):   # by an earlier run, or by the one this run waited for
        print("%d classes; %s: already packed from %s (same records), nothing to do; "
              "luatorch pack --verify %s rechecks the checksums" % (len(m["classes"]), os.path.abspath(a.out),
                                                                    m["source_root"], a.out))
    else:
        print("%d classes; %s (%d shards already complete, skipped)" % (
            len(m["classes"]), os.path.abspath(a.out), m["resumed_shards"]))
    return 0


def synth_main(argv=None):
    p = argparse.ArgumentParser(prog="luatorch synth-data", description=(
        "Write an ImageNet-like folder of JPEGs (train/<class>/*.JPEG, val/<class>/*.JPEG), sizes and file "
        "sizes like ImageNet's (~400x350, ~110 KB); the same for the same --seed."))
    p.add_argument("out")
    p.add_argument("--images", type=int, required=True, help="training images")
    p.add_argument("--classes", type=int, required=True)
    p.add_argument("--val", type=int, default=0, help="validation images (default 0)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None)
    a = p.parse_args(argv)
    from pytorch_bridge.data.synth import synth
    synth(a.out, a.images, a.classes, a.val, a.seed, a.workers)
    print(os.path.abspath(a.out))
    return 0
