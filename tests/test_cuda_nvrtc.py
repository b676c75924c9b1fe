"""The GPU path's C layer on a machine without a GPU (native/src/cuda_lib.c, pytorch_bridge/cuda.py):
libraries found and loaded with dlopen or refused with a reason, zero devices without a driver, NVRTC
compiling CUBIN/PTX for architectures this machine does not have, and the on-disk kernel cache."""
import json
import os
import subprocess
import sys
import threading

import pytest

from pytorch_bridge import cuda
from pytorch_bridge.native import ffi, lib

NVRTC, DRIVER, CUBLAS = 2, 0, 3
HAVE_NVRTC = lib.lt_cuda_version(NVRTC) > 0
needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason="NVRTC is not installed (pip install 'luatorch[test]' "
                                 "brings nvidia-cuda-nvrtc): %s" % ffi.string(lib.lt_cuda_library_info(NVRTC)).decode())

KERNEL = r'''
#include "scale.cuh"
extern "C" __global__ void lt_test_scale(float *x, long long n, float a) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = scaled(x[i], a);
}
extern "C" __global__ void lt_test_zero(double *x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 0;
}
'''
HEADER = "__device__ inline float scaled(float v, float a) { return v * a; }\n"


def compile_(source=KERNEL, arch="sm_90", header=HEADER, opts=("-std=c++17",), cache=None):
    """(rc, image bytes, from_cache, log text, error text)."""
    keep = [ffi.new("char[]", o.encode()) for o in opts]
    copts = ffi.new("const char *[]", keep or [ffi.NULL])
    hname, htext = ffi.new("char[]", b"scale.cuh"), ffi.new("char[]", header.encode())
    names, texts = ffi.new("const char *[]", [hname]), ffi.new("const char *[]", [htext])
    image, n, log, fc = ffi.new("char **"), ffi.new("int64_t *"), ffi.new("char **"), ffi.new("int *")
    if cache is None:
        rc = lib.lt_cuda_compile(source.encode(), b"t.cu", arch.encode(), 1, texts, names, len(keep), copts, image, n, log)
    else:
        rc = lib.lt_cuda_compile_cached(source.encode(), b"t.cu", arch.encode(), 1, texts, names, len(keep), copts,
                                        str(cache).encode(), image, n, fc, log)
    data = ffi.buffer(image[0], n[0])[:] if image[0] != ffi.NULL else b""
    text = ffi.string(log[0]).decode() if log[0] != ffi.NULL else ""
    lib.lt_cuda_free(image[0])
    lib.lt_cuda_free(log[0])
    err = ffi.string(lib.lt_errmsg()).decode() if rc else ""
    return rc, data, fc[0], text, err


def cubin_kernels(image):
    """The kernel names in a CUBIN, read here independently of cutorch.kernels.entries: an ELF file whose
    each __global__ function has a section .text.NAME."""
    import struct

    if len(image) < 64 or image[:4] != b"\x7fELF" or image[4] != 2:
        raise ValueError("not a 64-bit ELF CUBIN")
    shoff, = struct.unpack_from("<Q", image, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", image, 0x3A)

    def section(i):
        base = shoff + i * shentsize
        name, = struct.unpack_from("<I", image, base)
        offset, size = struct.unpack_from("<QQ", image, base + 0x18)
        return name, offset, size

    _, str_off, str_size = section(shstrndx)
    names = []
    for i in range(shnum):
        name_at = section(i)[0]
        end = image.index(b"\0", str_off + name_at)
        name = image[str_off + name_at:end].decode()
        if name.startswith(".text."):
            names.append(name[len(".text."):])
    return sorted(names)


def run_python(code, **env):
    """code in a fresh interpreter that can import this folder's modules (from any working directory, and
    with luatorch installed rather than in the source tree)."""
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH", "")) if p)
    full = dict(os.environ, PYTHONPATH=path, **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_without_a_driver_there_are_no_devices_and_the_reason_is_given():
    n = ffi.new("int *", -1)
    assert lib.lt_cuda_device_count(n) == 0
    info = ffi.string(lib.lt_cuda_library_info(DRIVER)).decode()
    if lib.lt_cuda_loaded(DRIVER) and n[0] > 0:
        pytest.skip("this machine has a CUDA device (%s)" % info)
    assert n[0] == 0
    assert "not loaded" in info or "cuInit failed" in info
    props = ffi.new("lt_cuda_device_props *")
    assert lib.lt_cuda_device_properties(0, props) == -1
    assert "no CUDA device" in ffi.string(lib.lt_errmsg()).decode()


def test_a_library_named_by_the_environment_that_is_not_there_is_refused_with_its_path():
    out = run_python("from pytorch_bridge.native import ffi, lib\n"
                     "print(lib.lt_cuda_require(3), lib.lt_cuda_version(3), lib.lt_cuda_loaded(3))\n"
                     "print(ffi.string(lib.lt_cuda_library_info(3)).decode())",
                     LUATORCH_CUDA_CUBLAS="/nonexistent/libcublas.so.13")
    assert out.returncode == 0, out.stderr
    first, info = out.stdout.splitlines()[:2]
    assert first == "-1 -1 0"
    assert "/nonexistent/libcublas.so.13" in info and "cuBLAS is not loaded" in info


def test_a_library_without_the_expected_entry_points_is_refused_by_name(tmp_path):
    """libm is a real shared library, but no cuDNN: the missing symbol is named and nothing stays half set."""
    out = run_python("from pytorch_bridge.native import ffi, lib\n"
                     "print(lib.lt_cuda_require(4)); print(ffi.string(lib.lt_cuda_library_info(4)).decode())",
                     LUATORCH_CUDA_CUDNN="libm.so.6")
    assert out.returncode == 0, out.stderr
    rc, info = out.stdout.splitlines()[:2]
    assert rc == "-1" and "cudnnGetVersion" in info


def test_library_numbers_out_of_range_are_errors():
    assert lib.lt_cuda_require(99) == -1
    assert "no library number 99" in ffi.string(lib.lt_errmsg()).decode()
    assert lib.lt_cuda_set_path(7, b"x") == -1


def test_the_wheel_layout_is_found(tmp_path, monkeypatch):
    """A fake site-packages with the CUDA 13 and CUDA 12 wheel layouts: CUDA 13's files win, the
    headers of the same major come first, and LUATORCH_CUDA_* overrides a wheel."""
    root = tmp_path / "nvidia"
    for rel in ("cu13/lib/libnvrtc.so.13", "cu13/lib/libcudart.so.13", "cuda_nvrtc/lib/libnvrtc.so.12",
                "cudnn/lib/libcudnn.so.9", "cu13/include/cuda_fp16.h", "cuda_runtime/include/cuda_fp16.h"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"")
    monkeypatch.setattr(cuda, "_nvidia_roots", lambda: [str(root)])
    for name in cuda.LIBRARIES:
        monkeypatch.delenv("LUATORCH_CUDA_" + name.upper(), raising=False)
    found = cuda.library_paths()
    assert found["nvrtc"] == str(root / "cu13/lib/libnvrtc.so.13")
    assert found["cudnn"] == str(root / "cudnn/lib/libcudnn.so.9")
    assert "cublas" not in found and "driver" not in found
    assert cuda.include_dirs() == [str(root / "cu13/include"), str(root / "cuda_runtime/include")]
    monkeypatch.setenv("LUATORCH_CUDA_NVRTC", "/opt/x/libnvrtc.so.12")
    assert cuda.library_paths()["nvrtc"] == "/opt/x/libnvrtc.so.12"
    assert cuda.include_dirs()[0] == str(root / "cuda_runtime/include")


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90"])
def test_nvrtc_makes_a_cubin_for_an_architecture_this_machine_lacks(arch):
    rc, image, _, _, err = compile_(arch=arch)
    assert rc == 0, err
    assert image[:4] == b"\x7fELF"
    assert cubin_kernels(image) == ["lt_test_scale", "lt_test_zero"]


@needs_nvrtc
def test_compute_architectures_give_ptx_text():
    rc, image, _, _, err = compile_(arch="compute_80")
    assert rc == 0, err
    text = image.decode()
    assert ".target sm_80" in text and ".entry lt_test_scale" in text and "\0" not in text


@needs_nvrtc
def test_a_compile_error_reports_nvrtc_log_with_the_line():
    rc, image, _, log, err = compile_(source=KERNEL + "\nextern \"C\" __global__ void broken( { }\n")
    assert rc == -1 and image == b""
    assert "could not compile t.cu for sm_90" in err and "t.cu(" in err
    assert "error" in log


@needs_nvrtc
def test_a_missing_header_and_a_bad_architecture_are_errors():
    rc, _, _, _, err = compile_(source='#include "nothere.cuh"\n' + KERNEL)
    assert rc == -1 and "nothere.cuh" in err
    for arch in ("sm_", "sm90", "gfx90a", "sm_9x"):
        rc, _, _, _, err = compile_(arch=arch)
        assert rc == -1 and "is not sm_NN" in err, arch


@needs_nvrtc
def test_the_cache_serves_the_same_image_and_keys_on_every_input(tmp_path):
    rc, first, fc, _, err = compile_(cache=tmp_path)
    assert rc == 0 and fc == 0, err
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].startswith("t_cu.sm_90.") and files[0].endswith(".cubin")
    rc, again, fc, _, _ = compile_(cache=tmp_path)
    assert rc == 0 and fc == 1 and again == first
    # each input makes its own entry: the source, a header, an option, the architecture
    compile_(source=KERNEL + "\n// changed\n", cache=tmp_path)
    compile_(header=HEADER + "// changed\n", cache=tmp_path)
    compile_(opts=("-std=c++17", "-DX=1"), cache=tmp_path)
    compile_(arch="sm_80", cache=tmp_path)
    assert len(os.listdir(tmp_path)) == 5
    plain = compile_()[1]
    assert cubin_kernels(plain) == cubin_kernels(first)


@needs_nvrtc
def test_an_include_folder_keys_the_cache_by_its_headers_not_its_path(tmp_path):
    """The GPU machine's CUDA headers are at another path than the development machine's: a cache carried
    there must serve when the headers are the same, and must not when one differs."""
    def folder(name, extra=""):
        d = tmp_path / name
        (d / "crt").mkdir(parents=True)
        (d / "helper.h").write_text("#define HELPER 1\n" + extra)
        (d / "crt" / "inner.hpp").write_text("// inner\n")
        (d / "notes.txt").write_text("not a header: %s\n" % name)
        return d

    same_a, same_b = folder("a"), folder("b")
    changed = folder("c", extra="// another version\n")
    inner_changed = folder("d")
    (inner_changed / "crt" / "inner.hpp").write_text("// inner, changed\n")
    cache = tmp_path / "cache"
    for d in (same_a, same_b):
        rc, _, _, _, err = compile_(opts=("-std=c++17", "-I%s" % d), cache=cache)
        assert rc == 0, err
    assert len(os.listdir(cache)) == 1   # b's compile was served by a's file
    assert compile_(opts=("-std=c++17", "-I%s" % same_b), cache=cache)[2] == 1
    for d in (changed, inner_changed):
        assert compile_(opts=("-std=c++17", "-I%s" % d), cache=cache)[2] == 0
    assert len(os.listdir(cache)) == 3


@needs_nvrtc
@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_a_damaged_cache_file_is_compiled_again_and_replaced(tmp_path, damage):
    rc, good, _, _, _ = compile_(cache=tmp_path)
    path = tmp_path / os.listdir(tmp_path)[0]
    body = path.read_bytes()
    path.write_bytes({"truncate": body[: len(body) // 2], "garbage": b"\x7fELF" + os.urandom(200),
                      "empty": b""}[damage])
    rc, image, fc, _, err = compile_(cache=tmp_path)
    assert rc == 0 and fc == 0, err
    assert cubin_kernels(image) == cubin_kernels(good)
    assert path.read_bytes() == image
    assert compile_(cache=tmp_path)[2] == 1


@needs_nvrtc
def test_an_unwritable_cache_still_compiles(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    out = run_python("from test_cuda_nvrtc import compile_\n"
                     "for _ in range(2):\n"
                     "    rc, image, fc, _, err = compile_(cache=%r)\n"
                     "    print(rc, image[:4] == b'\\x7fELF', fc)" % str(blocker / "cache"))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "True", "0"] * 2
    assert out.stderr.count("cannot write the CUDA kernel cache") == 1


@needs_nvrtc
def test_threads_compiling_into_one_cache_see_whole_files(tmp_path):
    results, errors = [], []

    def work():
        try:
            for _ in range(3):
                rc, image, _, _, err = compile_(cache=tmp_path)
                assert rc == 0, err
                results.append(image)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 12 and len({cubin_kernels(r).__repr__() for r in results}) == 1
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []
    assert len(os.listdir(tmp_path)) == 1


def _kernel_files():
    d = cuda.kernel_dir()
    return sorted(f for f in os.listdir(d) if f.endswith(".cu")) if d else []


@needs_nvrtc
@pytest.mark.slow
@pytest.mark.skipif(not _kernel_files(), reason="no kernel sources in native/cuda")
def test_every_kernel_compiles_for_sm75_sm80_sm90(tmp_path):
    """The CI check of the issue: `luatorch cuda compile` over the whole kernel set, no cache."""
    out = subprocess.run([sys.executable, "-m", "run.cli", "cuda", "compile", "--arch", "sm_75,sm_80,sm_90",
                          "--no-cache", "--quiet", "--json", str(tmp_path / "k.json")],
                         capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-3000:]
    records = json.load(open(tmp_path / "k.json"))["records"]
    files = _kernel_files()
    assert sorted({r["file"] for r in records}) == files
    assert sorted({r["arch"] for r in records}) == ["sm_75", "sm_80", "sm_90"]
    per_file = {}
    for r in records:
        assert r["kernels"] and not r["cached"], r
        per_file.setdefault(r["file"], set()).add(tuple(r["kernels"]))
    # the same kernels for every architecture
    assert all(len(counts) == 1 for counts in per_file.values()), per_file


@needs_nvrtc
def test_lua_compiles_through_the_registered_cache(tmp_path):
    from pytorch_bridge import Runtime

    if not _kernel_files():
        pytest.skip("no kernel sources in native/cuda")
    rt = Runtime()
    kernels = rt.require("cutorch.kernels")
    files = list(rt.call(kernels.files).values())
    name = min(files, key=lambda f: os.path.getsize(os.path.join(cuda.kernel_dir(), f)))
    compile_one = rt.eval("function(name, arch, dir) local k = require('cutorch.kernels') "
                          "local image, cached = k.compile(name, arch, {cache = dir}) "
                          "return #image, cached, table.concat(k.entries(image), ' ') end")
    size, cached, entries = rt.call(compile_one, name, "sm_80", str(tmp_path))
    assert size > 0 and not cached and entries
    cache_file = os.path.join(tmp_path, os.listdir(tmp_path)[0])
    assert entries.split() == cubin_kernels(open(cache_file, "rb").read())   # our ELF reader agrees with Lua's
    size2, cached, _ = rt.call(compile_one, name, "sm_80", str(tmp_path))
    assert cached and size2 == size
    assert rt.eval("require('cutorch.kernels').arch(9, 0)") == "sm_90"
