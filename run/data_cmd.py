"""`luatorch data list` and `luatorch data clean`: the in-memory store's segments in /dev/shm.

A run detaches its segments when it ends, also on SIGTERM, SIGHUP and Ctrl-C; what a SIGKILL (or a crash)
leaves stays in RAM until `luatorch data clean` removes it. A segment a live process holds is never removed.
"""
import argparse
import os
import sys


def _size(n):
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return ("%d %s" % (n, unit)) if unit == "bytes" else ("%.1f %s" % (n, unit))
        n /= 1024.0


def _what(seg):
    i = seg.info
    if not i:
        return ""
    return "%s %s [%s, %s)" % (i.get("packed", "?"), i.get("split", "?"), i.get("start", "?"), i.get("end", "?"))


def _state(seg):
    if seg.state == "in use":
        return "in use by " + (", ".join("pid %d" % p for p in seg.holders) if seg.holders
                               else "a process whose /proc this user cannot read")
    if seg.state == "unused" and seg.kind == "fill":
        return "unused (half filled by pid %s, which is gone)" % seg.path.rsplit(".tmp", 1)[1]
    if seg.state == "unused" and seg.kind == "lock":
        return "unused (a lock file without its segment)"
    return seg.state


def list_main(a):
    from pytorch_bridge.data.store import segments
    segs = segments(a.shm_dir)
    if not segs:
        print("%s: no luatorch data segments" % a.shm_dir)
        return 0
    for s in segs:
        print("%s  %10s  %s  %s" % (s.path, _size(s.nbytes), _state(s), _what(s)))
    unused = [s for s in segs if s.removable]
    print("%d file(s), %s; %d unused (%s), which `luatorch data clean` removes" % (
        len(segs), _size(sum(s.nbytes for s in segs)), len(unused), _size(sum(s.nbytes for s in unused))))
    return 0


def clean_main(a):
    from pytorch_bridge.data.pack import (LOCK_NAME, is_packed_folder, leftovers, pack_lock, packer_pid,
                                          remove_leftovers)
    from pytorch_bridge.data.store import clean_segments
    for folder in a.folders:
        if not is_packed_folder(folder):   # never sweep *.tmp* out of just any folder
            print("luatorch data clean: %s is not a packed folder (no manifest.json or %s); nothing removed"
                  % (folder, LOCK_NAME), file=sys.stderr)
            return 2
    verb = "would remove" if a.dry_run else "removed"
    freed = 0
    for s in clean_segments(a.shm_dir, dry_run=a.dry_run):
        print("%s %s (%d bytes) %s" % (verb, s.path, s.nbytes, _what(s)))
        freed += s.nbytes
    for folder in a.folders:   # temporary files of interrupted packs
        pid = packer_pid(folder)
        if pid is not None:
            print("%s: being packed by pid %s now; left alone" % (folder, pid))
            continue
        if a.dry_run:
            names = leftovers(folder)
            n = sum(os.path.getsize(os.path.join(folder, x)) for x in names)
        else:
            with pack_lock(folder):
                names = leftovers(folder)
                n = remove_leftovers(folder, names)
        for x in names:
            print("%s %s" % (verb, os.path.join(folder, x)))
        freed += n
    if freed or a.dry_run:
        print("%s %d bytes%s" % ("would free" if a.dry_run else "freed", freed,
                                 " (%s)" % _size(freed) if freed >= 1024 else ""))
    else:
        print("nothing to remove: no segment in %s is unused%s" % (a.shm_dir, " and no pack leftovers"
                                                                   if a.folders else ""))
    return 0


def main(argv=None):
    from pytorch_bridge.data.store import SHM_DIR
    p = argparse.ArgumentParser(prog="luatorch data", description=__doc__.strip().splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    ls = sub.add_parser("list", help="our segments in the shm folder: size, holders' pids, packed set")
    cl = sub.add_parser("clean", help="remove the segments no live process holds (left by killed runs or "
                                      "keep=True), and with FOLDERs the leftovers of interrupted packs")
    cl.add_argument("folders", nargs="*", metavar="FOLDER", help="packed folders to clear of *.tmp leftovers")
    cl.add_argument("--dry-run", action="store_true", help="say what would be removed, remove nothing")
    for q in (ls, cl):
        q.add_argument("--shm-dir", default=SHM_DIR, help="where the segments live (default %s)" % SHM_DIR)
    a = p.parse_args(argv)
    return list_main(a) if a.what == "list" else clean_main(a)


if __name__ == "__main__":
    sys.exit(main())
