-- tostring() of tensors and storages in Torch7's format: one number format
-- (and optional common scale factor) for the whole tensor chosen from its
-- largest and smallest magnitudes, matrices split into column blocks that
-- fit 80 characters, >2-D tensors printed as (i,j,.,.) matrix slices, and a
-- "[torch.FloatTensor of size 2x3]" footer line. Strings end with "\n" as
-- Torch7's did.
local torch = ...
local ffi = require 'ffi'
local C = torch.C

local floor, log10, abs = math.floor, math.log10, math.abs
local fmt = string.format

-- Elements of t in row-major order as Lua numbers: a 0-based table and its length (ndim >= 1).
local function asNumbers(t)
   local d = torch.DoubleTensor()
   torch._check(C.lt_tensor_resize(d._c, t._c.ndim, t._c.size), 3)
   torch._check(C.lt_tensor_copy(d._c, t._c), 3)
   local data, n, numberAt = {}, d:nElement(), torch._types.Double.numberAt
   local p = d:data()
   for i = 0, n - 1 do data[i] = numberAt(p, i) end
   return data, n
end

-- Digits before the point of |x| (0 for x == 0 counts as 1), like Torch7.
local function magnitude(x)
   if x ~= 0 then return floor(log10(x)) + 1 end
   return 1
end

-- The format for elements data[0 .. n-1]: returns format, scale (nil when
-- 1) and the field width. NaN anywhere makes the width NaN and the format
-- plain "%f", as in Torch7.
local function numberFormat(data, n)
   if n == 0 then return '', nil, 0 end
   local integral, nan = true, false
   local lo, hi = math.huge, 0
   for i = 0, n - 1 do
      local x = data[i]
      if integral and x ~= math.ceil(x) then integral = false end
      local a = abs(x)
      if a ~= a then nan = true end
      if a < lo then lo = a end
      if a > hi then hi = a end
   end
   if nan then lo, hi = 0 / 0, 0 / 0 end -- TH's min/max propagate NaN
   local expMin, expMax = magnitude(lo), magnitude(hi)
   local format, scale, width
   if integral then
      if expMax > 9 then
         format, width = '%11.4e', 11
      else
         width = expMax + 1
         format = '%' .. width .. 'd'
      end
   elseif expMax - expMin > 4 then
      width = 11
      if abs(expMax) > 99 or abs(expMin) > 99 then width = 12 end
      format = '%' .. width .. '.4e'
   elseif expMax > 5 or expMax < 0 then
      width = 7
      format = '%7.4f'
      scale = 10 ^ (expMax - 1)
   else
      width = expMax == 0 and 7 or expMax + 6
      format = '%' .. width .. '.4f'
   end
   if scale == 1 then scale = nil end
   if width ~= width then format = '%f' end -- NaN width (Torch7: a '%nan...' format)
   return format, scale, width
end

-- Lines of a vector (with the scale line first when there is one), no
-- trailing newline.
local function vectorLines(data, n)
   local format, scale = numberFormat(data, n)
   local out = {}
   if scale then
      out[1] = fmt('%g', scale) .. ' *'
      for i = 0, n - 1 do out[#out + 1] = fmt(format, data[i] / scale) end
   else
      for i = 0, n - 1 do out[#out + 1] = fmt(format, data[i]) end
   end
   return table.concat(out, '\n')
end

-- The body of a 1-D tensor's string; Storage's tostring uses it.
function torch._formatVector(t)
   local data, n = asNumbers(t)
   return vectorLines(data, n)
end

-- A rows x cols matrix at data[base + r*cols + c], with format/scale/width
-- chosen for the whole tensor; every line is prefixed by `indent`. Columns
-- that do not fit in 80 characters go to further "Columns a to b" blocks.
local function formatMatrix(out, data, base, rows, cols, format, scale, width, indent)
   scale = scale or 1
   local perLine = floor((80 - #indent) / (width + 1))
   local rowIndent = scale ~= 1 and indent .. ' ' or indent
   out[#out + 1] = indent
   local first = 1
   while first <= cols do
      local last = first + perLine - 1 <= cols and first + perLine - 1 or cols
      if perLine < cols then
         if first ~= 1 then out[#out + 1] = '\n' end
         out[#out + 1] = 'Columns ' .. first .. ' to ' .. last .. '\n' .. indent
      end
      if scale ~= 1 then out[#out + 1] = fmt('%g', scale) .. ' *\n ' .. indent end
      for r = 0, rows - 1 do
         local line = {}
         local p = base + r * cols
         for c = first, last do line[#line + 1] = fmt(format, data[p + c - 1] / scale) end
         out[#out + 1] = table.concat(line, ' ') .. '\n'
         if r ~= rows - 1 then out[#out + 1] = rowIndent end
      end
      first = last + 1
   end
end

-- (i,j,.,.) = matrix slices of a >2-D tensor; as in Torch7 the first index
-- varies fastest.
local function formatSlices(out, data, size, nd, format, scale, width)
   local rows, cols = size[nd - 1], size[nd]
   local counter = {}
   for i = 1, nd - 2 do counter[i] = 1 end
   repeat
      if #out > 0 then out[#out + 1] = '\n' end
      local base, label = 0, {}
      for i = 1, nd - 2 do
         base = base * size[i] + (counter[i] - 1)
         label[i] = counter[i] .. ','
      end
      out[#out + 1] = '(' .. table.concat(label) .. '.,.) = \n'
      formatMatrix(out, data, base * rows * cols, rows, cols, format, scale, width, ' ')
      local i = 1
      while i <= nd - 2 do
         counter[i] = counter[i] + 1
         if counter[i] <= size[i] then break end
         counter[i] = 1
         i = i + 1
      end
   until i > nd - 2
end

function torch._tensorToString(t)
   local c = t._c
   local name = torch.typename(t)
   local nd = c.ndim
   if nd == 0 then return '[' .. name .. ' with no dimension]\n' end
   local data, n = asNumbers(t)
   local size = {}
   for i = 1, nd do size[i] = tonumber(c.size[i - 1]) end
   local out = {}
   if nd == 1 then
      out[1] = vectorLines(data, n) .. '\n'
   else
      local format, scale, width = numberFormat(data, n)
      if nd == 2 then
         formatMatrix(out, data, 0, size[1], size[2], format, scale, width, '')
      else
         formatSlices(out, data, size, nd, format, scale, width)
      end
   end
   out[#out + 1] = '[' .. name .. ' of size ' .. table.concat(size, 'x') .. ']\n'
   return table.concat(out)
end

-- Torch7 also exposed the formatter as a method, t:__tostring__().
torch._tensorMethods.__tostring__ = torch._tensorToString
torch._installTensorMethods()
