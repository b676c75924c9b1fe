-- image: Torch7's image package on luatorch's C kernels (native/src/image_*.c).
--
--   loading/saving   image.load/save (by content, then extension), loadJPG/PNG/PPM, saveJPG/PNG/PPM/PGM,
--                    compressJPG/PNG, decompressJPG/PNG/decompress, getSize, getJPGsize/PNGsize/PPMsize
--   geometry         image/geometry.lua: scale, crop, translate, rotate, polar, logpolar, warp,
--                    affinetransform, hflip, vflip, flip
--   colour           image/color.lua: rgb2yuv, yuv2rgb, rgb2y, rgb2hsl/hsl2rgb, rgb2hsv/hsv2rgb,
--                    rgb2lab/lab2rgb, rgb2nrgb, y2jet, colormap, jetColormap
--   filters, drawing image/filters.lua: gaussian, gaussian1D, laplacian, gaussianpyramid, convolve, lcn,
--                    erode, dilate, minmax, toDisplayTensor, drawRect
--   pictures         image.lena(), image.fabio(): torch/image's assets (see findAsset)
--
-- Pixel conventions are Torch7's: a loaded image is C x H x W; Float/Double images hold [0, 1],
-- Byte images 0..255 (tensortype 'byte'). image.display and drawText need Qt / Torch7's bitmap
-- font and are not available: they say so.
require 'torch'
require 'xlua'
local paths = require 'paths'
local ffi = require 'ffi'

local image = rawget(_G, 'image') or {}
_G.image = image

-- Torch7's image loaded `dok` (a global) for its argument handling; scripts and tests use it too.
if not pcall(require, 'dok') then
   local dok = rawget(_G, 'dok') or {}
   dok.unpack = dok.unpack or xlua.unpack
   dok.usage = dok.usage or xlua.usage
   dok.error = dok.error or function(message, domain) error((domain and (domain .. ': ') or '') .. tostring(message), 2) end
   _G.dok = dok
   package.loaded.dok = dok
end

local C = torch.C
image._C = C

-- Raise the C kernel's error (lt_errmsg) as a Lua error at the caller's caller.
local function check(rc) if rc ~= 0 then error(ffi.string(C.lt_errmsg()), 3) end end
image._check = check

local function fail(fname, message) error(fname .. ': ' .. message, 3) end
image._fail = fail

-- The tensor types the kernels handle.
local supported = {['torch.ByteTensor'] = true, ['torch.FloatTensor'] = true, ['torch.DoubleTensor'] = true}
function image._checkType(t, fname)
   if not torch.isTensor(t) then fail(fname, 'expected a tensor, got ' .. torch.type(t)) end
   if not supported[torch.type(t)] then
      fail(fname, 'expected a ByteTensor, FloatTensor or DoubleTensor, got ' .. torch.type(t))
   end
end

-- An empty tensor of the requested load type ('byte' | 'float' | 'double'; nil: the default type).
local loadTypes = {byte = torch.ByteTensor, float = torch.FloatTensor, double = torch.DoubleTensor}
local function newOfLoadType(tensortype, fname)
   if tensortype == nil then return torch.Tensor() end
   local new = loadTypes[tensortype]
   if not new then fail(fname, "tensortype must be 'byte', 'float' or 'double', got " .. tostring(tensortype)) end
   return new()
end

-- Channels forced to `depth` (1: luma of RGB(A), first of grey+alpha; 3: grey replicated, alpha dropped).
local function toDepth(img, depth, fname)
   if depth == nil then return img end
   if depth == 1 then
      if img:dim() == 2 then return img end
      local c = img:size(1)
      if c == 3 or c == 4 then return image.rgb2y(img:narrow(1, 1, 3))[1] end
      if c == 2 then return img:narrow(1, 1, 1) end
      if c ~= 1 then fail(fname, 'the image has ' .. c .. ' channels, cannot make it grey') end
      return img
   elseif depth == 3 then
      if img:dim() == 2 then img = img:view(1, img:size(1), img:size(2)) end
      local c = img:size(1)
      if c == 3 then return img end
      if c == 4 then return img:narrow(1, 1, 3) end
      if c == 1 or c == 2 then
         local rgb = img.new(3, img:size(2), img:size(3))
         for k = 1, 3 do rgb[k]:copy(img[1]) end
         return rgb
      end
      fail(fname, 'the image has ' .. c .. ' channels, cannot make it RGB')
   end
   fail(fname, 'depth must be 1 or 3, got ' .. tostring(depth))
end

-- Raw samples (0..maxval) -> the load type's range.
local function finish(img, depth, tensortype, maxval, fname)
   if tensortype ~= 'byte' and torch.type(img) ~= 'torch.ByteTensor' then img:mul(1 / maxval) end
   return toDepth(img, depth, fname)
end

local function checkPath(path, fname)
   if type(path) ~= 'string' then fail(fname, 'expected a file name (string), got ' .. type(path)) end
end

local function checkBlob(blob, fname)
   if torch.type(blob) ~= 'torch.ByteTensor' then
      fail(fname, 'the compressed image must be a ByteTensor, got ' .. torch.type(blob))
   end
   if blob:dim() ~= 1 then blob = blob:view(blob:nElement()) end
   return blob:contiguous()
end

-- ---------------------------------------------------------------- JPEG / PNG / PPM

function image.loadJPG(path, depth, tensortype)
   checkPath(path, 'image.loadJPG')
   local img = newOfLoadType(tensortype, 'image.loadJPG')
   check(C.lt_image_jpeg_decode(img._c, path, nil, 'image.loadJPG'))
   return finish(img, depth, tensortype, 255, 'image.loadJPG')
end

function image.decompressJPG(blob, depth, tensortype)
   blob = checkBlob(blob, 'image.decompressJPG')
   local img = newOfLoadType(tensortype, 'image.decompressJPG')
   check(C.lt_image_jpeg_decode(img._c, nil, blob._c, 'image.decompressJPG'))
   return finish(img, depth, tensortype, 255, 'image.decompressJPG')
end

local bitDepth = ffi.new('int[1]')
function image.loadPNG(path, depth, tensortype)
   checkPath(path, 'image.loadPNG')
   local img = newOfLoadType(tensortype, 'image.loadPNG')
   check(C.lt_image_png_decode(img._c, path, nil, 'image.loadPNG', bitDepth))
   return finish(img, depth, tensortype, bitDepth[0] == 16 and 65535 or 255, 'image.loadPNG')
end

function image.decompressPNG(blob, depth, tensortype)
   blob = checkBlob(blob, 'image.decompressPNG')
   local img = newOfLoadType(tensortype, 'image.decompressPNG')
   check(C.lt_image_png_decode(img._c, nil, blob._c, 'image.decompressPNG', bitDepth))
   return finish(img, depth, tensortype, bitDepth[0] == 16 and 65535 or 255, 'image.decompressPNG')
end

function image.loadPPM(path, depth, tensortype)
   checkPath(path, 'image.loadPPM')
   local img = newOfLoadType(tensortype, 'image.loadPPM')
   check(C.lt_image_ppm_decode(img._c, path))
   return finish(img, depth, tensortype, 255, 'image.loadPPM')
end

-- The image as a contiguous ByteTensor for the encoders: bytes as they are; float/double
-- clamped to [0, 1] and scaled to 0..255, then truncated (as Torch7 wrote them).
local function toSaveBytes(img, fname)
   image._checkType(img, fname)
   if torch.type(img) == 'torch.ByteTensor' then return img:contiguous() end
   local scaled = torch.DoubleTensor(img:size()):copy(img)
   check(C.lt_image_saturate(scaled._c))
   scaled:mul(255)
   return torch.ByteTensor(scaled:size()):copy(scaled)
end

function image.saveJPG(path, img, quality)
   checkPath(path, 'image.saveJPG')
   check(C.lt_image_jpeg_encode(toSaveBytes(img, 'image.saveJPG')._c, path, nil, quality or 75))
end

function image.compressJPG(img, quality)
   local out = torch.ByteTensor()
   check(C.lt_image_jpeg_encode(toSaveBytes(img, 'image.compressJPG')._c, nil, out._c, quality or 75))
   return out
end

function image.savePNG(path, img)
   checkPath(path, 'image.savePNG')
   check(C.lt_image_png_encode(toSaveBytes(img, 'image.savePNG')._c, path, nil))
end

function image.compressPNG(img)
   local out = torch.ByteTensor()
   check(C.lt_image_png_encode(toSaveBytes(img, 'image.compressPNG')._c, nil, out._c))
   return out
end

function image.savePPM(path, img)
   checkPath(path, 'image.savePPM')
   if not (torch.isTensor(img) and img:dim() == 3 and img:size(1) == 3) then
      fail('image.savePPM', 'can only save 3 x H x W images as PPM (use savePGM for grey)')
   end
   check(C.lt_image_ppm_encode(toSaveBytes(img, 'image.savePPM')._c, path))
end

function image.savePGM(path, img)
   checkPath(path, 'image.savePGM')
   if not torch.isTensor(img) or (img:dim() == 3 and img:size(1) ~= 1) or (img:dim() ~= 2 and img:dim() ~= 3) then
      fail('image.savePGM', 'can only save 1 x H x W or H x W images as PGM')
   end
   check(C.lt_image_ppm_encode(toSaveBytes(img, 'image.savePGM')._c, path))
end

local chw = ffi.new('int64_t[3]')
local function sizer(cfn, fname)
   return function(path)
      checkPath(path, fname)
      check(cfn(path, chw))
      return tonumber(chw[0]), tonumber(chw[1]), tonumber(chw[2])
   end
end
image.getJPGsize = sizer(C.lt_image_jpeg_size, 'image.getJPGsize')
image.getPNGsize = sizer(C.lt_image_png_size, 'image.getPNGsize')
image.getPPMsize = sizer(C.lt_image_ppm_size, 'image.getPPMsize')

-- Compressed bytes in a ByteTensor, JPEG or PNG by their signature.
function image.decompress(blob, depth, tensortype)
   blob = checkBlob(blob, 'image.decompress')
   local n = blob:nElement()
   if n >= 3 and blob[1] == 0xff and blob[2] == 0xd8 and blob[3] == 0xff then
      return image.decompressJPG(blob, depth, tensortype)
   elseif n >= 4 and blob[1] == 0x89 and blob[2] == 0x50 and blob[3] == 0x4e and blob[4] == 0x47 then
      return image.decompressPNG(blob, depth, tensortype)
   end
   fail('image.decompress', 'the ByteTensor holds neither JPEG nor PNG data')
end

local filetypes = {
   jpg = {loader = image.loadJPG, saver = image.saveJPG, sizer = image.getJPGsize},
   png = {loader = image.loadPNG, saver = image.savePNG, sizer = image.getPNGsize},
   ppm = {loader = image.loadPPM, saver = image.savePPM, sizer = image.getPPMsize},
   pgm = {loader = image.loadPPM, saver = image.savePGM, sizer = image.getPPMsize},
}
filetypes.jpeg, filetypes.JPG, filetypes.JPEG = filetypes.jpg, filetypes.jpg, filetypes.jpg
filetypes.PNG, filetypes.PPM, filetypes.PGM = filetypes.png, filetypes.ppm, filetypes.pgm
image.supported_filetypes = filetypes
function image.is_supported(ext) return ext ~= nil and filetypes[ext] ~= nil end

-- The format of a file: its first bytes, else its extension.
local function fileKind(path, fname)
   checkPath(path, fname)
   local f, err = io.open(path, 'rb')
   if not f then fail(fname, 'cannot open ' .. path .. ': ' .. tostring(err)) end
   local head = f:read(4) or ''
   f:close()
   if head:sub(1, 3) == '\255\216\255' then return 'jpg' end
   if head == '\137PNG' then return 'png' end
   if head:match('^P[25]') then return 'pgm' end
   if head:match('^P[36]') then return 'ppm' end
   local ext = path:match('%.(%a+)$')
   if ext == nil then
      fail(fname, 'unable to determine image type for file: ' .. path .. ' (not JPEG, PNG or PPM/PGM, and no extension)')
   end
   if not image.is_supported(ext) then fail(fname, 'unknown image type: ' .. ext .. ' (file ' .. path .. ')') end
   return ext
end

function image.load(path, depth, tensortype)
   if path == nil then fail('image.load', 'missing file name: image.load(path [, depth 1|3] [, byte|float|double])') end
   return filetypes[fileKind(path, 'image.load')].loader(path, depth, tensortype)
end

function image.getSize(path)
   if path == nil then fail('image.getSize', 'missing file name') end
   return torch.LongTensor({filetypes[fileKind(path, 'image.getSize')].sizer(path)})
end

function image.save(path, img)
   if type(path) ~= 'string' or not torch.isTensor(img) then
      fail('image.save', 'usage: image.save(path, tensor), the format is given by the extension')
   end
   local ext = path:match('%.(%a+)$')
   if not image.is_supported(ext) then
      fail('image.save', 'unknown image type: ' .. tostring(ext) .. ' (use .jpg, .png, .ppm or .pgm)')
   end
   filetypes[ext].saver(path, img)
end

-- ---------------------------------------------------------------- pictures and display

-- torch/image's sample pictures are not shipped with luatorch: they are looked up in
-- $LUATORCH_IMAGE_ASSETS, then ./assets, then lua/image/assets.
local here = paths.dirname((debug.getinfo(1, 'S').source:gsub('^@', '')))
function image.findAsset(name)
   local dirs = {os.getenv('LUATORCH_IMAGE_ASSETS') or false, paths.concat(paths.cwd(), 'assets'), paths.concat(here, 'assets')}
   for _, dir in ipairs(dirs) do
      if dir and paths.filep(paths.concat(dir, name)) then return paths.concat(dir, name) end
   end
   error(string.format("image: the sample picture %s was not found; set LUATORCH_IMAGE_ASSETS to the assets/ "
                       .. "folder of a torch/image checkout", name), 3)
end

function image.lena() return image.load(image.findAsset('grace_hopper_512.jpg'), 3) end
function image.fabio() return image.load(image.findAsset('fabio.jpg'), 1) end

local function noGui(name)
   return function()
      error(name .. ': not available in luatorch (Torch7 drew it with Qt); write the image with image.save '
            .. 'and view the file instead', 2)
   end
end
local displayNoted = false
function image.display(...)
   if displayNoted then return end
   displayNoted = true
   print('image.display: no display in luatorch (Torch7 used Qt); use image.save(path, img) to look at an image')
end
image.window = noGui('image.window')

function image.drawText()
   error("image.drawText: not available in luatorch (it needs Torch7's bitmap font)", 2)
end

require 'image.geometry'
require 'image.color'
require 'image.filters'

return image
