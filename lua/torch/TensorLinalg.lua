-- BLAS-level products: dot, addmm, addmv, addr, baddbmm, addbmm, mm, mv, bmm, ger,
-- and the tensor * tensor operator, with Torch7's argument forms; LAPACK
-- (gesv, gels, trtrs, symeig, eig, svd, inverse, potrf, potrs, potri, pstrf,
-- qr, geqrf, orgqr, ormqr) at the end.
--
-- The add* family shares one signature, [res,] [v1,] M, [v2,] a, b, meaning
-- res = v1 * M + v2 * (a . b). As a method the result is self and M may be
-- omitted (then it is self): M:addmm(a, b) accumulates in place,
-- res:addmm(v1, M, v2, a, b) writes res. A lone number in the method form
-- is v2 (Torch7's cwrap resolved it so: gradWeight:addmm(scale, x, y)).
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods
local isTensor = torch.isTensor

-- Argument forms: each slot is {name, kind ('T' tensor, 'n' number), optional}.
-- For a given sequence of argument kinds the form with the later optional
-- slots present wins, which reproduces cwrap's choice in the ambiguous case.
local function kindCode(...)
   local code = 0
   for i = 1, select('#', ...) do
      local a = select(i, ...)
      local k = isTensor(a) and 1 or (type(a) == 'number' and 2 or 3)
      code = code * 4 + k
   end
   return code
end

-- forms[kind code] = argument position of each slot (0 when absent).
local function buildForms(slots)
   local opt = {}
   for i, s in ipairs(slots) do if s[3] then opt[#opt + 1] = i end end
   local forms = {}
   for mask = 0, 2 ^ #opt - 1 do
      local present, code, pos, n = {}, 0, {}, 0
      for b, i in ipairs(opt) do present[i] = math.floor(mask / 2 ^ (b - 1)) % 2 == 1 end
      for i, s in ipairs(slots) do
         pos[i] = 0
         if not s[3] or present[i] then
            code = code * 4 + (s[2] == 'T' and 1 or 2)
            n = n + 1
            pos[i] = n
         end
      end
      forms[code] = pos   -- ascending masks: the later optional slots win
   end
   return forms
end

local funcForms = buildForms {{'r', 'T', true}, {'v1', 'n', true}, {'M', 'T'}, {'v2', 'n', true}, {'a', 'T'},
                              {'b', 'T'}}
local methodForms = buildForms {{'v1', 'n', true}, {'M', 'T', true}, {'v2', 'n', true}, {'a', 'T'}, {'b', 'T'}}

local function at(p, ...)
   if p == 0 then return nil end
   return (select(p, ...))
end

-- The slots of a form, in order (no table per call: these run per layer per batch).
local function parseForm(forms, fname, usage, ...)
   local pos = forms[kindCode(...)]
   if not pos then error(string.format('%s: invalid arguments (expected %s)', fname, usage), 3) end
   if #pos == 6 then
      return at(pos[1], ...), at(pos[2], ...), at(pos[3], ...), at(pos[4], ...), at(pos[5], ...), at(pos[6], ...)
   end
   return nil, at(pos[1], ...), at(pos[2], ...), at(pos[3], ...), at(pos[4], ...), at(pos[5], ...)
end

local function sameType(fname, r, ...)
   local id = r._c.type
   for i = 1, select('#', ...) do
      local t = select(i, ...)
      if t and t._c.type ~= id then
         error(string.format('%s: expected all tensors to be %s, got a %s', fname, torch.typename(r),
                             torch.typename(t)), 3)
      end
   end
end

-- The add* family: cfn(r, beta, t, alpha, a, b).
-- The functional forms call their result's method (so that cutorch's device versions take GPU tensors; see
-- torch._throughMethods in TensorMath.lua).

local function addFamily(name, cfn, shape)
   local usage = '[res,] [v1,] ' .. shape
   local musage = '[v1,] [M,] [v2,] ' .. shape:gsub('^%S+ ', '')
   torch[name] = function(...)
      local r, v1, t, v2, a, b = parseForm(funcForms, name, usage, ...)
      r = r or torch._newTensor(t._c.type)
      return r[name](r, v1 or 1, t, v2 or 1, a, b)
   end
   torch._throughMethods[name] = true
   M[name] = function(self, ...)
      local _, v1, t, v2, a, b = parseForm(methodForms, name, musage, ...)
      t = t or self
      sameType(name, self, t, a, b)
      check(cfn(self._c, v1 or 1, t._c, v2 or 1, a._c, b._c), 2)
      return self
   end
end

addFamily('addmm', C.lt_addmm, 'M, [v2,] mat1, mat2')
addFamily('addmv', C.lt_addmv, 'vec1, [v2,] mat, vec2')
addFamily('addr', C.lt_addr, 'M, [v2,] vec1, vec2')
addFamily('baddbmm', C.lt_baddbmm, 'M, [v2,] batch1, batch2')
addFamily('addbmm', C.lt_addbmm, 'M, [v2,] batch1, batch2')

-- Plain products: torch.mm([res,] a, b), res:mm(a, b); the result is
-- overwritten (TH's addmm with beta = 0 on a resized result).
local function productFamily(name, cfn, what)
   local function valid(r, a, b)
      if not (isTensor(a) and isTensor(b) and (r == nil or isTensor(r))) then
         error(string.format('%s: invalid arguments (expected [res,] %s)', name, what), 3)
      end
   end
   torch[name] = function(r, a, b)
      if b == nil then r, a, b = nil, r, a end
      valid(r, a, b)
      r = r or torch._newTensor(a._c.type)
      return r[name](r, a, b)
   end
   torch._throughMethods[name] = true
   M[name] = function(self, a, b)
      valid(self, a, b)
      sameType(name, self, a, b)
      check(cfn(self._c, 0, nil, 1, a._c, b._c), 2)
      return self
   end
end

productFamily('mm', C.lt_addmm, 'mat1, mat2')
productFamily('mv', C.lt_addmv, 'mat, vec')
productFamily('bmm', C.lt_baddbmm, 'batch1, batch2')
productFamily('ger', C.lt_addr, 'vec1, vec2')

local doubleOut = ffi.typeof('double[1]')   -- a fresh result buffer per call (TensorMath.lua's reduceAll)

function M.dot(self, other)
   if not isTensor(other) then error('dot: tensor expected, got ' .. torch.type(other), 2) end
   local out = doubleOut()
   check(C.lt_dot(self._c, other._c, out), 2)
   return out[0]
end

function torch.dot(a, b)
   if not (isTensor(a) and isTensor(b)) then error('dot: two tensors expected', 2) end
   return M.dot(a, b)
end

-- Torch7's tensor * tensor: dot for two vectors, mv, mm; other operand kinds
-- go to the elementwise operator installed by TensorMath.
local function matmul(a, b)
   local da, db = a._c.ndim, b._c.ndim
   if da == 1 and db == 1 then return M.dot(a, b) end
   if da == 2 and db == 1 then return torch.mv(a, b) end
   if da == 2 and db == 2 then return torch.mm(a, b) end
   error(string.format('multiplication between %dD and %dD tensors not yet supported', da, db), 3)
end
torch._matmul = matmul

local ops = torch._tensorOps
local scalarMul = ops.__mul
ops.__mul = function(a, b)
   if isTensor(a) and isTensor(b) then return matmul(a, b) end
   if not scalarMul then error('tensor operator __mul is not available', 2) end
   return scalarMul(a, b)
end

-- LAPACK: torch.f([results...,] inputs..., [options...]), Torch7's forms.
-- The results are given all together or not at all (then new tensors of the
-- first input's type are returned); the options are one-letter strings (and
-- pstrf's tolerance, a number), each optional, matched in order by type as
-- cwrap did. All results are returned, in order.
local function lapackFunction(name, cfn, results, ninputs, options, usage)
   local nres = #results
   local defaults, kinds = {}, {}
   for i, o in ipairs(options) do defaults[i], kinds[i] = o, type(o) end
   local function fail(level, why)
      error(string.format('%s: %s (expected %s)', name, why, usage), level + 1)
   end
   torch[name] = function(...)
      local n = select('#', ...)
      local args = {...}
      local lead = 0
      while lead < n and isTensor(args[lead + 1]) do lead = lead + 1 end
      local given
      if lead == nres + ninputs then given = true
      elseif lead == ninputs then given = false
      else fail(2, string.format('invalid arguments: %d tensors', lead)) end
      local inputs = {}
      for i = 1, ninputs do inputs[i] = args[(given and nres or 0) + i] end
      local out = {}
      for i, kind in ipairs(results) do
         if given then out[i] = args[i]
         elseif kind == 'I' then out[i] = torch.IntTensor()
         else out[i] = torch._newTensor(inputs[1]._c.type) end
      end
      -- options, in order, each taken when the next argument has its type
      local opts, pos = {}, lead + 1
      for i = 1, #defaults do
         local v = args[pos]
         if v ~= nil and type(v) == kinds[i] then
            opts[i] = v
            pos = pos + 1
         else
            opts[i] = defaults[i]
            if v == nil and pos <= n then pos = pos + 1 end   -- an explicit nil keeps the default
         end
      end
      if pos <= n then fail(2, 'unexpected argument ' .. tostring(args[pos])) end
      local c = {}
      for i = 1, nres do c[i] = out[i]._c end
      for i = 1, ninputs do c[nres + i] = inputs[i]._c end
      for i = 1, #opts do c[nres + ninputs + i] = opts[i] end
      check(cfn(unpack(c, 1, nres + ninputs + #opts)), 2)
      return unpack(out, 1, nres)
   end
end

lapackFunction('gesv', C.lt_gesv, {'T', 'T'}, 2, {}, '[resb, resa,] b, a')
lapackFunction('gels', C.lt_gels, {'T', 'T'}, 2, {}, '[resb, resa,] b, a')
lapackFunction('trtrs', C.lt_trtrs, {'T', 'T'}, 2, {'U', 'N', 'N'},
               "[resb, resa,] b, a, ['U'|'L'], ['N'|'T'], ['N'|'U']")
lapackFunction('symeig', C.lt_syev, {'T', 'T'}, 1, {'N', 'U'}, "[rese, resv,] a, ['N'|'V'], ['U'|'L']")
lapackFunction('eig', C.lt_geev, {'T', 'T'}, 1, {'N'}, "[rese, resv,] a, ['N'|'V']")
lapackFunction('svd', C.lt_gesvd, {'T', 'T', 'T'}, 1, {'S'}, "[resu, ress, resv,] a, ['S'|'A']")
lapackFunction('inverse', C.lt_getri, {'T'}, 1, {}, '[res,] a')
lapackFunction('potrf', C.lt_potrf, {'T'}, 1, {'U'}, "[res,] a, ['U'|'L']")
lapackFunction('potrs', C.lt_potrs, {'T'}, 2, {'U'}, "[res,] b, chol, ['U'|'L']")
lapackFunction('potri', C.lt_potri, {'T'}, 1, {'U'}, "[res,] chol, ['U'|'L']")
lapackFunction('pstrf', C.lt_pstrf, {'T', 'I'}, 1, {'U', -1}, "[res, piv (IntTensor),] a, ['U'|'L'], [tol]")
lapackFunction('qr', C.lt_qr, {'T', 'T'}, 1, {}, '[q, r,] a')
lapackFunction('geqrf', C.lt_geqrf, {'T', 'T'}, 1, {}, '[res, tau,] a')
lapackFunction('orgqr', C.lt_orgqr, {'T'}, 2, {}, '[res,] a, tau')
lapackFunction('ormqr', C.lt_ormqr, {'T'}, 3, {'L', 'N'}, "[res,] a, tau, c, ['L'|'R'], ['N'|'T']")

torch._installTensorMethods()
