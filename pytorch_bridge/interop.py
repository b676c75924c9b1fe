"""PyTorch interop: our Lua `nn` models <-> equivalent `torch.nn` models with identical weights.

    from pytorch_bridge import Runtime
    from pytorch_bridge.interop import to_torch, from_torch, state_dict, load_state_dict

    rt = Runtime()
    model = rt.execute("require 'nn'; return require('luatorch.models.resnet')({depth = 18})")
    net = to_torch(rt, model)             # a torch.nn.Module computing the same function
    same = from_torch(rt, net)            # and back to a Lua nn model
    sd = state_dict(rt, model)            # PyTorch-style names ('0.weight', '4.0.0.0.0.running_mean', ...)
    load_state_dict(rt, model, sd)

The converted PyTorch modules follow Torch7's semantics exactly (table modules such as
ConcatTable/CAddTable become small torch.nn.Module classes defined here), so PyTorch can serve as
an independent oracle for our forward and backward passes. Parameter names follow the Lua module
tree: children of containers are numbered from 0 as torch.nn.Sequential does.
"""
import numpy as np

try:
    import torch
    import torch.nn as tnn
    import torch.nn.functional as F
except ImportError as exc:  # pragma: no cover
    raise ImportError("pytorch_bridge.interop needs PyTorch (pip install 'luatorch[test]' or torch==2.13.0)") from exc


# ----------------------------------------------------------------- Torch7 table modules in PyTorch

class _Branches(tnn.Module):
    """Children registered as '0', '1', ... (as torch.nn.Sequential), so parameter names
    follow the Lua module tree."""

    def __init__(self, children):
        super().__init__()
        for i, m in enumerate(children):
            self.add_module(str(i), m)

    @property
    def branches(self):
        return list(self._modules.values())

    def __getitem__(self, i):
        return self.branches[i]


class ConcatTable(_Branches):
    """nn.ConcatTable: every child on the same input; a list of outputs."""

    def forward(self, x):
        return [m(x) for m in self.branches]


class ParallelTable(_Branches):
    """nn.ParallelTable: child i on input i."""

    def forward(self, xs):
        return [m(x) for m, x in zip(self.branches, xs)]


class CAddTable(tnn.Module):
    def forward(self, xs):
        out = xs[0]
        for x in xs[1:]:
            out = out + x
        return out


class Concat(_Branches):
    """nn.Concat(dim): children on the same input, outputs concatenated along dim (1-based)."""

    def __init__(self, dim, children, depth=False):
        super().__init__(children)
        self.dim = dim
        self.depth = depth

    def forward(self, x):
        outs = [m(x) for m in self.branches]
        if self.depth:  # DepthConcat: zero-pad the other dims, centred
            d = self.dim - 1
            shape = [max(o.shape[k] for o in outs) for k in range(outs[0].dim())]
            padded = []
            for o in outs:
                pad = []
                for k in reversed(range(o.dim())):
                    if k == d:
                        pad += [0, 0]
                        continue
                    extra = shape[k] - o.shape[k]
                    before = extra // 2
                    pad += [before, extra - before]
                padded.append(F.pad(o, pad))
            outs = padded
        return torch.cat(outs, self.dim - 1)


class MulConstant(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x * self.c


class View(tnn.Module):
    """nn.View with Torch7's batch rule (numInputDims, one -1)."""

    def __init__(self, sizes, num_input_dims):
        super().__init__()
        self.sizes = list(sizes)
        self.num_input_dims = num_input_dims

    def forward(self, x):
        n_el = int(np.prod([s for s in self.sizes if s != -1])) if self.sizes else 1
        nd = x.dim()
        maxdim = self.num_input_dims or nd
        ine = int(np.prod(x.shape[nd - maxdim:])) if maxdim else 1
        bsz = ine // n_el
        if -1 in self.sizes:
            bsz = 1
        for k in range(nd - maxdim):
            bsz *= x.shape[k]
        if bsz == 1 and (not self.num_input_dims or nd <= self.num_input_dims):
            return x.reshape(self.sizes)
        return x.reshape([bsz] + self.sizes)


class Reshape(tnn.Module):
    def __init__(self, sizes, batch_mode):
        super().__init__()
        self.sizes = list(sizes)
        self.batch_mode = batch_mode

    def forward(self, x):
        n = int(np.prod(self.sizes))
        if self.batch_mode is False or (self.batch_mode is None and x.numel() == n and x.shape[0] != 1):
            return x.reshape(self.sizes)
        return x.reshape([x.shape[0]] + self.sizes)


class Threshold(tnn.Module):
    """y = x > th ? x : val, gradient where x > th (strict), as Torch7."""

    def __init__(self, th, val):
        super().__init__()
        self.th, self.val = th, val

    def forward(self, x):
        return torch.where(x > self.th, x, torch.full_like(x, self.val))


class AvgPool(tnn.Module):
    """Torch7 average pooling; PyTorch's AvgPool2d has the same divisor rules."""

    def __init__(self, k, s, p, ceil, include_pad, divide=True):
        super().__init__()
        self.pool = tnn.AvgPool2d(k, s, p, ceil_mode=ceil, count_include_pad=include_pad)
        self.scale = 1 if divide else k[0] * k[1]

    def forward(self, x):
        return self.pool(x) * self.scale if self.scale != 1 else self.pool(x)


# ----------------------------------------------------------------- Lua -> PyTorch

_LUA_INFO = r"""
local M = {}
function M.info(m)
   local t = {}
   for k, v in pairs(m) do
      local tv = type(v)
      if tv == 'number' or tv == 'string' or tv == 'boolean' then t[k] = v end
   end
   t.__typename = torch.typename(m)
   if m.size and torch.typename(m.size) == 'torch.LongStorage' then t.__size = m.size:totable() end
   return t
end
function M.children(m) return m.modules or {} end
function M.field(m, name) return m[name] end
function M.hasfield(m, name) return m[name] ~= nil end
return M
"""


def _helper(rt):
    h = getattr(rt, "_interop_helper", None)
    if h is None:
        h = rt.execute(_LUA_INFO)
        rt._interop_helper = h
    return h


def _tensor(rt, m, name, dtype):
    h = _helper(rt)
    t = rt.call(h.field, m, name)
    if t is None:
        return None
    return torch.from_numpy(np.array(rt.to_numpy(t), dtype=dtype, copy=True))


def _lua_dict(tbl):
    return {k: tbl[k] for k in tbl.keys()}


def _children(rt, m):
    kids = rt.call(_helper(rt).children, m)
    return [kids[i + 1] for i in range(len(kids))]


def to_torch(rt, module, dtype=None):
    """A torch.nn.Module equal to the Lua nn module (same function, same weights).

    dtype defaults to the Lua module's tensor type (float32 for FloatTensor, else float64)."""
    info = _lua_dict(rt.call(_helper(rt).info, module))
    if dtype is None:
        dtype = np.float32 if info.get("_type") == "torch.FloatTensor" else np.float64
    tdtype = torch.float32 if dtype == np.float32 else torch.float64
    # build the PyTorch modules in the target dtype, so weights are copied without rounding
    previous = torch.get_default_dtype()
    torch.set_default_dtype(tdtype)
    try:
        return _to_torch(rt, module, info, dtype, tdtype)
    finally:
        torch.set_default_dtype(previous)


def _to_torch(rt, module, info, dtype, tdtype):
    name = info["__typename"]
    kind = name.split(".", 1)[1] if "." in name else name
    kids = lambda: [to_torch(rt, c, dtype) for c in _children(rt, module)]  # noqa: E731
    w = lambda f: _tensor(rt, module, f, dtype)  # noqa: E731

    if kind == "Sequential":
        out = tnn.Sequential(*kids())
    elif kind == "ConcatTable":
        out = ConcatTable(kids())
    elif kind == "ParallelTable":
        out = ParallelTable(kids())
    elif kind in ("Concat", "DepthConcat"):
        out = Concat(int(info["dimension"]), kids(), depth=kind == "DepthConcat")
    elif kind == "CAddTable":
        out = CAddTable()
    elif kind == "Identity":
        out = tnn.Identity()
    elif kind == "MulConstant":
        out = MulConstant(info["constant_scalar"])
    elif kind == "View":
        out = View([int(s) for s in info["__size"].values()], info.get("numInputDims"))
    elif kind == "Reshape":
        out = Reshape([int(s) for s in info["__size"].values()], info.get("batchMode"))
    elif kind == "Dropout":
        out = tnn.Dropout(info["p"])
    elif kind in ("ReLU", "Threshold"):
        th, val = info.get("threshold", 0), info.get("val", 0)
        out = tnn.ReLU() if (th == 0 and val == 0) else Threshold(th, val)
    elif kind == "Linear":
        weight, bias = w("weight"), w("bias")
        out = tnn.Linear(weight.shape[1], weight.shape[0], bias=bias is not None)
        with torch.no_grad():
            out.weight.copy_(weight)
            if bias is not None:
                out.bias.copy_(bias)
    elif kind == "SpatialConvolution":
        weight, bias = w("weight"), w("bias")
        nout, nin = int(info["nOutputPlane"]), int(info["nInputPlane"])
        kh, kw = int(info["kH"]), int(info["kW"])
        out = tnn.Conv2d(nin, nout, (kh, kw), stride=(int(info["dH"]), int(info["dW"])),
                         padding=(int(info.get("padH", 0)), int(info.get("padW", 0))), bias=bias is not None)
        with torch.no_grad():
            out.weight.copy_(weight.reshape(nout, nin, kh, kw))
            if bias is not None:
                out.bias.copy_(bias)
    elif kind in ("BatchNormalization", "SpatialBatchNormalization"):
        rm, rv = w("running_mean"), w("running_var")
        weight, bias = w("weight"), w("bias")
        cls = tnn.BatchNorm2d if kind.startswith("Spatial") else tnn.BatchNorm1d
        out = cls(rm.numel(), eps=info["eps"], momentum=info["momentum"], affine=weight is not None)
        with torch.no_grad():
            out.running_mean.copy_(rm)
            out.running_var.copy_(rv)
            if weight is not None:
                out.weight.copy_(weight)
                out.bias.copy_(bias)
        out.train(info.get("train", True) is not False)
    elif kind == "SpatialMaxPooling":
        out = tnn.MaxPool2d((int(info["kH"]), int(info["kW"])), (int(info["dH"]), int(info["dW"])),
                            (int(info.get("padH", 0)), int(info.get("padW", 0))),
                            ceil_mode=bool(info.get("ceil_mode", False)))
    elif kind == "SpatialAveragePooling":
        out = AvgPool((int(info["kH"]), int(info["kW"])), (int(info["dH"]), int(info["dW"])),
                      (int(info.get("padH", 0)), int(info.get("padW", 0))), bool(info.get("ceil_mode", False)),
                      info.get("count_include_pad", True) is not False, info.get("divide", True) is not False)
    elif kind == "SoftMax":
        out = _FeatureSoftmax(log=False)
    elif kind == "LogSoftMax":
        out = _FeatureSoftmax(log=True)
    else:
        raise NotImplementedError("to_torch: no PyTorch equivalent for %s" % name)
    out.lua_typename = name
    return out.to(tdtype)


class _FeatureSoftmax(tnn.Module):
    """(Log)SoftMax over Torch7's feature dim: dim 0 for 1-D/3-D input, dim 1 for 2-D/4-D."""

    def __init__(self, log):
        super().__init__()
        self.log = log

    def forward(self, x):
        dim = 0 if x.dim() in (1, 3) else 1
        return F.log_softmax(x, dim) if self.log else F.softmax(x, dim)


# ----------------------------------------------------------------- PyTorch -> Lua

def _lua_tensor(rt, array, ttype):
    arr = np.ascontiguousarray(array.detach().cpu().numpy().astype(
        np.float32 if ttype == "torch.FloatTensor" else np.float64))
    t = rt.from_numpy(arr)
    return rt.call(rt.eval("function(t, ty) return t:type(ty):clone() end"), t, ttype)


def from_torch(rt, net, ttype=None):
    """A Lua nn module equal to a torch.nn.Module built of the layers to_torch produces
    (or plain torch.nn Sequential/Conv2d/BatchNorm/Linear/ReLU/pooling/Softmax layers)."""
    rt.require("nn")
    if ttype is None:
        p = next(iter(net.parameters()), None)
        ttype = "torch.FloatTensor" if (p is None or p.dtype == torch.float32) else "torch.DoubleTensor"
    mk = lambda code, *a: rt.call(rt.eval("function(...) " + code + " end"), *a)  # noqa: E731
    lua_name = getattr(net, "lua_typename", None)
    kids = lambda mods: [from_torch(rt, m, ttype) for m in mods]  # noqa: E731

    def container(cls, children, *args):
        c = mk("local c = %s(...); return c" % cls, *args)
        for ch in children:
            rt.call(rt.eval("function(c, m) c:add(m) end"), c, ch)
        return c

    if isinstance(net, tnn.Sequential):
        m = container("nn.Sequential", kids(net))
    elif isinstance(net, ConcatTable):
        m = container("nn.ConcatTable", kids(net.branches))
    elif isinstance(net, ParallelTable):
        m = container("nn.ParallelTable", kids(net.branches))
    elif isinstance(net, Concat):
        m = container("nn.DepthConcat" if net.depth else "nn.Concat", kids(net.branches), net.dim)
    elif isinstance(net, CAddTable):
        m = mk("return nn.CAddTable()")
    elif isinstance(net, tnn.Identity):
        m = mk("return nn.Identity()")
    elif isinstance(net, MulConstant):
        m = mk("return nn.MulConstant(...)", net.c)
    elif isinstance(net, View):
        m = mk("local v = nn.View(torch.LongStorage((...))); if select(2, ...) then v:setNumInputDims(select(2, ...)) end "
               "return v", rt.table(*net.sizes), net.num_input_dims)
    elif isinstance(net, tnn.Dropout):
        m = mk("return nn.Dropout(...)", net.p)
    elif isinstance(net, tnn.ReLU):
        m = mk("return %s(false)" % (lua_name or "nn.ReLU"))
    elif isinstance(net, Threshold):
        m = mk("return nn.Threshold(...)", net.th, net.val)
    elif isinstance(net, tnn.Linear):
        m = mk("local l = nn.Linear(...); if not select(3, ...) then l:noBias() end return l",
               net.in_features, net.out_features, net.bias is not None)
        _set(rt, m, "weight", _lua_tensor(rt, net.weight, ttype))
        if net.bias is not None:
            _set(rt, m, "bias", _lua_tensor(rt, net.bias, ttype))
    elif isinstance(net, tnn.Conv2d):
        kh, kw = net.kernel_size
        dh, dw = net.stride
        ph, pw = net.padding
        cls = lua_name if lua_name in ("nn.SpatialConvolution", "cudnn.SpatialConvolution") else "nn.SpatialConvolution"
        m = mk("local c = %s(...); if not select(9, ...) then c:noBias() end return c" % cls,
               net.in_channels, net.out_channels, kw, kh, dw, dh, pw, ph, net.bias is not None)
        _set(rt, m, "weight", _lua_tensor(rt, net.weight, ttype))
        if net.bias is not None:
            _set(rt, m, "bias", _lua_tensor(rt, net.bias, ttype))
    elif isinstance(net, (tnn.BatchNorm1d, tnn.BatchNorm2d)):
        cls = lua_name or ("nn.SpatialBatchNormalization" if isinstance(net, tnn.BatchNorm2d) else "nn.BatchNormalization")
        m = mk("return %s(...)" % cls, net.num_features, net.eps, net.momentum, net.affine)
        _set(rt, m, "running_mean", _lua_tensor(rt, net.running_mean, ttype))
        _set(rt, m, "running_var", _lua_tensor(rt, net.running_var, ttype))
        if net.affine:
            _set(rt, m, "weight", _lua_tensor(rt, net.weight, ttype))
            _set(rt, m, "bias", _lua_tensor(rt, net.bias, ttype))
        if not net.training:
            rt.call(rt.eval("function(m) m:evaluate() end"), m)
    elif isinstance(net, tnn.MaxPool2d):
        k, s, p = (_pair(net.kernel_size), _pair(net.stride), _pair(net.padding))
        m = mk("local p = nn.SpatialMaxPooling(...); if select(7, ...) then p:ceil() end return p",
               k[1], k[0], s[1], s[0], p[1], p[0], bool(net.ceil_mode))
    elif isinstance(net, AvgPool):
        pool = net.pool
        k, s, p = (_pair(pool.kernel_size), _pair(pool.stride), _pair(pool.padding))
        m = mk("local p = nn.SpatialAveragePooling(...); if select(7, ...) then p:ceil() end "
               "if not select(8, ...) then p:setCountExcludePad() end return p",
               k[1], k[0], s[1], s[0], p[1], p[0], bool(pool.ceil_mode), bool(pool.count_include_pad))
    elif isinstance(net, _FeatureSoftmax):
        m = mk("return nn.LogSoftMax()" if net.log else "return nn.SoftMax()")
    else:
        raise NotImplementedError("from_torch: no Lua nn equivalent for %s" % type(net).__name__)
    return rt.call(rt.eval("function(m, ty) return m:type(ty) end"), m, ttype)


def _pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def _set(rt, m, name, tensor):
    rt.call(rt.eval("function(m, k, v) m[k] = v; "
                    "if k == 'weight' or k == 'bias' then m['grad' .. k:sub(1,1):upper() .. k:sub(2)] = v:clone():zero() end end"),
            m, name, tensor)


# ----------------------------------------------------------------- state_dict

_PARAM_FIELDS = ("weight", "bias", "running_mean", "running_var")


def _walk(rt, module, prefix, out):
    kids = _children(rt, module)
    if kids:
        for i, child in enumerate(kids):
            _walk(rt, child, "%s%d." % (prefix, i), out)
        return
    h = _helper(rt)
    for f in _PARAM_FIELDS:
        t = rt.call(h.field, module, f)
        if t is not None:
            out.append((prefix + f, module, f, t))


def state_dict(rt, module):
    """The module's parameters and BN buffers as an ordered dict of torch tensors (copies),
    named like the equivalent PyTorch model from to_torch."""
    from collections import OrderedDict

    items = []
    _walk(rt, module, "", items)
    return OrderedDict((name, torch.from_numpy(np.array(rt.to_numpy(t), copy=True))) for name, _, _, t in items)


def load_state_dict(rt, module, sd, strict=True):
    """Copy tensors from a PyTorch-style state_dict into the Lua module in place."""
    items = []
    _walk(rt, module, "", items)
    names = {n for n, *_ in items}
    if strict:
        missing = sorted(names - set(sd))
        unexpected = sorted(k for k in sd if k not in names and not k.endswith("num_batches_tracked"))
        if missing or unexpected:
            raise KeyError("load_state_dict: missing %s, unexpected %s" % (missing, unexpected))
    for name, _, _, t in items:
        if name in sd:
            dst = rt.to_numpy(t)
            src = sd[name].detach().cpu().numpy()
            if src.size != dst.size:
                raise ValueError("load_state_dict: %s has %d elements, the model needs %d" % (name, src.size, dst.size))
            dst[...] = src.reshape(dst.shape)
