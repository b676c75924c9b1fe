-- image: colour spaces and colour maps (kernels in native/src/image_color.c).
local image = image
local C = image._C
local check, fail, checkType = image._check, image._fail, image._checkType

-- (output, input) or (input): the output resized like the input.
local function outIn(fname, ...)
   local n, a = select('#', ...), {...}
   local output, input
   if n == 2 then output, input = a[1], a[2]
   elseif n == 1 then input = a[1]
   else fail(fname, 'usage: ' .. fname .. '([output,] input)') end
   if not torch.isTensor(input) or input:dim() ~= 3 or input:size(1) < 3 then
      fail(fname, 'expected a 3 x H x W image')
   end
   return output, input
end

local function kernelConversion(fname, code)
   return function(...)
      local output, input = outIn(fname, ...)
      checkType(input, fname)
      output = output or input.new()
      output:resizeAs(input)
      check(C.lt_image_color(output._c, input._c, code))
      return output
   end
end

image.rgb2hsl = kernelConversion('image.rgb2hsl', C.LT_IMAGE_RGB2HSL)
image.hsl2rgb = kernelConversion('image.hsl2rgb', C.LT_IMAGE_HSL2RGB)
image.rgb2hsv = kernelConversion('image.rgb2hsv', C.LT_IMAGE_RGB2HSV)
image.hsv2rgb = kernelConversion('image.hsv2rgb', C.LT_IMAGE_HSV2RGB)
image.rgb2lab = kernelConversion('image.rgb2lab', C.LT_IMAGE_RGB2LAB)
image.lab2rgb = kernelConversion('image.lab2rgb', C.LT_IMAGE_LAB2RGB)

-- A linear map of the three channels: out[i] = sum_j rows[i][j] * in[j].
local function linearColor(fname, rows)
   return function(...)
      local output, input = outIn(fname, ...)
      output = output or input.new()
      output:resizeAs(input)
      local src = input
      if output == input then src = input:clone() end
      for i = 1, 3 do
         local o = output[i]:zero()
         for j = 1, 3 do
            if rows[i][j] ~= 0 then o:add(rows[i][j], src[j]) end
         end
      end
      return output
   end
end

image.rgb2yuv = linearColor('image.rgb2yuv', {
   {0.299, 0.587, 0.114}, {-0.14713, -0.28886, 0.436}, {0.615, -0.51499, -0.10001}})
image.yuv2rgb = linearColor('image.yuv2rgb', {
   {1, 0, 1.13983}, {1, -0.39465, -0.58060}, {1, 2.03211, 0}})

function image.rgb2y(...)
   local output, input = outIn('image.rgb2y', ...)
   checkType(input, 'image.rgb2y')
   output = output or input.new()
   output:resize(1, input:size(2), input:size(3))
   check(C.lt_image_rgb2y(output[1]._c, input._c))
   return output
end

-- Each channel divided by the sum of the three (+1e-6).
function image.rgb2nrgb(...)
   local output, input = outIn('image.rgb2nrgb', ...)
   local sum = input[1]:clone():add(input[2]):add(input[3]):add(1e-6)
   output = output or input.new()
   output:resizeAs(input):copy(input)
   for k = 1, 3 do output[k]:cdiv(sum) end
   return output
end

-- nbColor colours around the hue circle (hue steps of 39 degrees, lightness 0.5, saturation cycling).
function image.colormap(nbColor)
   local map = torch.Tensor(nbColor, 3)
   for i = 1, nbColor do
      local hue = math.fmod(39 * (i - 1), 360)
      local sat = math.fmod((i - 1) / 9, 0.7) + 0.3
      local chroma = sat  -- (1 - |2L - 1|) * S with L = 0.5
      local h6 = hue / 60
      local x = chroma * (1 - math.abs(math.fmod(h6, 2) - 1))
      local rgb
      if h6 < 1 then rgb = {chroma, x, 0}
      elseif h6 < 2 then rgb = {x, chroma, 0}
      elseif h6 < 3 then rgb = {0, chroma, x}
      elseif h6 < 4 then rgb = {0, x, chroma}
      elseif h6 < 5 then rgb = {x, 0, chroma}
      else rgb = {chroma, 0, x} end
      for k = 1, 3 do map[i][k] = rgb[k] + 0.5 - chroma / 2 end
   end
   return map
end

-- The jet map: blue -> cyan -> yellow -> red in nbColor steps.
function image.jetColormap(nbColor)
   local map = torch.Tensor(nbColor, 3)
   local function ramp(v) return math.max(math.min(v, 1), 0) end
   for i = 1, nbColor do
      local q = 4 * i / nbColor
      map[i][1] = ramp(math.min(q - 1.5, 4.5 - q))
      map[i][2] = ramp(math.min(q - 0.5, 3.5 - q))
      map[i][3] = ramp(math.min(q + 0.5, 2.5 - q))
   end
   return map
end

-- Levels 1..L (H x W, 1 x H x W or a 1-D row) -> 3 x H x W jet colours (bytes: 0..255).
function image.y2jet(...)
   local n, a = select('#', ...), {...}
   local output, input
   if n == 2 then output, input = a[1], a[2] elseif n == 1 then input = a[1]
   else fail('image.y2jet', 'usage: image.y2jet([output,] levels)') end
   checkType(input, 'image.y2jet')
   if input:dim() == 3 and input:size(1) == 1 then input = input[1] end
   if input:dim() == 1 then input = input:view(1, input:size(1)) end
   output = output or input.new()
   local levels = input:max()
   local map = image.jetColormap(levels)
   if torch.type(input) == 'torch.ByteTensor' then
      map = map:mul(255):round():clamp(0, 255):byte()
   else
      map = map:typeAs(input)
   end
   local index = torch.DoubleTensor(input:size()):copy(input):add(-1)  -- 0-based rows; input untouched
   check(C.lt_image_colorize(output._c, index._c, map._c))
   return output
end
