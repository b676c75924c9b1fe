"""cffi build (API mode) of native/ into the extension module pytorch_bridge._native.

native/include/luatorch.h is the one source of the C declarations. This script
expands its quoted #includes, drops the preprocessor lines and uses the result
twice: as the cffi cdef for Python, and embedded in the module as a C string
returned by lt_cdef_text(), which the Lua side hands to ffi.cdef. So Python
and LuaJIT always see the same declarations as the compiled code.
"""
import glob
import os
import re
import sys

from cffi import FFI

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "native", "include")
SRC = os.path.join(ROOT, "native", "src")
BOOTSTRAP = "const char *lt_cdef_text(void);"


def expand_header(path, seen=None):
    """The header text with local #include "x.h" lines replaced by their files."""
    seen = set() if seen is None else seen
    out = []
    with open(path) as f:
        for line in f:
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                inc = os.path.join(os.path.dirname(path), m.group(1))
                if inc not in seen:
                    seen.add(inc)
                    out.append(expand_header(inc, seen))
                continue
            out.append(line)
    return "".join(out)


def cdef_text():
    """Header text fit for cffi and ffi.cdef: no comments, no preprocessor lines."""
    text = expand_header(os.path.join(INCLUDE, "luatorch.h"))
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    lines = [ln.rstrip() for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return "\n".join(ln for ln in lines if ln.strip()) + "\n"


def c_string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", '\\n"\n"') + '"'


def sources():
    return sorted(glob.glob(os.path.join(SRC, "**", "*.c"), recursive=True))


def compile_args():
    args = ["-O3", "-std=gnu11", "-fopenmp", "-fno-strict-aliasing", "-Wall", "-Wno-unused-function"]
    # Build for the machine that installs (pip builds on the machine it installs on);
    # LUATORCH_MARCH overrides it, e.g. x86-64-v3 for a portable wheel.
    march = os.environ.get("LUATORCH_MARCH", "native")
    if march:
        args.append("-march=" + march)
    return args


def optional_libraries():
    """The image codecs' libraries that this machine can build against: (define, library) pairs, found
    by compiling and linking a one-line program (headers and the linkable library both needed)."""
    import subprocess
    import tempfile

    found = []
    cc = os.environ.get("CC", "cc").split()
    for define, header, lib, call in (("LT_HAVE_JPEG", "jpeglib.h", "jpeg", "jpeg_std_error(0)"),
                                      ("LT_HAVE_PNG", "png.h", "png16", "png_access_version_number()")):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "t.c")
            with open(src, "w") as f:
                f.write("#include <stdio.h>\n#include <%s>\nint main(void) { (void)%s; return 0; }\n" % (header, call))
            try:
                r = subprocess.run(cc + [src, "-o", os.path.join(tmp, "t"), "-l" + lib], capture_output=True)
            except OSError:
                continue
            if r.returncode == 0:
                found.append((define, lib))
            else:
                print("luatorch build: no %s (its header or library is missing): the image package will not "
                      "read or write those files" % lib, file=sys.stderr)
    return found


OPTIONAL = optional_libraries()
cdef = cdef_text()
bootstrap_free = cdef.replace(BOOTSTRAP + "\n", "")
assert BOOTSTRAP in cdef, "lt_core.h must declare lt_cdef_text"

ffibuilder = FFI()
ffibuilder.cdef(cdef)
ffibuilder.set_source(
    "pytorch_bridge._native",
    '#include "luatorch.h"\n'
    "static const char lt_cdef_embedded[] = " + c_string(bootstrap_free) + ";\n"
    "const char *lt_cdef_text(void) { return lt_cdef_embedded; }\n",
    sources=[os.path.relpath(s, ROOT) for s in sources()],
    include_dirs=[INCLUDE, SRC],
    extra_compile_args=compile_args(),
    # libjpeg(-turbo) and libpng back the image package's codecs (native/src/image_codec.c), where present
    libraries=[lib for _, lib in OPTIONAL],
    define_macros=[(define, "1") for define, _ in OPTIONAL],
    extra_link_args=["-fopenmp", "-ldl"],
)

if __name__ == "__main__":
    # Direct build for development: python ffi/build_native.py
    os.chdir(ROOT)
    ffibuilder.compile(tmpdir=os.path.join(ROOT, "build", "cffi"), verbose="-v" in sys.argv)
