-- display: Torch7's client of a browser display server (szym/display's API), for programs that show images and
-- plots while they train (dcgan.torch, pix2pix, CycleGAN, ...). Each call sends one command to the server
-- (`luatorch display`, or `luatorch th -ldisplay.start [port [hostname]]`) and returns the window id, which a
-- later call passes as opts.win to update that window in place.
--
--   display.configure{hostname = '127.0.0.1', port = 8000}
--   display.image(tensor, {win = id, title = '...', min = , max = , width = , labels = , nperrow = })
--   display.images(list, opts)   display.plot(data, {labels = {'x', 'y1', ...}, ...})   display.text(s, opts)
--
-- As the original, a missing server does not stop the program: the first failed send says so once on stderr,
-- later ones are quiet.
local ffi = require 'ffi'
local torch = require 'torch'
require 'image'
local json = require 'display.json'
local http = require 'display.http'

-- (LUATORCH_DISPLAY=host:port points programs that never call configure at another server)
local M = {url = 'http://' .. (os.getenv('LUATORCH_DISPLAY') or 'localhost:8000') .. '/events', timeout = 5}

function M.configure(config)
   config = config or {}
   M.url = string.format('http://%s:%d/events', config.hostname or '127.0.0.1', config.port or 8000)
end

local warned = false
local function send(command)
   local code, err = http.post(M.url, json.encode(command), 'application/json', M.timeout)
   if code ~= 200 then
      if not warned then
         warned = true
         io.stderr:write(string.format('display: %s (start a server with `luatorch display`; this program goes on '
                                       .. 'without showing its windows)\n',
                                       code and ('the server answered ' .. code .. ': ' .. err) or err))
      end
      return false
   end
   return true
end

local counter = 0
local function uid()
   counter = counter + 1
   return string.format('pane_%d_%d', os.time(), counter)
end

local function pane(kind, win, title, content)
   win = win or uid()
   send({command = 'pane', type = kind, id = tostring(win), title = title, content = content})
   return win
end

local alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
local function base64(data, n)
   local src = ffi.cast('const uint8_t *', data)
   local out = ffi.new('uint8_t[?]', math.floor((n + 2) / 3) * 4)
   local abc = ffi.cast('const uint8_t *', alphabet)
   local j = 0
   for i = 0, n - 1, 3 do
      local b0, b1, b2 = src[i], i + 1 < n and src[i + 1] or 0, i + 2 < n and src[i + 2] or 0
      local v = b0 * 65536 + b1 * 256 + b2
      out[j] = abc[bit.rshift(v, 18)]
      out[j + 1] = abc[bit.band(bit.rshift(v, 12), 63)]
      out[j + 2] = i + 1 < n and abc[bit.band(bit.rshift(v, 6), 63)] or 61    -- '='
      out[j + 3] = i + 2 < n and abc[bit.band(v, 63)] or 61
      j = j + 4
   end
   return ffi.string(out, j)
end
M._base64 = base64

-- img (any tensor type, on any device) as float values in [0, 1]: opts.min/opts.max, or its own range
local function toUnitRange(picture, opts)
   local f = torch.FloatTensor():resize(picture:size()):copy(picture)
   local lo, hi = opts.min or f:min(), opts.max or f:max()
   f:add(-lo)
   if hi > lo then f:mul(1 / (hi - lo)) end   -- (a constant image stays at 0 rather than NaN)
   return f:clamp(0, 1)
end

function M.image(img, opts)
   opts = opts or {}
   if type(img) == 'table' then return M.images(img, opts) end
   assert(torch.isTensor(img), 'display.image: a tensor (or a table of them) expected')
   -- a batch of images, or more planes than a colour image has: one sub-image each
   local batch = img:dim() == 4 or (img:dim() == 3 and img:size(1) > 3)
   if batch then
      local list = {}
      for i = 1, img:size(1) do list[i] = img[i] end
      return M.images(list, opts)
   end
   assert(img:dim() == 2 or img:dim() == 3, 'display.image: an image has 2 or 3 dimensions')
   local blob = image.compressJPG(toUnitRange(img, opts), 90)
   local src = 'data:image/jpeg;base64,' .. base64(blob:data(), blob:nElement())
   return pane('image', opts.win, opts.title, {src = src, labels = opts._labels, width = opts.width})
end

-- the images on one grid (nperrow per row, a mid-grey background), each normalized on its own when
-- opts.normalize is set (the whole grid is normalized once in any case, by display.image)
function M.images(pictures, opts)
   opts = opts or {}
   local names = opts.labels or {}
   local perRow = opts.nperrow or math.ceil(math.sqrt(#pictures))
   local planes, h, w = 1, 0, 0
   local list = {}
   for i, img in ipairs(pictures) do
      if opts.normalize then img = toUnitRange(img, opts) end
      if img:dim() == 2 then img = img:view(1, img:size(1), img:size(2)) end
      list[i] = img
      planes, h, w = math.max(planes, img:size(1)), math.max(h, img:size(2)), math.max(w, img:size(3))
   end
   local rows = math.ceil(#list / perRow)
   local canvas = torch.FloatTensor(planes, h * rows, w * perRow):fill(0.5)
   local placed = {}
   for i, img in ipairs(list) do
      local row, col = math.floor((i - 1) / perRow), (i - 1) % perRow
      local cell = canvas:narrow(2, h * row + 1, img:size(2)):narrow(3, w * col + 1, img:size(3))
      cell:copy(img:size(1) == planes and img or img:expand(planes, img:size(2), img:size(3)))
      if names[i] then placed[#placed + 1] = {col / perRow, row / rows, names[i]} end
   end
   local o = {}
   for k, v in pairs(opts) do o[k] = v end
   o._labels = placed
   return M.image(canvas, o)
end

-- data: a 2-D tensor or a list of rows, the first column the x axis; opts are the plot's (labels, xlabel,
-- ylabel, title, ...: Dygraphs' option names, as the original passed them on)
function M.plot(data, opts)
   opts = opts or {}
   local rows = data
   if torch.isTensor(data) then
      assert(data:dim() == 2, 'display.plot: a 2-D tensor (a row per point, x first) expected')
      local d = data:double()
      rows = {}
      for i = 1, d:size(1) do
         local row = {}
         for j = 1, d:size(2) do row[j] = d[i][j] end
         rows[i] = row
      end
   end
   local options = {}
   for k, v in pairs(opts) do options[k] = v end
   options.file = rows
   if options.labels then options.xlabel = options.xlabel or options.labels[1] end
   options.win = nil
   return pane('plot', opts.win, opts.title, options)
end

function M.text(text, opts)
   opts = opts or {}
   return pane('text', opts.win, opts.title, tostring(text))
end

-- (the original needed Torch's `audio` package, which the distro does not carry; it warned and went on)
function M.audio(data, opts)
   print('Warning: audio package could not be loaded. Skipping audio.')
end

return M
