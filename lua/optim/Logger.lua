-- optim.Logger(filename, timestamp): logs named values during training, one row per add, in Torch7's text
-- format, and plots them.
--
-- The file starts with a header row of the names, each followed by a tab; each add writes one row, numbers
-- as '%11.4e' and strings as they are, each followed by a tab. Names come from setNames{...} (then add takes
-- the values in that order, or keyed by name) or from the keys of the first add{name = value, ...}.
-- timestamp = true appends '-YYYY_MM_DD_HH:MM:SS' to the file name; without a file name rows go to stdout.
--
-- plot(name, ...) (all series with two or more values when no name is given) writes the plot as an SVG image,
-- '<filename>.svg' (Torch7 drew with gnuplot into '<filename>.eps' and a window; there is no window here, so
-- display() only records its flag). style{name = s} picks how a series is drawn: '-' line, '+' crosses,
-- '.' dots, '+-' line and crosses, '|' bars; '~' and any other string draw a line. setlogscale(true)
-- uses a log10 y axis.
local Logger = torch.class('optim.Logger')

function Logger:__init(filename, timestamp)
   if filename then
      self.name = filename
      paths.mkdir(paths.dirname(filename))
      if timestamp then filename = filename .. '-' .. os.date('%Y_%m_%d_%X') end
      local file, why = io.open(filename, 'w')
      if not file then
         error('optim.Logger: cannot open ' .. filename .. ' for writing (' .. tostring(why) .. ')', 3)
      end
      self.file = file
      self.svgfile = self.name .. '.svg'
   else
      self.file = io.stdout
      self.name = 'stdout'
      print('<Logger> no file name given: logging to stdout')
   end
   self.empty = true
   self.symbols = {}
   self.styles = {}
   self.names = {}
   self.idx = {}
   self.order = {}          -- the column keys, in the order of the header
   self.figure = nil
   self.showPlot = true
   self.plotRawCmd = nil
   self.defaultStyle = '+'
   self.logscale = false
end

local function addColumn(self, key, name)
   self.file:write(tostring(name) .. '\t')
   self.order[#self.order + 1] = key
   self.symbols[key] = {}
   self.styles[key] = {self.defaultStyle}
end

function Logger:setNames(names)
   self.names = names
   self.empty = false
   self.nsymbols = #names
   self.order = {}
   for k, name in ipairs(names) do
      addColumn(self, k, name)
      self.idx[name] = k
   end
   self.file:write('\n')
   self.file:flush()
   return self
end

function Logger:add(symbols)
   if self.empty then
      self.empty = false
      self.nsymbols = #symbols
      for k in pairs(symbols) do
         addColumn(self, k, k)
         self.names[k] = k
      end
      self.idx = self.names
      self.file:write('\n')
   end
   -- values by column key; a name given to setNames works as a key too
   local row = {}
   for k, v in pairs(symbols) do
      local key = self.symbols[k] and k or self.idx[k]
      if key == nil or self.symbols[key] == nil then
         error('optim.Logger:add: unknown column ' .. tostring(k) .. ' (the columns are set by setNames or the first add)', 2)
      end
      if type(v) ~= 'number' and type(v) ~= 'string' then
         error('optim.Logger:add: column ' .. tostring(k) .. ' got a ' .. type(v) .. '; only numbers and strings can be logged', 2)
      end
      row[key] = v
   end
   -- a column without a value in this row is skipped, as Torch7 does
   for _, key in ipairs(self.order) do
      local v = row[key]
      if type(v) == 'number' then
         self.file:write(string.format('%11.4e', v) .. '\t')
      elseif v ~= nil then
         self.file:write(v .. '\t')
      end
   end
   self.file:write('\n')
   self.file:flush()
   for key, v in pairs(row) do table.insert(self.symbols[key], v) end
end

function Logger:style(symbols)
   for name, style in pairs(symbols) do
      local key = self.symbols[name] and name or self.idx[name] or name
      if type(style) == 'string' then
         self.styles[key] = {style}
      elseif type(style) == 'table' then
         self.styles[key] = style
      else
         error('optim.Logger:style: the style of ' .. tostring(name) .. ' must be a string or a table of strings', 2)
      end
   end
   return self
end

function Logger:setlogscale(state)
   self.logscale = state
end

function Logger:display(state)
   self.showPlot = state
end

---------------------------------------------------------------- SVG

local function xmlEscape(s)
   return (tostring(s):gsub('[&<>"\']', {['&'] = '&amp;', ['<'] = '&lt;', ['>'] = '&gt;', ['"'] = '&quot;', ["'"] = '&#39;'}))
end

-- about five round tick values covering [lo, hi]
local function ticks(lo, hi)
   local span = hi - lo
   local step = 10 ^ math.floor(math.log10(span / 5))
   for _, m in ipairs{1, 2, 5, 10} do
      if span / (step * m) <= 6 then step = step * m; break end
   end
   local out = {}
   local v = math.ceil(lo / step) * step
   while v <= hi + step * 1e-9 do
      out[#out + 1] = math.abs(v) < step * 1e-9 and 0 or v
      v = v + step
   end
   return out
end

local COLORS = {'#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2'}

-- series: list of {label = s, values = {numbers}, style = s}
local function writeSVG(path, title, series, logscale)
   local W, H = 800, 500
   local left, right, top, bottom = 80, 190, 40, 50
   local pw, ph = W - left - right, H - top - bottom

   local function ty(v) if logscale then return v > 0 and math.log10(v) or nil end return v end
   local nmax, lo, hi = 1, math.huge, -math.huge
   for _, s in ipairs(series) do
      nmax = math.max(nmax, #s.values)
      for _, v in ipairs(s.values) do
         local y = ty(v)
         if y and y == y and math.abs(y) ~= math.huge then lo, hi = math.min(lo, y), math.max(hi, y) end
      end
   end
   if lo > hi then lo, hi = 0, 1 end
   if lo == hi then lo, hi = lo - 1, hi + 1 end
   local pad = (hi - lo) * 0.05
   lo, hi = lo - pad, hi + pad
   local function px(i) return left + (nmax > 1 and (i - 1) / (nmax - 1) or 0.5) * pw end
   local function py(y) return top + (hi - y) / (hi - lo) * ph end

   local out = {}
   local function put(...) out[#out + 1] = string.format(...) end
   put('<?xml version="1.0" encoding="UTF-8"?>\n')
   put('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">\n', W, H, W, H)
   put('<rect x="0" y="0" width="%d" height="%d" fill="white"/>\n', W, H)
   put('<text x="%g" y="24" text-anchor="middle" font-size="14">%s</text>\n', left + pw / 2, xmlEscape(title))
   -- grid and axes
   for _, v in ipairs(ticks(lo, hi)) do
      local y = py(v)
      local label = logscale and string.format('%.3g', 10 ^ v) or string.format('%.4g', v)
      put('<line x1="%g" y1="%.2f" x2="%g" y2="%.2f" stroke="#dddddd"/>\n', left, y, left + pw, y)
      put('<text x="%g" y="%.2f" text-anchor="end" dominant-baseline="middle">%s</text>\n', left - 6, y, label)
   end
   for _, v in ipairs(ticks(1, math.max(nmax, 2))) do
      if v >= 1 and v <= nmax and v == math.floor(v) then
         local x = px(v)
         put('<line x1="%.2f" y1="%g" x2="%.2f" y2="%g" stroke="#dddddd"/>\n', x, top, x, top + ph)
         put('<text x="%.2f" y="%g" text-anchor="middle">%d</text>\n', x, top + ph + 18, v)
      end
   end
   put('<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="black"/>\n', left, top, pw, ph)

   for n, s in ipairs(series) do
      local color = COLORS[(n - 1) % #COLORS + 1]
      local pts = {}
      for i, v in ipairs(s.values) do
         local y = ty(v)
         if y and y == y and math.abs(y) ~= math.huge then pts[#pts + 1] = {px(i), py(y)} end
      end
      local st = s.style
      local line = not (st == '+' or st == '.' or st == '|')
      local crosses = st == '+' or st == '+-'
      if line and #pts > 0 then
         local coords = {}
         for _, p in ipairs(pts) do coords[#coords + 1] = string.format('%.2f,%.2f', p[1], p[2]) end
         put('<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>\n', color, table.concat(coords, ' '))
      end
      for _, p in ipairs(pts) do
         if crosses then
            put('<path d="M%.2f %.2fh8M%.2f %.2fv8" stroke="%s"/>\n', p[1] - 4, p[2], p[1], p[2] - 4, color)
         elseif st == '.' then
            put('<circle cx="%.2f" cy="%.2f" r="1.5" fill="%s"/>\n', p[1], p[2], color)
         elseif st == '|' then
            put('<line x1="%.2f" y1="%.2f" x2="%.2f" y2="%.2f" stroke="%s" stroke-width="3"/>\n', p[1], top + ph, p[1], p[2], color)
         end
      end
      local ly = top + 10 + (n - 1) * 18
      put('<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="3"/>\n', left + pw + 12, ly, left + pw + 32, ly, color)
      put('<text x="%g" y="%g" dominant-baseline="middle">%s</text>\n', left + pw + 38, ly, xmlEscape(s.label))
   end
   put('</svg>\n')

   local f, why = io.open(path, 'w')
   if not f then error('optim.Logger:plot: cannot write ' .. path .. ' (' .. tostring(why) .. ')', 3) end
   f:write(table.concat(out))
   f:close()
end

function Logger:plot(...)
   local keys = {}
   local wanted = {...}
   if #wanted == 0 then
      for _, key in ipairs(self.order) do keys[#keys + 1] = key end
   else
      for _, name in ipairs(wanted) do
         local key = self.symbols[name] and name or self.idx[name]
         if key == nil or self.symbols[key] == nil then
            error('optim.Logger:plot: no column named ' .. tostring(name), 2)
         end
         keys[#keys + 1] = key
      end
   end

   local series = {}
   for _, key in ipairs(keys) do
      local values = {}
      for _, v in ipairs(self.symbols[key]) do
         if type(v) == 'number' then values[#values + 1] = v end
      end
      if #values > 1 then
         for _, st in ipairs(self.styles[key] or {self.defaultStyle}) do
            series[#series + 1] = {label = self.names[key] or key, values = values, style = st}
         end
      end
   end
   if #series == 0 then return end
   if not self.svgfile then
      if not self.warned then
         print('<Logger> logging to stdout: there is no file to write the plot next to')
         self.warned = true
      end
      return
   end
   writeSVG(self.svgfile, self.name, series, self.logscale)
end
