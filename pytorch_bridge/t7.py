"""Torch7 `.t7` files in pure Python (no Lua): load to numpy arrays, dicts and
lists; save numpy arrays, dicts, lists, numbers, strings and booleans.

    from pytorch_bridge import t7
    obj = t7.load("model.t7")            # or t7.load(some_bytes)
    t7.save("x.t7", {"w": np.ones((2, 3), np.float32), "n": 3})

Reading (the format is torch7's File.lua object layer, binary mode):
  - tensors become numpy arrays viewing their storage (np.lib.stride_tricks.as_strided,
    as python-torchfile does), so tensors sharing a storage share memory; storages
    become 1-D arrays;
  - tables become `LuaTable` (a dict) or, when the keys are exactly 1..n, `LuaList`;
    both hash by identity, so tables can be keys of tables (as in Lua);
  - objects of other classes become `TorchObject(typename, fields, version)` (nn.GPU's header,
    {tensor type, device}, written before its fields, as `.header`);
    tds.Vec / tds.Hash become lists / dicts;
  - integral numbers become int (int_heuristic), strings str when valid UTF-8
    (else bytes);
  - functions become `LuaFunction` (bytecode kept, never run here) when the file is trusted
    (`trusted=True`, or `functions=True`); by default a file holding a function is refused, since
    the bytecode would run unverified in any LuaJIT that loads it back.
Hostile input raises `T7Error` (a ValueError) naming the byte offset; every length
is checked against the bytes left before anything is allocated.
"""
import io
import math
import os
import struct
import sys

import numpy as np

__all__ = ["load", "save", "loads", "dumps", "T7Error", "TorchObject", "LuaFunction", "LuaTable", "LuaList",
           "IdentityKey"]

TYPE_NIL, TYPE_NUMBER, TYPE_STRING, TYPE_TABLE, TYPE_TORCH, TYPE_BOOLEAN = 0, 1, 2, 3, 4, 5
TYPE_FUNCTION, LEGACY_TYPE_RECUR_FUNCTION, TYPE_RECUR_FUNCTION = 6, 7, 8
_REF_TAGS = (TYPE_TABLE, TYPE_TORCH, TYPE_RECUR_FUNCTION, LEGACY_TYPE_RECUR_FUNCTION)
_TAG_NAMES = {0: "nil", 1: "number", 2: "string", 3: "table", 4: "torch object", 5: "boolean",
              6: "function", 7: "function", 8: "function"}

_DTYPES = {
    "Byte": np.dtype(np.uint8), "Char": np.dtype(np.int8), "Short": np.dtype(np.int16),
    "Int": np.dtype(np.int32), "Long": np.dtype(np.int64), "Float": np.dtype(np.float32),
    "Double": np.dtype(np.float64),
}
_TYPE_OF_DTYPE = {v: k for k, v in _DTYPES.items()}


def _element_name(kind):
    """The element type of a Torch7 tensor/storage kind ("Float", "CudaLong", ...), or None:
    cutorch wrote its types' elements as the host type's ("Cuda" is float)."""
    if kind in _DTYPES:
        return kind
    if kind == "Cuda":
        return "Float"
    if kind.startswith("Cuda") and kind[4:] in _DTYPES:
        return kind[4:]
    return None
MAX_DIM = 16
# Classes written as their name alone, no field table: Torch7's nn (Profile.lua) makes torch.Timer so.
_BODYLESS = {"torch.Timer"}
# Classes whose write() puts a header object before the field table: nn.GPU writes {tensor type, device} first
# (its read() loads the fields onto that device). The header is kept on the object (`header`) and rewritten from
# the fields.
_HEADED = {"nn.GPU": lambda fields: LuaList([fields.get("_type"), fields.get("device")])}


class T7Error(ValueError):
    """Malformed, truncated or hostile .t7 data (the message names the byte offset)."""


class LuaTable(dict):
    """A Lua table read as a dict; hashable by identity so it can be a key."""

    __hash__ = object.__hash__


class LuaList(list):
    """A Lua table with keys exactly 1..n, as a list; hashable by identity."""

    __hash__ = object.__hash__


class IdentityKey:
    """A table key Python cannot hash (a tensor read as an array), kept by identity."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return "IdentityKey(%r)" % (self.value,)


class TorchObject:
    """An instance of a torch class (nn.Linear, nngraph.Node, ...): its type name,
    its fields and its version. Fields are also attributes (obj.weight)."""

    def __init__(self, typename, fields=None, version=1):
        self.__dict__["_typename"] = typename
        self.__dict__["_fields"] = LuaTable() if fields is None else fields
        self.__dict__["_version"] = version

    typename = property(lambda self: self._typename)
    fields = property(lambda self: self._fields)
    version = property(lambda self: self._version)

    def __getattr__(self, name):
        try:
            return self.__dict__["_fields"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, key):
        return self._fields[key]

    def __repr__(self):
        return "TorchObject(%r, fields=[%s])" % (self._typename, ", ".join(map(repr, list(self._fields)[:8])))

    __hash__ = object.__hash__


class LuaFunction:
    """A Lua function read from a file: its LuaJIT bytecode and upvalues (not run)."""

    def __init__(self, dumped, upvalues, tag=TYPE_RECUR_FUNCTION):
        self.dumped = dumped
        self.upvalues = upvalues
        self.tag = tag

    def __repr__(self):
        return "LuaFunction(%d bytes of bytecode)" % len(self.dumped)

    __hash__ = object.__hash__


# ---------------------------------------------------------------- reading

class _Reader:
    def __init__(self, data, long_size, functions, int_heuristic, list_heuristic, decode_strings):
        self.buf = memoryview(data).cast("B")
        self.n = len(self.buf)
        self.pos = 0
        self.long_size = long_size
        self.functions = functions
        self.int_heuristic = int_heuristic
        self.list_heuristic = list_heuristic
        self.decode_strings = decode_strings
        self.objects = {}    # index -> object
        self.tags = {}       # index -> type tag
        self.nread = 0
        self.backrefs = set()  # indices referenced again while being read
        self.storage_ids = set()  # ids of the arrays that are storages

    def fail(self, at, msg):
        raise T7Error("t7: at byte %d: %s" % (at, msg))

    def need(self, nbytes, what):
        if nbytes > self.n - self.pos:
            self.fail(self.pos, "expected %s (%d bytes), got end of file (%d bytes left)"
                      % (what, nbytes, self.n - self.pos))

    def int(self, what="an int"):
        self.need(4, what)
        v = struct.unpack_from("<i", self.buf, self.pos)[0]
        self.pos += 4
        return v

    def long(self, what="a long"):
        self.need(self.long_size, what)
        v = struct.unpack_from("<q" if self.long_size == 8 else "<i", self.buf, self.pos)[0]
        self.pos += self.long_size
        return v

    def longs(self, k, what):
        self.need(k * self.long_size, what)
        v = struct.unpack_from("<%d%s" % (k, "q" if self.long_size == 8 else "i"), self.buf, self.pos)
        self.pos += k * self.long_size
        return list(v)

    def double(self):
        self.need(8, "a double")
        v = struct.unpack_from("<d", self.buf, self.pos)[0]
        self.pos += 8
        return v

    def raw_string(self, what):
        at = self.pos
        n = self.int("the length of %s" % what)
        if n < 0:
            self.fail(at, "expected the length of %s, got %d" % (what, n))
        if n > self.n - self.pos:
            self.fail(at, "expected %s of %d bytes, but only %d bytes are left" % (what, n, self.n - self.pos))
        b = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return b

    def number(self, v):
        if self.int_heuristic and math.isfinite(v) and v == int(v):
            return int(v)
        return v

    def string(self, b):
        if self.decode_strings:
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError:
                return b
        return b

    def register(self, obj, tag):
        self.nread += 1
        self.objects[self.nread] = obj
        self.tags[self.nread] = tag
        return self.nread

    def read_object(self):
        at = self.pos
        if self.n - self.pos < 4:
            self.fail(at, "expected a type tag (0..8), got end of file")
        tag = self.int()
        if tag == TYPE_NIL:
            return None
        if tag == TYPE_NUMBER:
            return self.number(self.double())
        if tag == TYPE_BOOLEAN:
            v = self.int("a boolean")
            if v not in (0, 1):
                self.fail(at + 4, "expected a boolean (0 or 1), got %d" % v)
            return v == 1
        if tag == TYPE_STRING:
            return self.string(self.raw_string("a string"))
        if tag == TYPE_FUNCTION:
            return self.read_function(at, tag, legacy=True)
        if tag not in _REF_TAGS:
            self.fail(at, "expected a type tag (0..8), got %d" % tag)
        iat = self.pos
        index = self.int("a reference index")
        if 1 <= index <= self.nread:
            seen = self.tags[index]
            if seen != tag and not (seen >= 6 and tag >= 6):
                self.fail(iat, "reference index %d names a %s, but the tag says %s"
                          % (index, _TAG_NAMES[seen], _TAG_NAMES[tag]))
            self.backrefs.add(index)
            return self.objects[index]
        if index != self.nread + 1:
            self.fail(iat, "bad reference index %d (expected 1..%d for an object read before, or %d for a new one)"
                      % (index, self.nread, self.nread + 1))
        if tag == TYPE_TABLE:
            return self.read_table(index)
        if tag == TYPE_TORCH:
            return self.read_torch(at)
        return self.read_function(at, tag, legacy=False)

    def read_table(self, index):
        obj = LuaTable()
        self.register(obj, TYPE_TABLE)
        nat = self.pos
        n = self.int("a table size")
        if n < 0 or n * 8 > self.n - self.pos:
            self.fail(nat, "expected a table size (number of key/value pairs), got %d with %d bytes left"
                      % (n, self.n - self.pos))
        for _ in range(n):
            kat = self.pos
            k = self.read_object()
            v = self.read_object()
            if k is None:
                self.fail(kat, "expected a table key, got nil")
            if isinstance(k, float) and k != k:
                self.fail(kat, "expected a table key, got NaN")
            try:
                obj[k] = v
            except TypeError:  # an unhashable key (a tensor): keyed by identity
                obj[IdentityKey(k)] = v
        if self.list_heuristic and index not in self.backrefs and _is_list(obj):
            lst = LuaList(obj[i] for i in range(1, len(obj) + 1))
            self.objects[index] = lst
            return lst
        return obj

    def read_torch(self, at):
        vat = self.pos
        version = self.raw_string("a version string or class name")
        if version.startswith(b"V "):
            try:
                vnum = float(version[2:].decode("ascii"))
            except (UnicodeDecodeError, ValueError):
                self.fail(vat, "expected a version string \"V <number>\", got %r" % version)
            vnum = int(vnum) if vnum == int(vnum) else vnum
            class_name = self.raw_string("a class name")
        else:
            class_name, vnum = version, 0  # a file from before versioning
        if not class_name:
            self.fail(vat, "expected a class name, got an empty string")
        try:
            name = class_name.decode("utf-8")
        except UnicodeDecodeError:
            self.fail(vat, "expected a class name, got undecodable bytes %r" % class_name[:40])
        if name.startswith("torch.") and name.endswith("Storage") and _element_name(name[6:-7]):
            return self.read_storage(_element_name(name[6:-7]), register=True)
        if name.startswith("torch.") and name.endswith("Tensor") and _element_name(name[6:-6]):
            return self.read_tensor(_element_name(name[6:-6]))
        if name in ("tds.Vec", "tds.Hash"):
            return self.read_tds(name)
        if name.startswith("torch.") and ("Tensor" in name or "Storage" in name):
            self.fail(vat, "unsupported tensor or storage class %s" % name)
        obj = TorchObject(name, None, vnum)
        self.register(obj, TYPE_TORCH)
        if name in _BODYLESS:
            return obj
        if name in _HEADED:
            obj.__dict__["header"] = self.read_object()
        fat = self.pos
        fields = self.read_object()
        if isinstance(fields, LuaList):
            fields = LuaTable((i + 1, v) for i, v in enumerate(fields))
        if not isinstance(fields, dict):
            self.fail(fat, "expected the field table of a %s, got %s" % (name, type(fields).__name__))
        obj.__dict__["_fields"] = fields
        return obj

    def read_storage(self, tname, register):
        dtype = _DTYPES[tname]
        idx = self.register(None, TYPE_TORCH) if register else None
        at = self.pos
        n = self.long("a storage size")
        fdtype = dtype.newbyteorder("<")
        if tname == "Long" and self.long_size == 4:  # a LongStorage holds C longs
            fdtype = np.dtype("<i4")
        if n < 0 or n * fdtype.itemsize > self.n - self.pos:
            self.fail(at, "storage of %d %s elements (%d bytes), but only %d bytes are left"
                      % (n, tname.lower(), max(n, 0) * fdtype.itemsize, self.n - self.pos))
        arr = np.frombuffer(self.buf, dtype=fdtype, count=n, offset=self.pos).astype(dtype)
        self.pos += n * fdtype.itemsize
        if idx is not None:
            self.objects[idx] = arr
        self.storage_ids.add(id(arr))
        return arr

    def read_tensor(self, tname):
        idx = self.register(None, TYPE_TORCH)
        at = self.pos
        nd = self.int("a tensor dimension count")
        if nd < 0 or nd > MAX_DIM:
            self.fail(at, "expected a tensor dimension count (0..%d), got %d" % (MAX_DIM, nd))
        gat = self.pos
        sizes = self.longs(nd, "tensor sizes")
        strides = self.longs(nd, "tensor strides")
        oat = self.pos
        offset = self.long("a storage offset") - 1
        for d in range(nd):
            if sizes[d] < 0:
                self.fail(gat, "expected tensor sizes >= 0, got %d in dimension %d" % (sizes[d], d + 1))
            if strides[d] < 0:
                self.fail(gat, "expected tensor strides >= 0, got %d in dimension %d" % (strides[d], d + 1))
        # Torch7: a size of 0 ends the dimension list
        for d in range(nd):
            if sizes[d] == 0:
                nd, sizes, strides = d, sizes[:d], strides[:d]
                break
        if offset < 0:
            self.fail(oat, "expected a storage offset >= 1, got %d" % (offset + 1))
        dtype = _DTYPES[tname]
        nel = int(np.prod(sizes, dtype=object)) if nd else 0
        if nel * dtype.itemsize >= 2 ** 62:  # only stride-0 views can claim this much
            self.fail(gat, "tensor of %d elements is too large to view" % nel)
        sat = self.pos
        storage = self.read_object()
        if storage is None:
            if nel > 0:
                self.fail(sat, "expected a torch.%sStorage for a tensor of %d elements, got nil" % (tname, nel))
            arr = np.empty((0,), dtype)
        else:
            if id(storage) not in self.storage_ids or storage.dtype != dtype:
                self.fail(sat, "expected a torch.%sStorage for a torch.%sTensor, got %s"
                          % (tname, tname, _describe(storage)))
            if nel == 0:
                arr = np.empty((0,), dtype)
            else:
                extent = offset + sum((s - 1) * st for s, st in zip(sizes, strides))
                if extent >= storage.shape[0]:
                    self.fail(sat, "tensor sizes and strides reach element %d, but its storage has %d"
                              % (extent + 1, storage.shape[0]))
                try:
                    arr = np.lib.stride_tricks.as_strided(
                        storage[offset:], shape=tuple(sizes), strides=tuple(s * dtype.itemsize for s in strides))
                except (ValueError, OverflowError) as e:
                    self.fail(sat, "cannot view the storage with sizes %s and strides %s (%s)" % (sizes, strides, e))
        self.objects[idx] = arr
        return arr

    def read_tds(self, name):
        hash_ = name == "tds.Hash"
        obj = LuaTable() if hash_ else LuaList()
        self.register(obj, TYPE_TORCH)
        at = self.pos
        n = self.long("a %s size" % name)
        per = 8 if hash_ else 4
        if n < 0 or n * per > self.n - self.pos:
            self.fail(at, "expected the size of a %s, got %d with %d bytes left" % (name, n, self.n - self.pos))
        for _ in range(n):
            if hash_:
                kat = self.pos
                k = self.read_object()
                v = self.read_object()
                if k is None or (isinstance(k, float) and k != k):
                    self.fail(kat, "expected a tds.Hash key, got nil or NaN")
                try:
                    obj[k] = v
                except TypeError:
                    obj[IdentityKey(k)] = v
            else:
                obj.append(self.read_object())
        return obj

    def read_function(self, at, tag, legacy):
        if not self.functions:
            self.fail(at, "the file holds a function (Lua bytecode, which runs unverified where it is loaded); "
                          "refused: pass trusted=True if you trust this file")
        bat = self.pos
        dumped = self.raw_string("function bytecode")
        if len(dumped) < 5 or dumped[:3] != b"\x1bLJ" or dumped[3] not in (1, 2):
            self.fail(bat, "cannot load function bytecode: not LuaJIT 2.0/2.1 bytecode (header %r)" % dumped[:4])
        fn = LuaFunction(dumped, None, tag)
        if not legacy:
            self.register(fn, tag)
        uat = self.pos
        upvalues = self.read_object()
        if not isinstance(upvalues, (dict, list)):
            self.fail(uat, "expected the upvalue table of a function, got %s" % _describe(upvalues))
        fn.upvalues = upvalues
        return fn


def _describe(v):
    if isinstance(v, np.ndarray):
        return "an array of %s" % v.dtype
    if isinstance(v, TorchObject):
        return v.typename
    return type(v).__name__


def _is_list(d):
    n = len(d)
    if n == 0:
        return True
    for k in d:
        if type(k) is not int or k < 1 or k > n:
            return False
    return True


def loads(data, long_size=8, functions=None, int_heuristic=True, list_heuristic=True, decode_strings=True,
          trusted=False):
    """Read one object from bytes (see the module doc)."""
    if long_size not in (4, 8):
        raise ValueError("long_size must be 4 or 8")
    if functions is None:
        functions = trusted
    r = _Reader(data, long_size, functions, int_heuristic, list_heuristic, decode_strings)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 20000))  # deep nngraph graphs nest tables deeply
    try:
        return r.read_object()
    except RecursionError:
        raise T7Error("t7: at byte %d: objects nested too deeply" % r.pos) from None
    finally:
        sys.setrecursionlimit(old)


def load(path_or_bytes, long_size=8, **options):
    """Read a .t7 file (a path, bytes, or a binary file object)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data = path_or_bytes
    elif hasattr(path_or_bytes, "read"):
        data = path_or_bytes.read()
    else:
        with open(os.fspath(path_or_bytes), "rb") as f:
            data = f.read()
    return loads(data, long_size=long_size, **options)


# ---------------------------------------------------------------- writing

class _Writer:
    def __init__(self, out, long_size):
        self.out = out
        self.lfmt = "<q" if long_size == 8 else "<i"
        self.index = {}       # id(obj) -> index
        self.keep = []        # objects indexed (ids must stay valid)
        self.storages = {}    # id(base array) -> index, for shared storages
        self.n = 0

    def int(self, v):
        self.out.write(struct.pack("<i", v))

    def long(self, v):
        self.out.write(struct.pack(self.lfmt, v))

    def raw_string(self, b):
        self.int(len(b))
        self.out.write(b)

    def new_index(self, obj):
        self.n += 1
        self.index[id(obj)] = self.n
        self.keep.append(obj)
        self.int(self.n)

    def ref(self, tag, obj):
        """Write tag + index; True when the object was written before."""
        self.int(tag)
        i = self.index.get(id(obj))
        if i is not None:
            self.int(i)
            return True
        self.new_index(obj)
        return False

    def write(self, obj):
        if obj is None:
            self.int(TYPE_NIL)
        elif isinstance(obj, (bool, np.bool_)):
            self.int(TYPE_BOOLEAN)
            self.int(1 if obj else 0)
        elif isinstance(obj, (int, float, np.integer, np.floating)):
            self.int(TYPE_NUMBER)
            self.out.write(struct.pack("<d", float(obj)))
        elif isinstance(obj, str):
            self.int(TYPE_STRING)
            self.raw_string(obj.encode("utf-8"))
        elif isinstance(obj, (bytes, bytearray)):
            self.int(TYPE_STRING)
            self.raw_string(bytes(obj))
        elif isinstance(obj, np.ndarray):
            self.write_tensor(obj)
        elif isinstance(obj, TorchObject):
            if self.ref(TYPE_TORCH, obj):
                return
            self.raw_string(("V %s" % obj.version).encode())
            self.raw_string(obj.typename.encode("utf-8"))
            if obj.typename in _HEADED:
                self.write(_HEADED[obj.typename](obj.fields))
            if obj.typename not in _BODYLESS:
                self.write(obj.fields)
        elif isinstance(obj, LuaFunction):
            if self.ref(obj.tag if obj.tag != TYPE_FUNCTION else TYPE_RECUR_FUNCTION, obj):
                return
            self.raw_string(obj.dumped)
            self.write(obj.upvalues if obj.upvalues is not None else {})
        elif isinstance(obj, dict):
            if self.ref(TYPE_TABLE, obj):
                return
            self.int(len(obj))
            for k, v in obj.items():
                self.write(k.value if isinstance(k, IdentityKey) else k)
                self.write(v)
        elif isinstance(obj, (list, tuple)):
            if self.ref(TYPE_TABLE, obj):
                return
            self.int(len(obj))
            for i, v in enumerate(obj):
                self.write(i + 1)
                self.write(v)
        else:
            raise TypeError("t7.save: cannot write an object of type %s" % type(obj).__name__)

    def write_tensor(self, a):
        tname = _TYPE_OF_DTYPE.get(np.dtype(a.dtype).newbyteorder("="))
        if tname is None:
            raise TypeError("t7.save: dtype %s has no torch tensor type" % a.dtype)
        if a.ndim > MAX_DIM:
            raise ValueError("t7.save: at most %d dimensions" % MAX_DIM)
        if self.ref(TYPE_TORCH, a):
            return
        self.raw_string(b"V 1")
        self.raw_string(("torch.%sTensor" % tname).encode())
        if a.size == 0 or a.ndim == 0:
            if a.ndim == 0 and a.size == 1:  # a numpy scalar array: a 1-element tensor
                a = a.reshape(1)
            else:
                self.int(0)
                self.long(1)
                self.int(TYPE_NIL)
                return
        owner, base, offset, strides = _storage_of(a)
        self.int(a.ndim)
        for s in a.shape:
            self.long(s)
        for s in strides:
            self.long(s)
        self.long(offset + 1)
        # the storage: shared by every array viewing the same base buffer
        self.int(TYPE_TORCH)
        key = id(owner)
        i = self.storages.get(key)
        if i is not None:
            self.int(i)
            return
        self.n += 1
        self.storages[key] = self.n
        self.keep.append(owner)
        self.int(self.n)
        self.raw_string(b"V 1")
        self.raw_string(("torch.%sStorage" % tname).encode())
        self.long(base.shape[0])
        fdtype = a.dtype.newbyteorder("<")
        if tname == "Long" and self.lfmt == "<i":  # a LongStorage holds C longs
            if base.size and (base.min() < -2 ** 31 or base.max() >= 2 ** 31):
                raise ValueError("t7.save: LongTensor values do not fit 4-byte longs (long_size=4)")
            fdtype = np.dtype("<i4")
        self.out.write(np.ascontiguousarray(base, dtype=fdtype).tobytes())


def _storage_of(a):
    """(owner, 1-D storage array, element offset, element strides) of an array.
    Views of one C-contiguous owner with non-negative strides share it (the
    owner's identity keys the shared storage); other arrays are copied."""
    item = a.itemsize
    owner = a
    while True:  # the owner of the memory (as_strided views hold it through a helper object)
        nxt = owner.base
        if nxt is not None and not isinstance(nxt, np.ndarray):
            nxt = getattr(nxt, "base", None)
        if not isinstance(nxt, np.ndarray):
            break
        owner = nxt
    if (owner.flags.c_contiguous and owner.dtype == a.dtype
            and all(st >= 0 and st % item == 0 for st in a.strides)):
        flat = owner.reshape(-1)
        start = a.__array_interface__["data"][0] - flat.__array_interface__["data"][0]
        if start >= 0 and start % item == 0:
            off = start // item
            extent = off + sum((n - 1) * (st // item) for n, st in zip(a.shape, a.strides))
            if extent < flat.shape[0]:
                return owner, flat, off, [st // item for st in a.strides]
    c = np.ascontiguousarray(a)
    return c, c.reshape(-1), 0, [st // item for st in c.strides]


def dumps(obj, long_size=8):
    """The .t7 bytes of obj (binary, referenced)."""
    out = io.BytesIO()
    _Writer(out, long_size).write(obj)
    return out.getvalue()


def save(path, obj, long_size=8):
    """Write obj as a .t7 file: numpy arrays as torch.<Type>Tensor (views of one base
    array share one storage), dicts/lists as tables, TorchObject as its class."""
    data = dumps(obj, long_size)
    with open(os.fspath(path), "wb") as f:
        f.write(data)
