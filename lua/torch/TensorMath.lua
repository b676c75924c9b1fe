-- Torch7's TensorMath: pointwise math (shifts and bitwise operations
-- included), comparisons, reductions, operators, the matrix functions diag,
-- eye, tril, triu, trace, cross, histc, bhistc, renorm, and the
-- zeros/ones/linspace/logspace/range constructors, on the C kernels of
-- native/src/math_*.c.
--
-- Argument forms follow Torch7's cwrap declarations. A pointwise op has a
-- list of source signatures (e.g. add: tensor value | tensor [value] tensor).
-- As a method, `self:op(sources...)` writes into self, and when the
-- arguments only make sense with self as the first source (`x:add(5)`,
-- `x:cmul(y)`, `x:sqrt()`) self is also that source. As a function,
-- `torch.op(sources...)` returns a new tensor and `torch.op(r, sources...)`
-- writes into r. Reductions and comparisons return new tensors from methods
-- too, as Torch7 did (`x:sum(1)` does not modify x).
local torch = ...
local ffi = require 'ffi'
local C = torch.C

local M = torch._tensorMethods
local ops = torch._tensorOps
local newTensor = torch._newTensor
local isTensor = torch.isTensor

-- Raise the C error (level 3: the caller of the method/function).
local function check(rc)
   if rc ~= 0 then error(ffi.string(C.lt_errmsg()), 4) end
end

local function shortType(x)
   if isTensor(x) then return torch._typesById[x._c.type].name .. 'Tensor' end
   return type(x)
end

-- A signature key: one letter per argument (t tensor, n number, b boolean).
local function kinds(...)
   local k = ''
   for i = 1, select('#', ...) do
      local v = select(i, ...)
      local tv = type(v)
      k = k .. ((tv == 'number' and 'n') or (tv == 'boolean' and 'b') or (isTensor(v) and 't') or '?')
   end
   return k
end

local function badArgs(name, usage, ...)
   local got = {}
   for i = 1, select('#', ...) do got[i] = shortType((select(i, ...))) end
   error(string.format('%s: invalid arguments: %s\nexpected arguments: %s', name, table.concat(got, ' '), usage), 3)
end

local function firstTensor(...)
   for i = 1, select('#', ...) do
      local v = select(i, ...)
      if isTensor(v) then return v end
   end
end

local function defaultTypeId()
   return torch._types[torch.getdefaulttensortype():match('^torch%.(%a+)Tensor$')].id
end

-- ---------------------------------------------------------------- pointwise

-- Define M[name] and torch[name] from `sigs` (signature key -> function(r, ...)).
-- numberFn, when given, is torch[name]'s answer for plain numbers. torch[name] calls the result's own method
-- (M[name] for host tensors; cutorch's device version for GPU tensors), so the functional form runs where its
-- tensors are: torch._throughMethods lists these forms.
local function pointwise(name, sigs, usage, numberFn)
   M[name] = function(self, ...)
      local f = sigs[kinds(...)]
      if f then f(self, ...); return self end
      f = sigs[kinds(self, ...)]
      if f then f(self, self, ...); return self end
      badArgs(name, '*tensor* ' .. usage:gsub(' | ', ' | *tensor* '), self, ...)
   end
   torch[name] = function(...)
      if sigs[kinds(...)] then
         local r = newTensor(firstTensor(...)._c.type)
         return r[name](r, ...)
      end
      local r = ...
      if isTensor(r) and sigs[kinds(select(2, ...))] then return r[name](r, select(2, ...)) end
      if numberFn and kinds(...):match('^n+$') then return numberFn(...) end
      badArgs(name, '[result] ' .. usage:gsub(' | ', ' | [result] '), ...)
   end
   torch._throughMethods[name] = true
end

local function scalar(op)
   return function(r, t, v) check(C.lt_math_scalar(r._c, t._c, op, v)) end
end
local function scalarNeg(op)
   return function(r, t, v) check(C.lt_math_scalar(r._c, t._c, op, -v)) end
end
local function binary(op)
   return function(r, a, b) check(C.lt_math_binary(r._c, a._c, op, b._c)) end
end
local function cadd(sign)
   return {
      tt = function(r, a, b) check(C.lt_math_cadd(r._c, a._c, sign, b._c)) end,
      tnt = function(r, a, v, b) check(C.lt_math_cadd(r._c, a._c, sign * v, b._c)) end,
   }
end

local addSigs = cadd(1)
addSigs.tn = scalar(C.LT_OP_ADD)
pointwise('add', addSigs, 'tensor value | tensor1 [value] tensor2')
local csubSigs = cadd(-1)
csubSigs.tn = scalarNeg(C.LT_OP_ADD)
pointwise('csub', csubSigs, 'tensor value | tensor1 [value] tensor2')
pointwise('mul', {tn = scalar(C.LT_OP_MUL)}, 'tensor value')
pointwise('div', {tn = scalar(C.LT_OP_DIV)}, 'tensor value')
pointwise('fmod', {tn = scalar(C.LT_OP_FMOD)}, 'tensor value')
pointwise('remainder', {tn = scalar(C.LT_OP_REMAINDER)}, 'tensor value')
pointwise('cmul', {tt = binary(C.LT_OP_MUL)}, 'tensor1 tensor2')
pointwise('cdiv', {tt = binary(C.LT_OP_DIV)}, 'tensor1 tensor2')
pointwise('cpow', {tt = binary(C.LT_OP_POW)}, 'tensor1 tensor2')
pointwise('cfmod', {tt = binary(C.LT_OP_FMOD)}, 'tensor1 tensor2')
pointwise('cremainder', {tt = binary(C.LT_OP_REMAINDER)}, 'tensor1 tensor2')
pointwise('atan2', {tt = binary(C.LT_OP_ATAN2)}, 'tensor1 tensor2', math.atan2)
pointwise('cmax', {tt = binary(C.LT_OP_MAX), tn = scalar(C.LT_OP_MAX)}, 'tensor1 tensor2 | tensor value')
pointwise('cmin', {tt = binary(C.LT_OP_MIN), tn = scalar(C.LT_OP_MIN)}, 'tensor1 tensor2 | tensor value')
pointwise('pow', {
   tn = scalar(C.LT_OP_POW),
   nt = function(r, v, t) check(C.lt_math_scalar(r._c, t._c, C.LT_OP_TPOW, v)) end,
}, 'tensor value | value tensor', function(a, b) return a ^ b end)
pointwise('clamp', {
   tnn = function(r, t, lo, hi) check(C.lt_math_clamp(r._c, t._c, lo, hi)) end,
}, 'tensor min max')
-- Torch7's aliases of fmod and cfmod.
pointwise('mod', {tn = scalar(C.LT_OP_FMOD)}, 'tensor value')
pointwise('cmod', {tt = binary(C.LT_OP_FMOD)}, 'tensor1 tensor2')

-- Shifts (integers: bit shifts of the unsigned value; Float/Double: times or
-- divided by 2^n) and bitwise operations (integer types only), by a number
-- or element-wise by a tensor (the c- forms).
for _, name in ipairs {'lshift', 'rshift', 'bitand', 'bitor', 'bitxor'} do
   local op = C['LT_OP_' .. name:upper()]
   pointwise(name, {tn = scalar(op)}, 'tensor value')
   pointwise('c' .. name, {tt = binary(op)}, 'tensor1 tensor2')
end

-- lerp: a + weight * (b - a), also for plain numbers.
pointwise('lerp', {
   ttn = function(r, a, b, w) check(C.lt_math_lerp(r._c, a._c, b._c, w)) end,
}, 'tensor1 tensor2 weight', function(a, b, w) return a + w * (b - a) end)

-- renorm(p, dim, maxnorm): the slices along dim whose p-norm exceeds maxnorm
-- are scaled down to it (x:renorm(...) in place, r:renorm(x, ...) into r).
pointwise('renorm', {
   tnnn = function(r, t, p, d, maxnorm) check(C.lt_math_renorm(r._c, t._c, p, d - 1, maxnorm)) end,
}, 'tensor p dim maxnorm')

local function addc(divide)
   local function f(r, a, v, b, c) check(C.lt_math_addc(r._c, a._c, v, b._c, divide, c._c)) end
   return {
      ttt = function(r, a, b, c) f(r, a, 1, b, c) end,
      tntt = f,
   }
end
pointwise('addcmul', addc(0), 'tensor [value] tensor1 tensor2')
pointwise('addcdiv', addc(1), 'tensor [value] tensor1 tensor2')

local function round(x) return x >= 0 and math.floor(x + 0.5) or math.ceil(x - 0.5) end
local function sign(x) return x > 0 and 1 or (x < 0 and -1 or 0) end
local unary = {
   neg = {C.LT_UN_NEG, function(x) return -x end},
   abs = {C.LT_UN_ABS, math.abs},
   sign = {C.LT_UN_SIGN, sign},
   sqrt = {C.LT_UN_SQRT, math.sqrt},
   rsqrt = {C.LT_UN_RSQRT, function(x) return 1 / math.sqrt(x) end},
   exp = {C.LT_UN_EXP, math.exp},
   log = {C.LT_UN_LOG, math.log},
   log1p = {C.LT_UN_LOG1P},
   expm1 = {C.LT_UN_EXPM1},
   tanh = {C.LT_UN_TANH, math.tanh},
   sigmoid = {C.LT_UN_SIGMOID, function(x) return 1 / (1 + math.exp(-x)) end},
   floor = {C.LT_UN_FLOOR, math.floor},
   ceil = {C.LT_UN_CEIL, math.ceil},
   round = {C.LT_UN_ROUND, round},
   trunc = {C.LT_UN_TRUNC, function(x) return x >= 0 and math.floor(x) or math.ceil(x) end},
   frac = {C.LT_UN_FRAC, function(x) return x - (x >= 0 and math.floor(x) or math.ceil(x)) end},
   cinv = {C.LT_UN_CINV, function(x) return 1 / x end},
   sin = {C.LT_UN_SIN, math.sin}, cos = {C.LT_UN_COS, math.cos}, tan = {C.LT_UN_TAN, math.tan},
   asin = {C.LT_UN_ASIN, math.asin}, acos = {C.LT_UN_ACOS, math.acos}, atan = {C.LT_UN_ATAN, math.atan},
   sinh = {C.LT_UN_SINH, math.sinh}, cosh = {C.LT_UN_COSH, math.cosh},
}
for name, spec in pairs(unary) do
   local op = spec[1]
   pointwise(name, {t = function(r, t) check(C.lt_math_unary(r._c, t._c, op)) end}, 'tensor', spec[2])
end

-- ---------------------------------------------------------------- comparisons

local throughMethod = torch._throughMethod

-- a:eq(b) and torch.eq(a, b) return a new ByteTensor; r:eq(a, b) and
-- torch.eq(r, a, b) fill r, a ByteTensor or a tensor of a's type (0/1).
for name, op in pairs {eq = C.LT_CMP_EQ, ne = C.LT_CMP_NE, lt = C.LT_CMP_LT, le = C.LT_CMP_LE,
                       gt = C.LT_CMP_GT, ge = C.LT_CMP_GE} do
   local function compare(r, a, b)
      if type(b) == 'number' then
         check(C.lt_math_compare_value(r._c, a._c, op, b))
      elseif isTensor(b) then
         check(C.lt_math_compare(r._c, a._c, op, b._c))
      else
         badArgs(name, '[result] tensor (tensor | value)', r, a, b)
      end
   end
   local function fn(r, a, b)
      if b == nil then r, a, b = nil, r, a end
      if not isTensor(a) then badArgs(name, '[result] tensor (tensor | value)', r, a, b) end
      if r == nil then
         r = newTensor(torch._maskTypeFor(a))
      elseif not isTensor(r) then
         badArgs(name, '[result] tensor (tensor | value)', r, a, b)
      elseif r._c.type ~= C.LT_BYTE and r._c.type ~= C.LT_CUDA_BYTE then
         -- a result of the source's type holds the mask as 0/1 values
         local mask = newTensor(torch._maskTypeFor(a))
         compare(mask, a, b)
         M.resizeAs(r, a)
         M.copy(r, mask)
         return r
      end
      compare(r, a, b)
      return r
   end
   M[name] = fn
   throughMethod(name, fn)   -- torch.gt(a, b) is a:gt(b), torch.gt(r, a, b) r:gt(a, b)
end

local intOut = ffi.typeof('int[1]')
local function allAny(any)
   return function(self)
      local out = intOut()   -- a fresh buffer per call, as reduceAll's below
      check(C.lt_math_all_any(self._c, any, out))
      return out[0] ~= 0
   end
end
M.all = allAny(0)
M.any = allAny(1)
torch.all, torch.any = M.all, M.any

function M.equal(self, other)
   if not isTensor(other) or self._c.type ~= other._c.type or not M.isSameSizeAs(self, other) then return false end
   return M.all(M.eq(self, other))
end
torch.equal = M.equal

-- ---------------------------------------------------------------- reductions

-- Results come back through a fresh buffer per call: with one shared buffer, LuaJIT's trace optimizer
-- can let an earlier read see a later call's value, as in `(a - b):abs():max() <= b:abs():max()`
-- (tests/test_jit_result_buffers.py).
local doubleOut = ffi.typeof('double[1]')
local function reduceAll(t, op, p, biased)
   local out = doubleOut()
   check(C.lt_math_reduce_all(t._c, op, p or 0, biased and 1 or 0, out))
   return out[0]
end

local function dim0(d, name)
   if type(d) ~= 'number' or d ~= math.floor(d) then
      error(string.format('%s: dimension must be an integer, got %s', name, tostring(d)), 4)
   end
   return d - 1
end

local function reduceDim(r, t, d, op, name, p, biased)
   if not isTensor(t) then badArgs(name, '[result] tensor dim', r, t, d) end
   r = r or newTensor(t._c.type)
   check(C.lt_math_reduce_dim(r._c, t._c, dim0(d, name), op, p or 0, biased and 1 or 0))
   return r
end

-- sum, prod, mean: x:op() -> number; x:op(dim), torch.op(x, dim) -> new
-- tensor; r:op(x, dim), torch.op(r, x, dim) -> r.
for name, op in pairs {sum = C.LT_RED_SUM, prod = C.LT_RED_PROD, mean = C.LT_RED_MEAN} do
   local function fn(self, a, b)
      if not isTensor(self) then badArgs(name, '[result] tensor [dim]', self, a, b) end
      if a == nil then return reduceAll(self, op) end
      if isTensor(a) then return reduceDim(self, a, b, op, name) end
      return reduceDim(nil, self, a, op, name)
   end
   M[name] = fn
   torch[name] = fn
end

-- var, std: x:op([biased]) -> number; x:op(dim [, biased]);
-- r:op(x, dim [, biased]). biased = true divides by n, else by n - 1.
for name, op in pairs {var = C.LT_RED_VAR, std = C.LT_RED_STD} do
   local function fn(self, a, b, c)
      if not isTensor(self) then badArgs(name, '[result] tensor [dim] [biased]', self, a, b, c) end
      if a == nil or type(a) == 'boolean' then return reduceAll(self, op, 0, a) end
      if isTensor(a) then return reduceDim(self, a, b, op, name, 0, c) end
      return reduceDim(nil, self, a, op, name, 0, b)
   end
   M[name] = fn
   torch[name] = fn
end

-- norm: x:norm([p = 2]) -> number; x:norm(p, dim); r:norm(x, p, dim).
local function norm(self, a, b, c)
   if not isTensor(self) then badArgs('norm', '[result] tensor [p] [dim]', self, a, b, c) end
   if isTensor(a) then return reduceDim(self, a, c, C.LT_RED_NORM, 'norm', b or 2) end
   if b == nil then return reduceAll(self, C.LT_RED_NORM, a or 2) end
   return reduceDim(nil, self, b, C.LT_RED_NORM, 'norm', a or 2)
end
M.norm = norm
torch.norm = norm

-- dist(a, b [, p = 2]): the p-norm of a - b.
function M.dist(a, b, p)
   return norm(torch.add(a, -1, b), p or 2)
end
torch.dist = M.dist
-- var, std, norm, dist, all and any call their first tensor's method (torch._throughMethods: cutorch's device
-- versions)
for _, name in ipairs {'var', 'std', 'norm', 'dist', 'all', 'any'} do throughMethod(name) end

-- max, min: x:max() -> number; x:max(dim) -> values, indices (LongTensor,
-- 1-based); torch.max(values, indices, x, dim) fills them; with two tensors
-- they are cmax/cmin.
for name, want in pairs {max = 1, min = 0} do
   local op = want == 1 and C.LT_RED_MAX or C.LT_RED_MIN
   local cname = want == 1 and 'cmax' or 'cmin'
   local usage = '[values indices] tensor [dim] | [result] tensor1 tensor2'
   local function fn(self, a, b, c)
      if not isTensor(self) then badArgs(name, usage, self, a, b, c) end
      if a == nil then return reduceAll(self, op) end
      local values, indices, t, d
      if type(a) == 'number' then
         values, indices, t, d = newTensor(self._c.type), newTensor(torch._indexTypeFor(self)), self, a
      elseif isTensor(a) and isTensor(b) and c ~= nil then
         values, indices, t, d = self, a, b, c
      elseif isTensor(a) and b == nil then
         return torch[cname](self, a)
      elseif isTensor(a) and type(b) == 'number' then
         -- res:max(src, dim): the values into res, the indices into a new tensor (Torch7's optional result)
         values, indices, t, d = self, newTensor(torch._indexTypeFor(a)), a, b
      elseif isTensor(a) then
         return torch[cname](self, a, b)
      else
         badArgs(name, usage, self, a, b, c)
      end
      check(C.lt_math_maxmin_dim(values._c, indices._c, t._c, dim0(d, name), want))
      return values, indices
   end
   M[name] = fn
   torch[name] = fn
end

-- ---------------------------------------------------------------- matrices

-- Torch7 functions whose result is an optional first tensor, in front of
-- `nsrc` tensor sources: x:f(...) and torch.f(x, ...) return a new tensor of
-- x's type, r:f(x, ...) and torch.f(r, x, ...) fill r and return it.
local function resultFirst(name, nsrc, usage, fill)
   local function f(...)
      local n = 0
      while isTensor((select(n + 1, ...))) do n = n + 1 end
      if n > nsrc then
         fill(...)
         return (...)
      end
      if n < nsrc then badArgs(name, '[result] ' .. usage, ...) end
      local r = newTensor((...)._c.type)
      fill(r, ...)
      return r
   end
   M[name] = f
   torch[name] = f
end

local function intArg(name, v, default, what)
   if v == nil then return default end
   if type(v) ~= 'number' or v ~= math.floor(v) then
      error(string.format('%s: %s must be an integer, got %s', name, what, tostring(v)), 4)
   end
   return v
end

resultFirst('diag', 1, 'tensor [k]', function(r, t, k)
   check(C.lt_math_diag(r._c, t._c, intArg('diag', k, 0, 'the diagonal k')))
end)
resultFirst('tril', 1, 'tensor [k]', function(r, t, k)
   check(C.lt_math_tri(r._c, t._c, intArg('tril', k, 0, 'the diagonal k'), 0))
end)
resultFirst('triu', 1, 'tensor [k]', function(r, t, k)
   check(C.lt_math_tri(r._c, t._c, intArg('triu', k, 0, 'the diagonal k'), 1))
end)
throughMethod('tril', M.tril)
throughMethod('triu', M.triu)
-- cross(a, b [, dim]): dim defaults to the first dimension of size 3.
resultFirst('cross', 2, 'tensor1 tensor2 [dim]', function(r, a, b, d)
   check(C.lt_math_cross(r._c, a._c, b._c, intArg('cross', d, 0, 'the dimension') - 1))
end)
-- histc(x [, nbins = 100 [, min = 0 [, max = 0]]]): min == max means the data's range.
for name, batch in pairs {histc = 0, bhistc = 1} do
   resultFirst(name, 1, 'tensor [nbins] [min] [max]', function(r, t, nbins, lo, hi)
      nbins = intArg(name, nbins, 100, 'the number of bins')
      if (lo ~= nil and type(lo) ~= 'number') or (hi ~= nil and type(hi) ~= 'number') then
         badArgs(name, '[result] tensor [nbins] [min] [max]', r, t, nbins, lo, hi)
      end
      check(C.lt_math_histc(r._c, t._c, nbins, lo or 0, hi or 0, batch))
   end)
end

function M.trace(self)
   if not isTensor(self) then badArgs('trace', 'tensor', self) end
   local out = doubleOut()   -- a fresh buffer per call (reduceAll)
   check(C.lt_math_trace(self._c, out))
   return out[0]
end
throughMethod('trace', M.trace)

-- ---------------------------------------------------------------- operators

local function newOf(t) return newTensor(t._c.type) end

local function operands(name, a, b)
   if isTensor(a) and (isTensor(b) or type(b) == 'number') then return end
   if type(a) == 'number' and isTensor(b) then return end
   error(string.format('%s: expecting two Tensors or one Tensor and one number (got %s and %s)', name,
                       shortType(a), shortType(b)), 3)
end

ops.__add = function(a, b)
   operands('__add', a, b)
   if type(a) == 'number' then a, b = b, a end
   local r = newOf(a)
   if isTensor(b) then check(C.lt_math_cadd(r._c, a._c, 1, b._c))
   else check(C.lt_math_scalar(r._c, a._c, C.LT_OP_ADD, b)) end
   return r
end

ops.__sub = function(a, b)
   operands('__sub', a, b)
   if type(a) == 'number' then
      local r = newOf(b)
      check(C.lt_math_scalar(r._c, b._c, C.LT_OP_RSUB, a))
      return r
   end
   local r = newOf(a)
   if isTensor(b) then check(C.lt_math_cadd(r._c, a._c, -1, b._c))
   else check(C.lt_math_scalar(r._c, a._c, C.LT_OP_ADD, -b)) end
   return r
end

-- tensor * tensor is Torch7's product by dimensions: dot (1D.1D, a number),
-- mv (2D.1D), mm (2D.2D); TensorLinalg provides those methods.
ops.__mul = function(a, b)
   operands('__mul', a, b)
   if type(a) == 'number' then a, b = b, a end
   if type(b) == 'number' then
      local r = newOf(a)
      check(C.lt_math_scalar(r._c, a._c, C.LT_OP_MUL, b))
      return r
   end
   local da, db = a._c.ndim, b._c.ndim
   local fname = (da == 1 and db == 1 and 'dot') or (da == 2 and db == 1 and 'mv') or (da == 2 and db == 2 and 'mm')
   if not fname then
      error(string.format('multiplication between %dD and %dD tensors not yet supported', da, db), 2)
   end
   local f = M[fname]
   if not f then error('__mul: tensor product needs torch.' .. fname .. ', which is not available', 2) end
   if fname == 'dot' then return f(a, b) end
   return f(newOf(a), a, b)
end

-- Torch7 divides (and takes remainders of) a tensor by a number only.
local function byNumber(name, op, word, sym)
   return function(a, b)
      if not isTensor(a) or type(b) ~= 'number' then
         error(string.format('%s: a Tensor %s a number expected (got %s %s %s)', name, word, shortType(a), sym,
                             shortType(b)), 2)
      end
      local r = newOf(a)
      check(C.lt_math_scalar(r._c, a._c, op, b))
      return r
   end
end
ops.__div = byNumber('__div', C.LT_OP_DIV, 'divided by', '/')
ops.__mod = byNumber('__mod', C.LT_OP_REMAINDER, 'modulo', '%')

ops.__unm = function(a)
   local r = newOf(a)
   check(C.lt_math_unary(r._c, a._c, C.LT_UN_NEG))
   return r
end

-- ---------------------------------------------------------------- constructors

-- torch.name(r, ...) fills r; torch.name(...) a new tensor of the default type.
local function defaultTypeFunction(name)
   torch[name] = function(r, ...)
      if isTensor(r) then return M[name](r, ...) end
      return M[name](newTensor(defaultTypeId()), r, ...)
   end
end

-- x:zeros(sizes) / x:ones(sizes) resize x and fill it.
for name, value in pairs {zeros = 0, ones = 1} do
   M[name] = function(self, ...)
      M.resize(self, ...)
      return M.fill(self, value)
   end
   defaultTypeFunction(name)
end

-- torch.zero(x), torch.fill(x, v): the function forms of the methods.
function torch.zero(t) return M.zero(t) end
function torch.fill(t, v) return M.fill(t, v) end

-- x:reshape(sizes) and torch.reshape(x, sizes): a new contiguous copy with
-- the given sizes; r:reshape(x, sizes) / torch.reshape(r, x, sizes) fill r.
function M.reshape(self, a, ...)
   local r, src = newTensor(self._c.type), self
   if isTensor(a) then
      r, src = self, a
      M.resize(r, ...)
   else
      M.resize(r, a, ...)
   end
   if M.nElement(r) ~= M.nElement(src) then
      error(string.format('reshape: size mismatch (%d elements reshaped to %d)', M.nElement(src), M.nElement(r)), 2)
   end
   return M.copy(r, src)
end
torch.reshape = M.reshape

-- Sequences: r:linspace(a, b [, n = 100]); torch.linspace([r,] a, b [, n]).
local function sequence(name, cfn, default)
   M[name] = function(self, a, b, c)
      if type(a) ~= 'number' or type(b) ~= 'number' or (c ~= nil and type(c) ~= 'number') then
         badArgs(name, '[result] number number [number]', self, a, b, c)
      end
      check(cfn(self._c, a, b, c or default))
      return self
   end
   defaultTypeFunction(name)
end
-- eye(n [, m = n]): the identity matrix; r:eye(n [, m]) resizes r.
function M.eye(self, n, m)
   if type(n) ~= 'number' or (m ~= nil and type(m) ~= 'number') then
      badArgs('eye', '[result] n [m]', self, n, m)
   end
   check(C.lt_math_eye(self._c, n, m or 0))
   return self
end
defaultTypeFunction('eye')

sequence('linspace', C.lt_math_linspace, 100)
sequence('logspace', C.lt_math_logspace, 100)
sequence('range', C.lt_math_range, 1)

torch._installTensorMethods()
