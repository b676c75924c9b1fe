-- Random numbers: torch.Generator, the default generator of this LuaJIT
-- state, torch.* draws and the tensor fills, with Torch7's forms. Every
-- function takes an optional torch.Generator as first argument (after the
-- tensor, for tensor methods: t:uniform([gen,] a, b)). The default
-- generator belongs to this Lua state: states running in other threads have
-- their own, so seeding one never affects another.
local torch = ...
local ffi = require 'ffi'
local C = torch.C
local check = torch._check
local M = torch._tensorMethods
local isTensor = torch.isTensor

ffi.cdef 'typedef struct THGenerator { lt_generator _c; } THGenerator;'

local Gen = {}   -- class table of torch.Generator
local GenCT = ffi.metatype('THGenerator', {
   -- a function, not the table: a missing key must read as nil (a table
   -- __index on a struct raises), e.g. for the serializer's method probes
   __index = function(_, k) return Gen[k] end,
   __tostring = function() return 'torch.Generator' end,
})
torch._registerCType(GenCT, 'torch.Generator')

local function newGenerator()
   local g = GenCT()
   C.lt_gen_seed(g._c)
   return g
end
torch._newclass('torch.Generator', Gen, newGenerator)

local function isGenerator(x) return type(x) == 'cdata' and ffi.istype(GenCT, x) end
torch.isGenerator = isGenerator

-- Serialization (torch.save, torch.serialize): the generator's state bytes,
-- as Torch7 wrote its THGenerator struct (same layout on 64-bit Linux).
local GEN_BYTES = ffi.sizeof('lt_generator')

function Gen.write(self, file)
   local bytes = torch.ByteStorage(GEN_BYTES)
   ffi.copy(bytes:data(), self._c, GEN_BYTES)
   file:writeByte(bytes)
end

function Gen.read(self, file)
   local bytes = torch.ByteStorage(GEN_BYTES)
   if file:readByte(bytes) ~= GEN_BYTES then error('torch.Generator: the file ends inside the generator state', 2) end
   local tmp = ffi.new('lt_generator')
   ffi.copy(tmp, bytes:data(), GEN_BYTES)
   if C.lt_gen_is_valid(tmp) == 0 then error('torch.Generator: the file holds an invalid generator state', 2) end
   ffi.copy(self._c, tmp, GEN_BYTES)
end

-- an unseeded generator for the reader to fill
Gen.__factory = function()
   local g = GenCT()
   C.lt_gen_init(g._c)
   return g
end

local default = newGenerator()
torch._defaultGenerator = default

-- gen, rest... from an argument list that may start with a generator.
local function genArgs(a, ...)
   if isGenerator(a) then return a._c, ... end
   return default._c, a, ...
end

local function toSeed(s)
   if type(s) ~= 'number' then error('manualSeed: seed (a number) expected', 3) end
   s = s < 0 and math.ceil(s) or math.floor(s)
   if s < 0 then return ffi.cast('uint64_t', ffi.cast('int64_t', s)) end
   return ffi.cast('uint64_t', s)
end

function torch.manualSeed(...)
   local g, s = genArgs(...)
   C.lt_gen_manual_seed(g, toSeed(s))
end

function torch.seed(...)
   local g = genArgs(...)
   return tonumber(C.lt_gen_seed(g))
end

function torch.initialSeed(...)
   local g = genArgs(...)
   return tonumber(C.lt_gen_initial_seed(g))
end

local STATE_BYTES = ffi.sizeof('lt_generator')

function torch.getRNGState(...)
   local g = genArgs(...)
   local s = torch.ByteTensor(STATE_BYTES)
   ffi.copy(s:data(), g, STATE_BYTES)
   return s
end

function torch.setRNGState(...)
   local g, s = genArgs(...)
   if not (isTensor(s) and torch.typename(s) == 'torch.ByteTensor') then
      error('setRNGState: a ByteTensor state expected', 2)
   end
   if s:nElement() ~= STATE_BYTES then
      error(string.format('setRNGState: RNG state is wrong size (%d bytes, expected %d)', s:nElement(), STATE_BYTES), 2)
   end
   local tmp = ffi.new('lt_generator')
   ffi.copy(tmp, s:contiguous():data(), STATE_BYTES)
   if C.lt_gen_is_valid(tmp) == 0 then error('setRNGState: Invalid RNG state', 2) end
   ffi.copy(g, tmp, STATE_BYTES)
   return s
end

-- ---------------------------------------------------------------- numbers

-- a fresh result buffer per draw: with one shared buffer, LuaJIT's trace optimizer can let an earlier
-- read see a later call's value (TensorMath.lua's reduceAll)
local doubleOut = ffi.typeof('double[1]')

local function num(v, default, fname, what)
   if v == nil then
      if default == nil then error(string.format('%s: %s (a number) expected', fname, what), 3) end
      return default
   end
   if type(v) ~= 'number' then error(string.format('%s: %s must be a number', fname, what), 3) end
   return v
end

-- Each distribution: its parameters' names and defaults, the scalar draw
-- and the tensor fill. A tensor first argument makes torch.<name> the fill: the tensor's own method, so that
-- cutorch's device versions take GPU tensors (torch._throughMethods).
local dists = {
   uniform = {{'a', 0}, {'b', 1}, function(g, a, b) return C.lt_gen_uniform(g, a, b) end, C.lt_tensor_uniform},
   normal = {{'mean', 0}, {'stdv', 1}, C.lt_gen_normal, C.lt_tensor_normal},
   exponential = {{'lambda'}, nil, C.lt_gen_exponential, C.lt_tensor_exponential},
   cauchy = {{'median', 0}, {'sigma', 1}, function(g, a, b) return C.lt_gen_cauchy(g, a, b) end, C.lt_tensor_cauchy},
   logNormal = {{'mean', 1}, {'stdv', 2}, C.lt_gen_log_normal, C.lt_tensor_log_normal},
   geometric = {{'p'}, nil, C.lt_gen_geometric, C.lt_tensor_geometric},
   bernoulli = {{'p', 0.5}, nil, C.lt_gen_bernoulli, C.lt_tensor_bernoulli},
}

for name, d in pairs(dists) do
   local p1, p2, draw, fill = d[1], d[2], d[3], d[4]
   local direct = name == 'uniform' or name == 'cauchy'   -- draws that cannot fail return the number

   local function method(self, ...)
      local g, a, b = genArgs(...)
      if name == 'bernoulli' and isTensor(a) then
         check(C.lt_tensor_bernoulli_tensor(self._c, g, a._c), 2)
         return self
      end
      a = num(a, p1[2], name, p1[1])
      if p2 then
         b = num(b, p2[2], name, p2[1])
         check(fill(self._c, g, a, b), 2)
      else
         check(fill(self._c, g, a), 2)
      end
      return self
   end
   M[name] = method
   torch._throughMethods[name] = true

   torch[name] = function(...)
      local first = ...
      if isTensor(first) then return first[name](...) end
      local g, a, b = genArgs(...)
      a = num(a, p1[2], name, p1[1])
      if p2 then b = num(b, p2[2], name, p2[1]) end
      if direct then return draw(g, a, b) end
      local out = doubleOut()
      if p2 then check(draw(g, a, b, out), 2) else check(draw(g, a, out), 2) end
      return out[0]
   end
end

-- random(): TH's per-type range; random(b): [1, b]; random(a, b): [a, b].
local function rangeArgs(a, b)
   if a == nil then return nil end
   if type(a) ~= 'number' or (b ~= nil and type(b) ~= 'number') then error('random: numbers expected', 3) end
   if b == nil then
      if a <= 0 then error('random: upper bound must be strictly positive', 3) end
      return 1, a
   end
   if b < a then error('random: upper bound must be larger than lower bound', 3) end
   return a, b
end

torch._throughMethods.random = true
function M.random(self, ...)
   local g, a, b = genArgs(...)
   a, b = rangeArgs(a, b)
   if a == nil then check(C.lt_tensor_random(self._c, g), 2)
   else check(C.lt_tensor_random_range(self._c, g, a, b), 2) end
   return self
end

function torch.random(...)
   local first = ...
   if isTensor(first) then return first.random(...) end
   local g, a, b = genArgs(...)
   a, b = rangeArgs(a, b)
   if a == nil then return C.lt_gen_random(g) end
   local out = doubleOut()
   check(C.lt_gen_random_range(g, a, b, out), 2)
   return out[0]
end

-- ---------------------------------------------------------------- constructors

-- [res,] [gen,] rest...
local function resGenArgs(a, ...)
   if isTensor(a) then return a, genArgs(...) end
   return nil, genArgs(a, ...)
end

local function sizedRandom(fname, fillfn)
   torch[fname] = function(...)
      local args = {...}
      local i = 1
      local r
      if isTensor(args[1]) then r = args[1]; i = 2 end
      local g = default._c
      if isGenerator(args[i]) then g = args[i]._c; i = i + 1 end
      r = r or torch.Tensor()
      r:resize(unpack(args, i, select('#', ...)))
      fillfn(r, g)
      return r
   end
end

sizedRandom('rand', function(r, g) check(C.lt_tensor_uniform(r._c, g, 0, 1), 3) end)
sizedRandom('randn', function(r, g) check(C.lt_tensor_normal(r._c, g, 0, 1), 3) end)
-- x:rand(sizes) and x:randn(sizes): the tensor is the result, as Torch7's method forms (randperm's below)
M.rand = function(self, ...) return torch.rand(self, ...) end
M.randn = function(self, ...) return torch.randn(self, ...) end

function torch.randperm(...)
   local r, g, n = resGenArgs(...)
   if type(n) ~= 'number' then error('randperm: n (a number) expected', 2) end
   r = r or torch.Tensor()
   check(C.lt_tensor_randperm(r._c, g, n), 2)
   return r
end
M.randperm = function(self, ...) return torch.randperm(self, ...) end   -- x:randperm(n), as Torch7's method form

function torch.multinomial(...)
   local r, g, prob, n, replacement = resGenArgs(...)
   if r and not isTensor(prob) then r, prob, n, replacement = nil, r, prob, n end
   if not isTensor(prob) or type(n) ~= 'number' then
      error('multinomial: invalid arguments (expected [res,] [gen,] prob, n, [replacement])', 2)
   end
   if replacement ~= nil and type(replacement) ~= 'boolean' then
      error('multinomial: replacement must be a boolean', 2)
   end
   r = r or torch.LongTensor()
   check(C.lt_tensor_multinomial(r._c, g, prob._c, n, replacement and 1 or 0), 2)
   return r
end
-- the method is the function (x:multinomial(...) is torch.multinomial(x, ...)), which lets cutorch's GPU backend route
-- the functional form to its first tensor's method (torch._throughMethod)
M.multinomial = torch.multinomial

-- Walker's alias method, for many draws from one distribution:
-- state = torch.multinomialAliasSetup(probs [, state]) builds (or refills)
-- {J, q}: J a LongTensor of 1-based aliases, q the acceptance probabilities;
-- torch.multinomialAlias(output, state [, gen]) fills the LongTensor output
-- with 1-based draws and returns it.
function torch.multinomialAliasSetup(probs, state)
   if not isTensor(probs) then error('multinomialAliasSetup: a probability tensor expected', 2) end
   if state ~= nil and type(state) ~= 'table' then
      error('multinomialAliasSetup: state must be a table {J, q} from an earlier call', 2)
   end
   state = state or {}
   if not isTensor(state[1]) then state[1] = torch.LongTensor() end
   if not isTensor(state[2]) then state[2] = probs.new() end
   check(C.lt_multinomial_alias_setup(probs._c, state[1]._c, state[2]._c), 2)
   return state
end

function torch.multinomialAlias(output, state, gen)
   if not isTensor(output) or type(state) ~= 'table' or not isTensor(state[1]) or not isTensor(state[2]) then
      error('multinomialAlias: invalid arguments (expected output LongTensor, state from multinomialAliasSetup)', 2)
   end
   if gen ~= nil and not isGenerator(gen) then error('multinomialAlias: the third argument must be a torch.Generator', 2) end
   local g = gen and gen._c or default._c
   check(C.lt_multinomial_alias_draw(output._c, g, state[1]._c, state[2]._c), 2)
   return output
end

torch._installTensorMethods()
