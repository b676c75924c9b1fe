"""cutorch's and cunn's own test suites (cutorch's test/test.lua, cunn's test.lua and
test_DataParallelTable.lua), unmodified, against luatorch's GPU backend: on a GPU, or here on the emulated CUDA driver
(two devices, guarded device memory, kernels in the SIMT
emulator), each test in its own process with a timeout. The counts are the GPU path's external measure, as
../shared/tools/conformance is the CPU side's (docs/results/cuda.md keeps the last run).

    bash tests/cuda_host/build_emulated.sh /tmp/emu            # once: the emulated driver and kernels
    CUTORCH_GIT=<torch/cutorch clone or bare git dir> CUNN_GIT=<torch/cunn ...> \\
        python tests/cuda_host/torch7_gpu_suites.py --emulated /tmp/emu --out /tmp/gpu-suites [--suites cunn]
        [--only NAME,NAME] [--jobs 2] [--timeout 300] [--seed 1234] [--memory-gib 8]

Without --emulated the tests run on the machine's GPU(s) (LUATORCH_CUTORCH=gpu). The suites' files are read from
the repositories with `git show HEAD:...` into --out (nothing of Torch7 is kept in this project). The last line is
`cutorch: P/N; cunn: P/N pass`; --out gets results.json (status, assertions, the error, seconds per test) and a log
per test. A test fails when its Tester reports an error or failure; a crash (a host read of device memory ends the
process on the guarded emulated driver) or a timeout is its own status."""
import argparse
import collections
import concurrent.futures
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SUITES = {"cutorch": ("CUTORCH_GIT", "test/test.lua"), "cunn": ("CUNN_GIT", "test.lua"),
          "cunn-dpt": ("CUNN_GIT", "test_DataParallelTable.lua")}


def extract(git, path, dest):
    """The file at HEAD of the repository git (a clone or a bare git dir) written to dest."""
    gitdir = os.path.join(git, ".git") if os.path.isdir(os.path.join(git, ".git")) else git
    blob = subprocess.run(["git", "--git-dir", gitdir, "show", "HEAD:" + path], capture_output=True, check=True)
    with open(dest, "wb") as f:
        f.write(blob.stdout)


def environment(args):
    env = dict(os.environ, LUATORCH_CUTORCH="gpu", LUATORCH_CUDA_FALLBACK="quiet")
    if args.emulated:
        with open(os.path.join(args.emulated, "env.sh")) as f:
            for line in f:
                for word in line.split()[1:] if line.startswith("export ") else []:
                    k, _, v = word.partition("=")
                    env[k] = v
        env.update(LT_EMULATED_CUDA_GUARD="1", LT_EMULATED_CUDA_DEVICES="2",
                   LT_EMULATED_CUDA_MEMORY_GIB=str(args.memory_gib))
    return env


def run_test(args, env, suite, test_file, name):
    res = os.path.join(args.out, "logs", suite, name + ".res")
    log = os.path.join(args.out, "logs", suite, name + ".log")
    t0 = time.time()
    cmd = [args.luatorch, "th", os.path.join(HERE, "torch7_gpu_suite_driver.lua"), suite, test_file, name, res,
           str(args.seed)]
    try:
        with open(log, "w") as lf:
            p = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env, cwd=os.path.dirname(test_file),
                               timeout=args.timeout, start_new_session=True)
        if os.path.exists(res):
            status, passed, errors, why = (open(res).read().rstrip("\n").split("\t") + [""] * 4)[:4]
            rec = {"status": status, "assertions": int(passed), "errors": int(errors), "error": why}
        else:
            rec = {"status": "crash", "error": "exit status %d" % p.returncode}
    except subprocess.TimeoutExpired:
        rec = {"status": "timeout", "error": "over %d s" % args.timeout}
    rec["seconds"] = round(time.time() - t0, 1)
    return name, rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--emulated", help="a build_emulated.sh folder: run on the emulated driver")
    ap.add_argument("--suites", default="cutorch,cunn,cunn-dpt")
    ap.add_argument("--only", help="comma-separated test names")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--memory-gib", type=int, default=8, help="each emulated device's memory")
    ap.add_argument("--luatorch", default="luatorch")
    args = ap.parse_args()
    args.out = os.path.abspath(args.out)
    env = environment(args)
    results, summary = {}, []
    for suite in args.suites.split(","):
        var, path = SUITES[suite]
        if not os.environ.get(var):
            summary.append("%s: not run (%s unset)" % (suite, var))
            continue
        os.makedirs(os.path.join(args.out, "logs", suite), exist_ok=True)
        test_file = os.path.join(args.out, suite + "_" + os.path.basename(path))
        extract(os.environ[var], path, test_file)
        listing = os.path.join(args.out, suite + ".list")
        subprocess.run([args.luatorch, "th", os.path.join(HERE, "torch7_gpu_suite_driver.lua"), suite, test_file,
                        "--list", listing], env=env, cwd=args.out, check=True, capture_output=True, timeout=600)
        names = [n for n in open(listing).read().split("\n") if n]
        if args.only:
            names = [n for n in names if n in args.only.split(",")]
        results[suite] = {}
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            futures = [ex.submit(run_test, args, env, suite, test_file, n) for n in names]
            for i, fut in enumerate(concurrent.futures.as_completed(futures)):
                name, rec = fut.result()
                results[suite][name] = rec
                print("[%s %d/%d] %-40s %-8s %6.1fs %s" % (suite, i + 1, len(names), name, rec["status"],
                                                            rec["seconds"], rec["error"][:100]), flush=True)
        counts = collections.Counter(r["status"] for r in results[suite].values())
        summary.append("%s: %d/%d" % (suite, counts["pass"], len(names)))
        print("%s: %s" % (suite, dict(counts)), flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"seed": args.seed, "emulated": bool(args.emulated), "timeout_s": args.timeout,
                   "results": results}, f, indent=1, sort_keys=True)
    print("; ".join(summary) + " pass")


if __name__ == "__main__":
    sys.exit(main())
