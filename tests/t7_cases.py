"""Shared .t7 test data for the Lua and Python readers: byte builders for
hand-made files, the expected contents of the real Torch7 files, and hostile
inputs with the byte offset and message each must be refused with."""
import os
import struct



def _find_t7_dir():
    # $LUATORCH_T7_DIR, else ../shared beside the checkout (as in conftest), else shared/ inside it.
    # None when absent: the tests that need the files skip with a reason (see real()/t7_path()).
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("LUATORCH_T7_DIR", ""),
                  os.path.join(here, "..", "..", "shared", "testdata", "t7"),
                  os.path.join(here, "..", "shared", "testdata", "t7")]
    for c in candidates:
        if c and os.path.isfile(os.path.join(c, "doubletensor.t7")):
            return os.path.abspath(c)
    return None


T7_DIR = _find_t7_dir()


def i32(*v):
    return struct.pack("<%di" % len(v), *v)


def i64(*v):
    return struct.pack("<%dq" % len(v), *v)


def f64(*v):
    return struct.pack("<%dd" % len(v), *v)


def s(b):
    b = b.encode() if isinstance(b, str) else b
    return i32(len(b)) + b


def torch_head(index, name, version="V 1"):
    return i32(4, index) + s(version) + s(name)


def tensor(index, name, nd, sizes, strides, offset1):
    return torch_head(index, name) + i32(nd) + i64(*sizes) + i64(*strides) + i64(offset1)


def storage(index, name, n, payload):
    return torch_head(index, name) + i64(n) + payload


def skip_if_absent(data):
    if data is None:
        import pytest
        pytest.skip("shared/testdata/t7 is not present (this case is cut from a real Torch7 file)")


def real(name):
    if T7_DIR is None:
        import pytest
        pytest.skip("shared/testdata/t7 is not present")
    with open(os.path.join(T7_DIR, name), "rb") as f:
        return f.read()


# Files whose bytes Torch7 wrote deterministically (no multi-key pairs()
# order), so re-saving what we load must give the same bytes.
BYTE_EXACT = ["doubletensor.t7", "floattensor.t7", "hello=123.t7", "list_table.t7", "custom_class.t7",
              "recursive_class.t7", "recursive_kv_table.t7", "tds_vec.t7", "function.t7"]


def hostile_cases():
    """(name, data, byte offset in the message, message fragment). Names ending in
    "(lua)" apply to the Lua reader only (it loads bytecode; Python keeps it as bytes).
    Cases cut from a real Torch7 file have data None when the fixtures are absent: skip_if_absent()."""
    dt = real("doubletensor.t7") if T7_DIR else None
    good_tensor = tensor(1, "torch.DoubleTensor", 2, [2, 3], [3, 1], 1)
    dstore = storage(2, "torch.DoubleStorage", 6, f64(1, 2, 3, 4, 5, 6))
    tlen = len(good_tensor)
    nd_at = len(torch_head(1, "torch.DoubleTensor"))
    cases = [
        ("empty input", b"", 0, "expected a type tag (0..8), got end of file"),
        ("unknown tag", i32(77), 0, "expected a type tag (0..8), got 77"),
        ("negative tag", i32(-1), 0, "expected a type tag (0..8), got -1"),
        ("unknown tag in a table", i32(3, 1, 1) + i32(1) + f64(1) + i32(9), 24,
         "expected a type tag (0..8), got 9"),
        ("truncated double", i32(1) + b"\0\0\0", 4, "end of file"),
        ("truncated tensor file", dt and dt[:100], 96, "only 0 bytes are left"),
        ("truncated in the storage data", dt and dt[:-3], 119, "left"),
        ("negative string length", i32(2, -5), 4, "expected the length of a string, got -5"),
        ("huge string length", i32(2, 0x7FFFFFFF) + b"abc", 4, "only 3 bytes are left"),
        ("bad boolean", i32(5, 7), 4, "expected a boolean (0 or 1), got 7"),
        ("negative table size", i32(3, 1, -1), 8, "expected a table size"),
        ("huge table size", i32(3, 1, 0x10000000) + i32(0) * 4, 8, "expected a table size"),
        ("nil table key", i32(3, 1, 1, 0, 0), 12, "expected a table key, got nil"),
        ("bad reference index", i32(3, 5, 0), 4, "bad reference index 5"),
        ("zero reference index", i32(3, 0, 0), 4, "bad reference index 0"),
        ("back-reference of the wrong kind",
         i32(3, 1, 1) + i32(1) + f64(1) + i32(4, 1), 28, "reference index 1 names a table"),
        ("tensor dimension count 17", torch_head(1, "torch.DoubleTensor") + i32(17), nd_at,
         "expected a tensor dimension count (0..16), got 17"),
        ("negative tensor dimension count", torch_head(1, "torch.DoubleTensor") + i32(-2), nd_at,
         "expected a tensor dimension count (0..16), got -2"),
        ("negative tensor size", tensor(1, "torch.DoubleTensor", 2, [2, -3], [3, 1], 1) + dstore[:0] + i32(0),
         nd_at + 4, "expected tensor sizes >= 0"),
        ("negative stride", tensor(1, "torch.DoubleTensor", 2, [2, 3], [3, -1], 1) + i32(0), nd_at + 4,
         "expected tensor strides >= 0"),
        ("storage offset 0", tensor(1, "torch.DoubleTensor", 2, [2, 3], [3, 1], 0) + dstore, tlen - 8,
         "expected a storage offset >= 1"),
        ("storage too small for the sizes", tensor(1, "torch.DoubleTensor", 2, [3, 3], [3, 1], 1) + dstore, tlen,
         "reach element 9, but its storage has 6"),
        ("storage too small for the strides", tensor(1, "torch.DoubleTensor", 2, [2, 3], [4, 1], 1) + dstore,
         tlen, "reach element 7, but its storage has 6"),
        ("storage too small for the offset", tensor(1, "torch.DoubleTensor", 2, [2, 3], [3, 1], 2) + dstore,
         tlen, "reach element 7, but its storage has 6"),
        ("giant stride-0 view", tensor(1, "torch.DoubleTensor", 2, [1 << 40, 1 << 40], [0, 0], 1)
         + storage(2, "torch.DoubleStorage", 1, f64(7)), nd_at + 4, "too large to view"),
        ("nil storage for a non-empty tensor", good_tensor + i32(0), tlen, "got nil"),
        ("storage of the wrong type",
         good_tensor + storage(2, "torch.FloatStorage", 6, struct.pack("<6f", *range(6))), tlen,
         "expected a torch.DoubleStorage"),
        ("table where a storage belongs", good_tensor + i32(3, 2, 0), tlen, "expected a torch.DoubleStorage"),
        ("negative storage size", storage(1, "torch.DoubleStorage", -4, b""), len(torch_head(1, "torch.DoubleStorage")),
         "storage"),
        ("huge storage size", storage(1, "torch.DoubleStorage", 1 << 60, f64(1)),
         len(torch_head(1, "torch.DoubleStorage")), "bytes are left"),
        ("huge tds.Vec size", torch_head(1, "tds.Vec", "V 0") + i64(1 << 40) + i32(0),
         len(torch_head(1, "tds.Vec", "V 0")), "expected the size of a tds.Vec"),
        ("empty class name", i32(4, 1) + s("V 1") + s(""), 8, "expected a class name"),
        ("bad version string", i32(4, 1) + s("V x") + s("A"), 8, "version string"),
        ("class field table is a number", torch_head(1, "spec.Hostile") + i32(1) + f64(3),
         len(torch_head(1, "spec.Hostile")), "expected the field table of a spec.Hostile"),
        ("garbage function bytecode", i32(8, 1) + s(b"\x01\x02garbage") + i32(3, 2, 0), 8,
         "cannot load function bytecode"),
        ("truncated LuaJIT 2.1 bytecode (lua)", i32(8, 1) + s(b"\x1bLJ\x02\x0a") + i32(3, 2, 0), 8,
         "cannot load function bytecode"),
    ]
    return cases


def nesting_bomb(depth):
    """Tables nested `depth` deep: {[1] = {[1] = ...}}."""
    out = bytearray()
    for i in range(depth):
        out += i32(3, i + 1, 1) + i32(1) + f64(1)
    out += i32(0)
    return bytes(out)
