-- Sorting, selection and scans along a dimension: sort, topk, kthvalue,
-- median, mode, cumsum, cumprod, with Torch7's forms:
--   torch.sort([resval, resind,] x, [dim], [descending])   (sort(x, true): last dim, descending)
--   torch.topk([resval, resind,] x, [k=1], [dim], [largest=false], [sorted=false])
--   torch.kthvalue([resval, resind,] x, k, [dim])
--   torch.median([resval, resind,] x, [dim]), torch.mode([resval, resind,] x, [dim])
--   torch.cumsum([res,] x, [dim=1]), torch.cumprod([res,] x, [dim=1])
-- dim defaults to the last dimension for the sort family. Indices are
-- LongTensors of 1-based positions. Ties keep their original order (in both
-- directions) and NaN sorts above every number; see native/include/lt_sort.h.
local torch = ...
local C = torch.C
local check = torch._check
local M = torch._tensorMethods
local isTensor = torch.isTensor
local LONG = C.LT_LONG

-- [resval, resind,] x, rest... -> resval, resind, x, rest...
local function resultPair(fname, a, b, c, ...)
   if isTensor(a) and isTensor(b) and isTensor(c) then return a, b, c, ... end
   if isTensor(a) and isTensor(b) then
      -- one result given: a values tensor (x's type) or an index tensor
      if a._c.type == b._c.type then return a, nil, b, c, ... end
      if a._c.type == LONG or a._c.type == C.LT_CUDA_LONG then return nil, a, b, c, ... end
      error(fname .. ': invalid arguments (expected [resval, resind,] tensor, ...)', 3)
   end
   if not isTensor(a) then error(fname .. ': invalid arguments (a tensor expected)', 3) end
   return nil, nil, a, b, c, ...
end

local function dimArg(fname, x, dim)
   if dim == nil then return x._c.ndim - 1 end
   if type(dim) ~= 'number' then error(fname .. ': dimension must be a number', 3) end
   if x._c.ndim == 0 then return 0 end
   return torch._checkdim(x, dim, fname, 2)
end

local function boolArg(fname, v, what)
   if v == nil then return false end
   if type(v) ~= 'boolean' then error(string.format('%s: %s must be a boolean', fname, what), 3) end
   return v
end

local function results(x, rv, ri)
   return rv or torch._newTensor(x._c.type), ri or torch._newTensor(torch._indexTypeFor(x))
end

function torch.sort(...)
   local rv, ri, x, dim, desc = resultPair('sort', ...)
   if type(dim) == 'boolean' and desc == nil then dim, desc = nil, dim end  -- sort(x, true)
   local d = dimArg('sort', x, dim)
   desc = boolArg('sort', desc, 'descending')
   rv, ri = results(x, rv, ri)
   check(C.lt_sort(rv._c, ri._c, x._c, d, desc and 1 or 0), 2)
   return rv, ri
end

function torch.topk(...)
   local rv, ri, x, k, dim, largest, sorted = resultPair('topk', ...)
   k = k or 1
   if type(k) ~= 'number' then error('topk: k must be a number', 2) end
   local d = dimArg('topk', x, dim)
   largest = boolArg('topk', largest, 'dir')
   sorted = boolArg('topk', sorted, 'sort')
   rv, ri = results(x, rv, ri)
   check(C.lt_topk(rv._c, ri._c, x._c, k, d, largest and 1 or 0, sorted and 1 or 0), 2)
   return rv, ri
end

function torch.kthvalue(...)
   local rv, ri, x, k, dim = resultPair('kthvalue', ...)
   if type(k) ~= 'number' then error('kthvalue: k (a number) expected', 2) end
   local d = dimArg('kthvalue', x, dim)
   rv, ri = results(x, rv, ri)
   check(C.lt_kthvalue(rv._c, ri._c, x._c, k, d), 2)
   return rv, ri
end

-- Median: the ((n + 1) / 2)-th smallest along dim (TH's lower median), the
-- last dimension by default, as values and indices with dim kept (size 1),
-- as Torch7's torch.median(x) did.
function torch.median(...)
   local rv, ri, x, dim = resultPair('median', ...)
   local d = dimArg('median', x, dim)
   if x._c.ndim == 0 then error('median: empty tensor', 2) end
   rv, ri = results(x, rv, ri)
   check(C.lt_kthvalue(rv._c, ri._c, x._c, math.floor((tonumber(x._c.size[d]) + 1) / 2), d), 2)
   return rv, ri
end

-- Mode: the most frequent value along dim (last by default) and the
-- position of its last occurrence; the smallest of equally frequent values.
function torch.mode(...)
   local rv, ri, x, dim = resultPair('mode', ...)
   local d = dimArg('mode', x, dim)
   if x._c.ndim == 0 then error('mode: empty tensor', 2) end
   rv, ri = results(x, rv, ri)
   check(C.lt_mode(rv._c, ri._c, x._c, d), 2)
   return rv, ri
end

-- torch.sort(a, ...) is a:sort(...) (a the first tensor: the input, or the values result), so that cutorch's
-- device versions of the methods also take the functional forms (torch._throughMethods).
for _, name in ipairs {'sort', 'topk', 'kthvalue', 'median', 'mode'} do
   local f = torch[name]
   M[name] = function(self, ...) return f(self, ...) end
   torch._throughMethod(name, f)
end

-- Scans: torch.cumsum([res,] x, [dim]); x:cumsum([dim]) returns a new
-- tensor, res:cumsum(x, [dim]) writes res.
local function scan(name, cfn)
   torch[name] = function(a, b, c)
      local r, x, dim
      if isTensor(b) then r, x, dim = a, b, c else r, x, dim = nil, a, b end
      if not isTensor(x) then error(name .. ': invalid arguments (expected [res,] tensor, [dim])', 2) end
      dim = dim or 1
      local d = x._c.ndim == 0 and 0 or torch._checkdim(x, dim, name, 2)
      r = r or torch._newTensor(x._c.type)
      check(cfn(r._c, x._c, d), 2)
      return r
   end
   local f = torch[name]
   M[name] = function(self, ...) return f(self, ...) end
   torch._throughMethod(name, f)   -- the functional form calls its first tensor's method
end

scan('cumsum', C.lt_cumsum)
scan('cumprod', C.lt_cumprod)

torch._installTensorMethods()
