-- image: geometric transforms (argument forms as Torch7's image; kernels in native/src/image_geom.c).
local image = image
local C = image._C
local check, fail, checkType = image._check, image._fail, image._checkType

local function isTensor(x) return torch.isTensor(x) end

-- Height and width of an H x W or C x H x W image.
local function dims(img)
   local n = img:dim()
   if n ~= 2 and n ~= 3 then return nil end
   return img:size(n - 1), img:size(n)
end

local function checkImage(img, fname, role)
   checkType(img, fname)
   if not dims(img) then
      fail(fname, 'the ' .. (role or 'input') .. ' image must be H x W or C x H x W, got ' .. img:dim() .. ' dimensions')
   end
end

-- A new image of src's type and channels with the given height and width.
local function newLike(src, h, w)
   if src:dim() == 3 then return src.new(src:size(1), h, w) end
   return src.new(h, w)
end

-- ---------------------------------------------------------------- scale

local scaleModes = {simple = 0, bilinear = 1, bicubic = 2}

-- Width and height from a size spec: N (longest side), 'WxH', '^N' (shortest side), '*S', '*N/D'.
local function sizeFromSpec(src, spec)
   local h, w = dims(src)
   local n = tonumber(spec)
   if n then return w * n / math.max(w, h), h * n / math.max(w, h) end
   spec = tostring(spec)
   local sw, sh = spec:match('^(%d+)x(%d+)$')
   if sw then return tonumber(sw), tonumber(sh) end
   local shortest = tonumber(spec:match('^%^(%d+)$'))
   if shortest then return w * shortest / math.min(w, h), h * shortest / math.min(w, h) end
   local num, den = spec:match('^%*(%d+)/(%d+)$')
   if num then return w * num / den, h * num / den end
   local factor = tonumber(spec:match('^%*(.+)$'))
   if factor then return w * factor, h * factor end
   return nil
end

function image.scale(...)
   local n, a = select('#', ...), {...}
   local dst, src, width, height, mode, spec
   if n == 4 then
      src, width, height, mode = a[1], a[2], a[3], a[4]
   elseif n == 3 and type(a[3]) == 'string' then
      if type(a[2]) == 'string' or type(a[2]) == 'number' then src, spec, mode = a[1], a[2], a[3]
      else dst, src, mode = a[1], a[2], a[3] end
   elseif n == 3 then
      src, width, height = a[1], a[2], a[3]
   elseif n == 2 then
      if type(a[2]) == 'string' or type(a[2]) == 'number' then src, spec = a[1], a[2] else dst, src = a[1], a[2] end
   else
      fail('image.scale', "usage: image.scale(src, width, height [, mode]), image.scale(src, size [, mode]) "
           .. "(size: N, 'WxH', '^N', '*S', '*N/D') or image.scale(dst, src [, mode]); mode: simple | bilinear | bicubic")
   end
   checkImage(src, 'image.scale', 'source')
   if spec ~= nil then
      width, height = sizeFromSpec(src, spec)
      if not width then fail('image.scale', 'could not read the size ' .. tostring(spec)) end
   end
   mode = mode or 'bilinear'
   local code = scaleModes[mode]
   if not code then fail('image.scale', 'mode must be one of: simple | bilinear | bicubic, got ' .. tostring(mode)) end
   if dst == nil then
      if type(width) ~= 'number' or type(height) ~= 'number' then fail('image.scale', 'width and height must be numbers') end
      dst = newLike(src, math.max(math.floor(height), 1), math.max(math.floor(width), 1))
   end
   checkImage(dst, 'image.scale', 'destination')
   check(C.lt_image_scale(dst._c, src._c, code))
   return dst
end

-- ---------------------------------------------------------------- crop and translate

local function cropAt(dst, src, x, y)
   check(C.lt_image_crop(dst._c, src._c, math.floor(x), math.floor(y)))
   return dst
end

function image.crop(...)
   local n, a = select('#', ...), {...}
   local dst, src, x1, y1, x2, y2, format, w, h
   if n == 6 then dst, src, x1, y1, x2, y2 = a[1], a[2], a[3], a[4], a[5], a[6]
   elseif n == 5 and type(a[3]) == 'string' then dst, src, format, w, h = a[1], a[2], a[3], a[4], a[5]
   elseif n == 5 then src, x1, y1, x2, y2 = a[1], a[2], a[3], a[4], a[5]
   elseif n == 4 and type(a[2]) == 'string' then src, format, w, h = a[1], a[2], a[3], a[4]
   elseif n == 4 then dst, src, x1, y1 = a[1], a[2], a[3], a[4]
   elseif n == 3 then src, x1, y1 = a[1], a[2], a[3]
   else
      fail('image.crop', "usage: image.crop([dst,] src, x1, y1 [, x2, y2]) or image.crop([dst,] src, format, w, h) "
           .. "with format 'c' | 'tl' | 'tr' | 'bl' | 'br'")
   end
   checkImage(src, 'image.crop', 'source')
   if format then
      local ih, iw = dims(src)
      local corners = {
         c = {math.floor((iw - w) / 2), math.floor((ih - h) / 2)},
         tl = {0, 0}, tr = {iw - w, 0}, bl = {0, ih - h}, br = {iw - w, ih - h},
      }
      local at = corners[format]
      if not at then fail('image.crop', "format must be 'c' | 'tl' | 'tr' | 'bl' | 'br', got " .. tostring(format)) end
      x1, y1, x2, y2 = at[1], at[2], at[1] + w, at[2] + h
   end
   if x2 == nil then
      -- the destination's size is the crop's
      if dst == nil then fail('image.crop', 'give x2 and y2, or a destination whose size is the crop') end
      return cropAt(dst, src, x1, y1)
   end
   local piece = newLike(src, math.floor(y2 - y1), math.floor(x2 - x1))
   cropAt(piece, src, x1, y1)
   if dst then return image.scale(dst, piece) end
   return piece
end

function image.translate(...)
   local n, a = select('#', ...), {...}
   local dst, src, x, y
   if n == 4 then dst, src, x, y = a[1], a[2], a[3], a[4]
   elseif n == 3 then src, x, y = a[1], a[2], a[3]
   else fail('image.translate', 'usage: image.translate([dst,] src, dx, dy)') end
   checkImage(src, 'image.translate', 'source')
   dst = dst or src.new()
   dst:resizeAs(src):zero()
   check(C.lt_image_translate(dst._c, src._c, math.floor(x), math.floor(y)))
   return dst
end

-- ---------------------------------------------------------------- rotate, polar

local rotateModes = {simple = 0, bilinear = 1}

function image.rotate(...)
   local n, a = select('#', ...), {...}
   local dst, src, theta, mode
   if n == 4 then dst, src, theta, mode = a[1], a[2], a[3], a[4]
   elseif n == 3 and type(a[2]) == 'number' then src, theta, mode = a[1], a[2], a[3]
   elseif n == 3 then dst, src, theta = a[1], a[2], a[3]
   elseif n == 2 then src, theta = a[1], a[2]
   else fail('image.rotate', 'usage: image.rotate([dst,] src, theta [, simple | bilinear])') end
   checkImage(src, 'image.rotate', 'source')
   if type(theta) ~= 'number' then fail('image.rotate', 'the angle (radians) must be a number') end
   mode = mode or 'simple'
   local code = rotateModes[mode]
   if not code then fail('image.rotate', 'mode must be one of: simple | bilinear, got ' .. tostring(mode)) end
   dst = dst or src.new()
   dst:resizeAs(src)
   check(C.lt_image_rotate(dst._c, src._c, theta, code))
   return dst
end

local function polarForm(fname, logpolar, ...)
   local n, a = select('#', ...), {...}
   local dst, src, interp, mode
   if n == 4 then dst, src, interp, mode = a[1], a[2], a[3], a[4]
   elseif n == 3 and type(a[2]) == 'string' then src, interp, mode = a[1], a[2], a[3]
   elseif n == 3 then dst, src, interp = a[1], a[2], a[3]
   elseif n == 2 and type(a[2]) == 'string' then src, interp = a[1], a[2]
   elseif n == 2 then dst, src = a[1], a[2]
   elseif n == 1 then src = a[1]
   else fail(fname, 'usage: ' .. fname .. '([dst,] src [, simple | bilinear [, valid | full]])') end
   checkImage(src, fname, 'source')
   interp, mode = interp or 'simple', mode or 'valid'
   local code = rotateModes[interp]
   if not code then fail(fname, 'interpolation must be one of: simple | bilinear, got ' .. tostring(interp)) end
   if mode ~= 'valid' and mode ~= 'full' then fail(fname, 'mode must be one of: valid | full, got ' .. tostring(mode)) end
   if dst == nil then
      local h, w = dims(src)
      local side = math.max(h, w)
      dst = newLike(src, side, side)
   end
   check(C.lt_image_polar(dst._c, src._c, code, mode == 'full' and 1 or 0, logpolar))
   return dst
end

function image.polar(...) return polarForm('image.polar', 0, ...) end
function image.logpolar(...) return polarForm('image.logpolar', 1, ...) end

-- ---------------------------------------------------------------- warp, affine transform

local warpModes = {simple = 0, bilinear = 1, bicubic = 2, lanczos = 3}
local clampModes = {clamp = 0, pad = 1}

local function runWarp(fname, dst, src, field, mode, offset, clampMode, pad)
   local code, clampCode = warpModes[mode], clampModes[clampMode]
   if not code then fail(fname, 'mode must be one of: lanczos | bicubic | bilinear | simple, got ' .. tostring(mode)) end
   if not clampCode then fail(fname, 'clamp mode must be one of: clamp | pad, got ' .. tostring(clampMode)) end
   if not isTensor(field) or field:dim() ~= 3 or field:size(1) ~= 2 then
      fail(fname, 'the flow field must be a 2 x H x W tensor (y then x)')
   end
   local flat = src:dim() == 2
   if flat then src = src:view(1, src:size(1), src:size(2)) end
   dst = dst or src.new()
   dst:resize(src:size(1), field:size(2), field:size(3))
   check(C.lt_image_warp(dst._c, src._c, field._c, code, offset and 1 or 0, clampCode, pad))
   if flat then return dst[1] end
   return dst
end

-- Trailing options after the mode: offset, clamp mode, pad value (only with 'pad').
local function warpOptions(fname, a, n, first)
   local offset, clampMode, pad = true, 'clamp', 0
   if n >= first then offset = a[first] end
   if n >= first + 1 then clampMode = a[first + 1] end
   if n >= first + 2 then
      if clampMode ~= 'pad' then fail(fname, "a pad value can only be given with clamp mode 'pad'") end
      pad = a[first + 2]
   end
   if n >= first + 3 then fail(fname, 'too many arguments') end
   return offset, clampMode, pad
end

function image.warp(...)
   local n, a = select('#', ...), {...}
   local dst, src, field, mode, offset, clampMode, pad
   if n == 2 then
      src, field, mode, offset, clampMode, pad = a[1], a[2], 'bilinear', true, 'clamp', 0
   elseif n >= 3 and type(a[3]) == 'string' then
      src, field, mode = a[1], a[2], a[3]
      offset, clampMode, pad = warpOptions('image.warp', a, n, 4)
   elseif n >= 3 then
      dst, src, field, mode = a[1], a[2], a[3], a[4] or 'bilinear'
      offset, clampMode, pad = warpOptions('image.warp', a, n, 5)
   else
      fail('image.warp', 'usage: image.warp([dst,] src, field [, mode [, offset [, clamp | pad [, pad value]]]])')
   end
   checkImage(src, 'image.warp', 'source')
   return runWarp('image.warp', dst, src, field, mode, offset, clampMode, pad)
end

-- Warp by a 2 x 2 matrix acting on (y, x) about the image centre, after a (y, x) translation.
function image.affinetransform(...)
   local n, a = select('#', ...), {...}
   local dst, src, matrix, mode, translation, clampMode, pad
   local function options(first)
      translation, clampMode, pad = a[first] or torch.Tensor{0, 0}, a[first + 1] or 'clamp', 0
      if n >= first + 2 then
         if clampMode ~= 'pad' then fail('image.affinetransform', "a pad value can only be given with clamp mode 'pad'") end
         pad = a[first + 2]
      end
   end
   if n == 2 then src, matrix, mode = a[1], a[2], 'bilinear'; options(99)
   elseif n >= 3 and type(a[3]) == 'string' then src, matrix, mode = a[1], a[2], a[3]; options(4)
   elseif n >= 3 then dst, src, matrix, mode = a[1], a[2], a[3], a[4] or 'bilinear'; options(5)
   else fail('image.affinetransform', 'usage: image.affinetransform([dst,] src, matrix [, mode [, translation [, clamp | pad [, pad value]]]])') end
   checkImage(src, 'image.affinetransform', 'source')
   local h, w = dims(src)
   -- centred coordinates of every pixel, y then x
   local centred = torch.DoubleTensor(2, h, w)
   centred[1]:copy(torch.linspace(-(h - 1) / 2, (h - 1) / 2, h):double():view(h, 1):expand(h, w))
   centred[2]:copy(torch.linspace(-(w - 1) / 2, (w - 1) / 2, w):double():view(1, w):expand(h, w))
   local mapped = torch.mm(matrix:double(), centred:view(2, h * w)):view(2, h, w)
   -- the field is the offset from each pixel to where it samples
   local field = mapped - centred
   local t = torch.DoubleTensor(translation)
   field[1]:add(-t[1])
   field[2]:add(-t[2])
   return runWarp('image.affinetransform', dst, src, field, mode, true, clampMode, pad)
end

-- ---------------------------------------------------------------- flips

local function flipInto(fname, dst, src, dim)
   checkType(src, fname)
   if dst ~= nil then checkType(dst, fname) end
   dst = dst or src.new()
   if dst ~= src then dst:resizeAs(src) end
   check(C.lt_image_flip(dst._c, src._c, dim - 1))
   return dst
end

local function dstSrc(fname, ...)
   local n, a = select('#', ...), {...}
   if n == 2 then return a[1], a[2] end
   if n == 1 then return nil, a[1] end
   fail(fname, 'usage: ' .. fname .. '([dst,] src)')
end

function image.hflip(...)
   local dst, src = dstSrc('image.hflip', ...)
   checkImage(src, 'image.hflip')
   return flipInto('image.hflip', dst, src, src:dim())
end

function image.vflip(...)
   local dst, src = dstSrc('image.vflip', ...)
   checkImage(src, 'image.vflip')
   return flipInto('image.vflip', dst, src, src:dim() - 1)
end

function image.flip(...)
   local n, a = select('#', ...), {...}
   local dst, src, dim
   if n == 3 then dst, src, dim = a[1], a[2], a[3]
   elseif n == 2 then src, dim = a[1], a[2]
   else fail('image.flip', 'usage: image.flip([dst,] src, dim)') end
   checkType(src, 'image.flip')
   if type(dim) ~= 'number' or dim < 1 or dim > src:dim() then
      fail('image.flip', 'the dimension must be between 1 and ' .. src:dim() .. ', got ' .. tostring(dim))
   end
   return flipInto('image.flip', dst, src, dim)
end
