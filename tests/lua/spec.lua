-- Assertion helpers for the Lua spec files (tests/lua/*_spec.lua).
local spec = {}

local function fmt(v)
   if torch.isTensor(v) then return tostring(v) end
   return tostring(v)
end

function spec.eq(a, b, msg)
   if a ~= b then error(string.format('%sexpected %s, got %s', msg and (msg .. ': ') or '', fmt(b), fmt(a)), 2) end
end

function spec.near(a, b, tol, msg)
   tol = tol or 1e-12
   if math.abs(a - b) > tol * math.max(1, math.abs(b)) then
      error(string.format('%sexpected %.17g, got %.17g (tol %g)', msg and (msg .. ': ') or '', b, a, tol), 2)
   end
end

-- Tensors equal in size and (within tol) in every element.
function spec.tensorEq(a, b, tol, msg)
   local pre = msg and (msg .. ': ') or ''
   if not torch.isTensor(a) or not torch.isTensor(b) then error(pre .. 'tensors expected', 2) end
   if not a:isSameSizeAs(b) then
      error(string.format('%ssizes differ: %s vs %s', pre, table.concat(a:size():totable(), 'x'),
                          table.concat(b:size():totable(), 'x')), 2)
   end
   local x, y = a:double():contiguous(), b:double():contiguous()
   local dx, dy = x:data(), y:data()
   for i = 0, x:nElement() - 1 do
      if math.abs(dx[i] - dy[i]) > (tol or 0) then
         error(string.format('%selement %d differs: %.17g vs %.17g', pre, i + 1, dx[i], dy[i]), 2)
      end
   end
end

-- fn() must raise an error whose message matches `pattern` (plain find).
function spec.raises(fn, pattern, msg)
   local ok, err = pcall(fn)
   if ok then error((msg and (msg .. ': ') or '') .. 'expected an error' .. (pattern and (' matching "' .. pattern .. '"') or ''), 2) end
   if pattern and not tostring(err):find(pattern, 1, true) then
      error(string.format('%serror "%s" does not contain "%s"', msg and (msg .. ': ') or '', tostring(err), pattern), 2)
   end
   return err
end

return spec
