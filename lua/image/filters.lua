-- image: kernels (Gaussian, Laplacian), convolution, pyramids, normalisation, morphology, ranges,
-- display grids and rectangles.
local image = image
local C = image._C
local check, fail, checkType = image._check, image._fail, image._checkType

-- The parameters of the 2-D kernel builders (named or positional, as Torch7's image took them).
local function kernelArgs(fname, description, sigma, extra, ...)
   local defs = {
      {arg = 'size', type = 'number', help = 'kernel size (size x size)', default = 3},
      {arg = 'sigma', type = 'number', help = 'sigma (horizontal and vertical)', default = sigma},
      {arg = 'amplitude', type = 'number', help = 'the maximum value', default = 1},
      {arg = 'normalize', type = 'boolean', help = 'scale the kernel to sum 1', default = false},
      {arg = 'width', type = 'number', help = 'kernel width', defaulta = 'size'},
      {arg = 'height', type = 'number', help = 'kernel height', defaulta = 'size'},
      {arg = 'sigma_horz', type = 'number', help = 'horizontal sigma', defaulta = 'sigma'},
      {arg = 'sigma_vert', type = 'number', help = 'vertical sigma', defaulta = 'sigma'},
      {arg = 'mean_horz', type = 'number', help = 'horizontal mean (fraction of the width)', default = 0.5},
      {arg = 'mean_vert', type = 'number', help = 'vertical mean (fraction of the height)', default = 0.5},
   }
   if extra then defs[#defs + 1] = extra end
   local named = xlua.unpack({...}, fname, description, unpack(defs))
   return named
end

function image.gaussian(...)
   local a = kernelArgs('image.gaussian', 'a 2-D Gaussian kernel', 0.25,
                        {arg = 'tensor', type = 'torch.Tensor', help = 'result tensor (its size replaces width/height)'}, ...)
   local g = a.tensor
   if g then
      checkType(g, 'image.gaussian')
      if g:dim() ~= 2 or g:nElement() == 0 then fail('image.gaussian', 'the result tensor must be a non-empty 2-D tensor') end
   else
      g = torch.Tensor(a.height, a.width)
   end
   check(C.lt_image_gaussian(g._c, a.amplitude, a.normalize and 1 or 0, a.sigma_horz, a.sigma_vert,
                             a.mean_horz, a.mean_vert))
   return g
end

function image.gaussian1D(...)
   local a = xlua.unpack({...}, 'image.gaussian1D', 'a 1-D Gaussian kernel',
      {arg = 'size', type = 'number', help = 'kernel size', default = 3},
      {arg = 'sigma', type = 'number', help = 'sigma (fraction of the size)', default = 0.25},
      {arg = 'amplitude', type = 'number', help = 'the maximum value', default = 1},
      {arg = 'normalize', type = 'boolean', help = 'scale the kernel to sum 1', default = false},
      {arg = 'mean', type = 'number', help = 'mean (fraction of the size)', default = 0.5},
      {arg = 'tensor', type = 'torch.Tensor', help = 'result tensor (its size replaces size)'})
   local g = a.tensor
   local size = a.size
   if g then
      if g:dim() ~= 1 or g:nElement() == 0 then fail('image.gaussian1D', 'the result tensor must be a non-empty 1-D tensor') end
      size = g:size(1)
   else
      g = torch.Tensor(size)
   end
   local centre = a.mean * size + 0.5
   for i = 1, size do g[i] = a.amplitude * math.exp(-(((i - centre) / (a.sigma * size)) ^ 2) / 2) end
   if a.normalize then g:div(g:sum()) end
   return g
end

-- A Laplacian-of-Gaussian shaped kernel. As in Torch7, rows are measured against the horizontal
-- mean and sigma and columns against the vertical ones (the same for square kernels).
function image.laplacian(...)
   local a = kernelArgs('image.laplacian', 'a 2-D Laplacian kernel', 0.1, nil, ...)
   local cx, cy = a.mean_horz * a.width + 0.5, a.mean_vert * a.height + 0.5
   local k = torch.Tensor(a.height, a.width)
   for i = 1, a.height do
      for j = 1, a.width do
         local r2 = (((i - cx) / (a.sigma_horz * a.width)) ^ 2) / 2 + (((j - cy) / (a.sigma_vert * a.height)) ^ 2) / 2
         k[i][j] = (1 - r2) * a.amplitude * math.exp(-r2)
      end
   end
   if a.normalize then k:div(k:sum()) end
   return k
end

-- ---------------------------------------------------------------- convolution

local convModes = {valid = 'V', full = 'F', same = 'F'}

function image.convolve(...)
   local n, a = select('#', ...), {...}
   local dst, src, kernel, mode
   if n == 4 then dst, src, kernel, mode = a[1], a[2], a[3], a[4]
   elseif n == 3 and type(a[3]) == 'string' then src, kernel, mode = a[1], a[2], a[3]
   elseif n == 3 then dst, src, kernel = a[1], a[2], a[3]
   elseif n == 2 then src, kernel = a[1], a[2]
   else fail('image.convolve', 'usage: image.convolve([dst,] src, kernel [, valid | full | same])') end
   mode = mode or 'valid'
   if not convModes[mode] then fail('image.convolve', 'mode has to be one of: full | valid | same, got ' .. tostring(mode)) end
   if kernel:dim() == 2 and src:dim() == 3 then
      -- the same kernel on every plane
      kernel = kernel:view(1, kernel:size(1), kernel:size(2)):expand(src:size(1), kernel:size(1), kernel:size(2)):contiguous()
      kernel = kernel:typeAs(src)
   end
   if dst then torch.conv2(dst, src, kernel, convModes[mode]) else dst = torch.conv2(src, kernel, convModes[mode]) end
   if mode == 'same' then
      -- the centre of the full result, the size of the input
      local dx, dy = dst:dim(), dst:dim() - 1
      dst = dst:narrow(dy, math.ceil(kernel:size(dy) / 2), src:size(dy)):narrow(dx, math.ceil(kernel:size(dx) / 2), src:size(dx))
   end
   return dst
end

function image.gaussianpyramid(...)
   local n, a = select('#', ...), {...}
   local dst, src, scales
   if n == 3 then dst, src, scales = a[1], a[2], a[3]
   elseif n == 2 then dst, src, scales = {}, a[1], a[2]
   else fail('image.gaussianpyramid', 'usage: image.gaussianpyramid([dst,] src, scales)') end
   if src:dim() ~= 2 and src:dim() ~= 3 then fail('image.gaussianpyramid', 'src image must be 2D or 3D') end
   local h, w = src:size(src:dim() - 1), src:size(src:dim())
   for i = 1, #scales do
      dst[i] = dst[i] or src.new()
      local sh, sw = math.floor(h * scales[i]), math.floor(w * scales[i])
      if src:dim() == 3 then dst[i]:resize(src:size(1), sh, sw) else dst[i]:resize(sh, sw) end
   end
   local kernel = image.gaussian{width = 3, normalize = true}:typeAs(src)
   local level = src
   for i = 1, #scales do
      if scales[i] == 1 then dst[i]:copy(level) else image.scale(dst[i], level, 'simple') end
      level = image.convolve(dst[i], kernel, 'same')
   end
   return dst
end

-- Local contrast normalisation of a grey image (H x W or 1 x H x W) with kernel ker (default: a
-- normalised 9 x 9 Gaussian): standardise, subtract the local mean, divide by the local standard
-- deviation where it exceeds 1. The result is the 'valid' part.
function image.lcn(im, ker)
   ker = ker or image.gaussian{size = 9, sigma = 1.591 / 9, normalize = true}
   if not (im:dim() == 2 or (im:dim() == 3 and im:size(1) == 1)) then fail('image.lcn', 'grayscale image expected') end
   local x = im:clone():double()
   if x:dim() == 3 then x = x[1] end
   ker = ker:double()
   x:add(-x:mean()):div(x:std())
   local localMean = torch.conv2(x, ker)
   local localSq = torch.conv2(torch.cmul(x, x), ker)
   local localStd = localSq:add(-1, torch.cmul(localMean, localMean)):clamp(0, math.huge):sqrt():clamp(1, math.huge)
   local top, left = math.floor(ker:size(1) / 2) + 1, math.floor(ker:size(2) / 2) + 1
   local centre = x:narrow(1, top, localStd:size(1)):narrow(2, left, localStd:size(2)):clone()
   return centre:add(-1, localMean):cdiv(localStd)
end

-- Binary morphology of an H x W image with an odd-sized kernel (default 3 x 3 ones); the border
-- is padded with `pad` (erode: 1, dilate: 0).
local function morph(fname, im, kern, pad, dilate)
   if not im then fail(fname, 'missing image') end
   kern = kern or torch.ones(3, 3):typeAs(im)
   if dilate then kern = image.hflip(image.vflip(kern)) end
   local hp, wp = (kern:size(1) - 1) / 2, (kern:size(2) - 1) / 2
   local padded = im.new(im:size(1) + 2 * hp, im:size(2) + 2 * wp):fill(pad)
   padded:narrow(1, hp + 1, im:size(1)):narrow(2, wp + 1, im:size(2)):copy(im)
   local conv = torch.conv2(padded, kern:typeAs(im))
   if dilate then return conv:gt(0):typeAs(im) end
   return conv:eq(kern:sum()):typeAs(im)
end

function image.erode(im, kern, pad) return morph('image.erode', im, kern, pad or 1, false) end
function image.dilate(im, kern, pad) return morph('image.dilate', im, kern, pad or 0, true) end

-- ---------------------------------------------------------------- ranges and display grids

-- Rescale to [0, 1] from [min, max] (given, or the tensor's own; symm: symmetric about 0).
function image.minmax(args)
   local tensor = args.tensor
   local out
   if args.tensorOut then out = args.tensorOut:resize(tensor:size()):copy(tensor)
   elseif args.inplace then out = tensor
   else out = torch.Tensor(tensor:size()):copy(tensor) end
   local min, max, saturate = args.min, args.max, args.saturate or false
   if min == nil and max == nil then saturate = false end
   local bound = 0
   if min == nil then
      if args.symm then
         bound = math.max(math.abs(out:min()), math.abs(out:max()))
         min = -bound
      else
         min = out:min()
      end
   end
   if min ~= 0 then out:add(-min) end
   if max == nil then
      max = args.symm and 2 * bound or out:max()
   else
      max = max - min
   end
   if max ~= 0 then out:div(max) end
   if saturate then check(C.lt_image_saturate(out._c)) end
   return out
end

function image.toDisplayTensor(...)
   local a = xlua.unpack({...}, 'image.toDisplayTensor', 'a grid of images in one tensor',
      {arg = 'input', type = 'torch.Tensor | table', help = 'HxW, KxHxW, Kx3xHxW or a list', req = true},
      {arg = 'padding', type = 'number', help = 'pixels between images', default = 0},
      {arg = 'nrow', type = 'number', help = 'images per row', default = 6},
      {arg = 'scaleeach', type = 'boolean', help = 'rescale each image on its own', default = false},
      {arg = 'min', type = 'number', help = 'lower bound of the range'},
      {arg = 'max', type = 'number', help = 'upper bound of the range'},
      {arg = 'symmetric', type = 'boolean', help = 'range symmetric about 0', default = false},
      {arg = 'saturate', type = 'boolean', help = 'clamp to the range', default = true})
   local input, padding, nrow = a.input, a.padding, a.nrow
   local range = function(t) return image.minmax{tensor = t, inplace = true, min = a.min, max = a.max,
                                                  symm = a.symmetric, saturate = a.saturate} end
   local packed = torch.Tensor()
   if type(input) == 'table' then
      local first = input[1]
      local nd = first:dim()
      packed:resize(#input, nd == 2 and 1 or first:size(1), first:size(nd - 1), first:size(nd))
      for i = 1, #input do packed[i]:copy(input[i]) end
   elseif torch.isTensor(input) then
      packed:resize(input:size()):copy(input)
   else
      fail('image.toDisplayTensor', 'expected a tensor or a list of tensors, got ' .. torch.type(input))
   end
   local colourStack = packed:dim() == 4 and (packed:size(2) == 3 or packed:size(2) == 1)
   local single = packed:dim() == 2 or (packed:dim() == 3 and (packed:size(1) == 1 or packed:size(1) == 3))
   if a.scaleeach and (colourStack or (packed:dim() == 3 and not single)) then
      for i = 1, packed:size(1) do range(packed[i]) end
   end
   if single then return range(packed) end
   if not colourStack and packed:dim() ~= 3 then
      fail('image.toDisplayTensor', 'expected HxW, KxHxW or Kx3xHxW tensors, or a list of them')
   end
   local count = packed:size(1)
   local cols = math.min(nrow, count)
   local rows = math.ceil(count / cols)
   local cellH, cellW = packed:size(packed:dim() - 1) + padding, packed:size(packed:dim()) + padding
   local grid = colourStack and torch.Tensor(packed:size(2), cellH * rows, cellW * cols)
                or torch.Tensor(cellH * rows, cellW * cols)
   grid:fill(packed:max())
   local hd, wd = grid:dim() - 1, grid:dim()
   for k = 1, count do
      local r, c = math.floor((k - 1) / cols), (k - 1) % cols
      grid:narrow(hd, math.floor(r * cellH + 1 + padding / 2), cellH - padding)
          :narrow(wd, math.floor(c * cellW + 1 + padding / 2), cellW - padding):copy(packed[k])
   end
   if not a.scaleeach then range(grid) end
   return grid
end

-- ---------------------------------------------------------------- drawing

-- A rectangle outline with corners (x1, y1), (x2, y2); opts: color {r, g, b} (0..255, default red),
-- lineWidth (default 1), inplace (default false: a copy is drawn on).
function image.drawRect(src, x1, y1, x2, y2, opts)
   opts = opts or {}
   if not (torch.isTensor(src) and src:dim() == 3 and src:size(1) == 3) then
      fail('image.drawRect', 'the image has to be a 3 x H x W tensor')
   end
   checkType(src, 'image.drawRect')
   local out = opts.inplace and src or src:clone()
   if not (x1 and y1 and x2 and y2) then return out end
   local colour = opts.color or {255, 0, 0}
   check(C.lt_image_draw_rect(out._c, x1, y1, x2, y2, opts.lineWidth or 1, colour[1], colour[2], colour[3]))
   return out
end
