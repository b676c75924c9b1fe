-- Streaming reader of a .caffemodel: a NetParameter in protobuf's binary (wire) format.
--
-- Only what loading needs is decoded: each layer's name, type and blobs, from the new `layer`
-- field (100, LayerParameter) and the old `layers` field (2, V1LayerParameter). Everything else is
-- skipped by its wire type. The file is read in chunks, and the float data of a blob is copied
-- from the file straight into a FloatTensor, so a 500 MB VGG file never sits in one Lua string;
-- blobs of layers the caller does not ask for are skipped with a seek.
-- Every length is checked against its enclosing message and the file size before anything is
-- read, so a truncated or corrupt file ends in an error naming the file and the byte offset.
local ffi = require 'ffi'
local torch = require 'torch'

local M = {}

local CHUNK = 1048576   -- bytes read from the file at a time

-- field numbers of caffe.proto
local NET_LAYERS_V1, NET_LAYER = 2, 100
local V1 = {name = 4, type = 5, blobs = 6}
local NEW = {name = 1, type = 2, blobs = 7}
local BLOB = {num = 1, channels = 2, height = 3, width = 4, data = 5, shape = 7, double_data = 8}
local SHAPE_DIM = 1

local Reader = {}
Reader.__index = Reader

local function openReader(path)
   local f, err = io.open(path, 'rb')
   if not f then error(string.format("loadcaffe: cannot open the caffemodel '%s' (%s)", path, err), 0) end
   local size = f:seek('end')
   f:seek('set', 0)
   return setmetatable({f = f, path = path, size = size, buf = '', bufStart = 0, bufPos = 1}, Reader)
end

-- the absolute offset (0-based) of the next byte
function Reader:pos()
   return self.bufStart + self.bufPos - 1
end

function Reader:fail(msg, at)
   error(string.format("loadcaffe: the caffemodel '%s' is corrupt or truncated: %s (at byte %d of %d)",
                       self.path, msg, at or self:pos(), self.size), 0)
end

function Reader:byte(limit)
   if self:pos() >= limit then
      if limit >= self.size then self:fail('the file ends inside a field') end
      self:fail('a field runs past the end of its message')
   end
   if self.bufPos > #self.buf then
      self.bufStart = self:pos()
      self.buf = self.f:read(CHUNK) or ''
      self.bufPos = 1
      if #self.buf == 0 then self:fail('the file ends early') end
   end
   local b = self.buf:byte(self.bufPos)
   self.bufPos = self.bufPos + 1
   return b
end

-- an unsigned varint as a Lua number (exact up to 2^53, enough for sizes, tags and dims)
function Reader:varint(limit)
   local value, scale = 0, 1
   for _ = 1, 10 do
      local b = self:byte(limit)
      value = value + (b % 128) * scale
      if b < 128 then return value end
      scale = scale * 128
   end
   self:fail('a number runs over 10 bytes')
end

-- a length prefix, checked to end inside `limit`; returns the absolute end offset
function Reader:length(limit)
   local n = self:varint(limit)
   local stop = self:pos() + n
   if stop > limit then
      if limit >= self.size then
         self:fail(string.format('a field of %d bytes runs past the end of the file', n))
      end
      self:fail(string.format('a field of %d bytes runs past the end of its message', n))
   end
   return stop
end

function Reader:seekTo(offset)
   local bufEnd = self.bufStart + #self.buf
   if offset >= self.bufStart and offset <= bufEnd then
      self.bufPos = offset - self.bufStart + 1
   else
      self.f:seek('set', offset)
      self.buf, self.bufStart, self.bufPos = '', offset, 1
   end
end

-- copies bytes [pos, stop) into memory at `dst` (a uint8_t pointer)
function Reader:copyTo(dst, stop)
   local n = stop - self:pos()
   local have = math.min(#self.buf - self.bufPos + 1, n)
   if have > 0 then
      ffi.copy(dst, ffi.cast('const uint8_t *', self.buf) + (self.bufPos - 1), have)
      self.bufPos = self.bufPos + have
   end
   local done = have
   while done < n do
      local piece = self.f:read(math.min(16 * CHUNK, n - done))
      if not piece or #piece == 0 then self:fail('the file ends early') end
      ffi.copy(dst + done, piece, #piece)
      done = done + #piece
   end
   if have < n then self.buf, self.bufStart, self.bufPos = '', stop, 1 end
end

function Reader:string(stop)
   local n = stop - self:pos()
   local tmp = ffi.new('uint8_t[?]', math.max(n, 1))
   self:copyTo(tmp, stop)
   return ffi.string(tmp, n)
end

function Reader:skip(wire, limit)
   if wire == 0 then
      self:varint(limit)
   elseif wire == 1 or wire == 5 then
      local stop = self:pos() + (wire == 1 and 8 or 4)
      if stop > limit then self:fail('a fixed-size field runs past the end of its message') end
      self:seekTo(stop)
   elseif wire == 2 then
      self:seekTo(self:length(limit))
   else
      -- groups (3, 4) are not used by caffe.proto; 6 and 7 do not exist
      self:fail(string.format('unexpected wire type %d', wire))
   end
end

-- the next tag: field number and wire type
function Reader:tag(limit)
   local key = self:varint(limit)
   local field, wire = math.floor(key / 8), key % 8
   if field == 0 then self:fail('a field numbered 0') end
   return field, wire
end

-- packed or single numbers of a repeated numeric field, appended to `out`
local function readNumbers(r, wire, limit, out)
   if wire == 2 then
      local stop = r:length(limit)
      while r:pos() < stop do out[#out + 1] = r:varint(stop) end
   elseif wire == 0 then
      out[#out + 1] = r:varint(limit)
   else
      r:fail(string.format('wire type %d where numbers were expected', wire))
   end
end

-- packed floats or doubles (wire type 2, `width` 4 or 8 bytes each) into a new FloatTensor
-- appended to `chunks`; a single unpacked value (wire type 5 or 1) into the list `singles`
local function readFloats(r, wire, limit, chunks, singles, width)
   if wire == 2 then
      local stop = r:length(limit)
      local bytes = stop - r:pos()
      if bytes % width ~= 0 then r:fail(string.format('packed data of %d bytes is not a whole number of values', bytes)) end
      local n = bytes / width
      local t = width == 4 and torch.FloatTensor(n) or torch.DoubleTensor(n)
      if n > 0 then r:copyTo(ffi.cast('uint8_t *', t:data()), stop) end
      chunks[#chunks + 1] = t:float()   -- the same tensor for floats
   elseif (wire == 5 and width == 4) or (wire == 1 and width == 8) then
      local stop = r:pos() + width
      if stop > limit then r:fail('a number runs past the end of its message') end
      local tmp = ffi.new(width == 4 and 'float[1]' or 'double[1]')
      r:copyTo(ffi.cast('uint8_t *', tmp), stop)
      singles[#singles + 1] = tmp[0]
   else
      r:fail(string.format('wire type %d where blob data was expected', wire))
   end
end

-- one BlobProto: {data = FloatTensor (1-D), shape = {dims...}}
local function readBlob(r, stop)
   local chunks, singles, dims, legacy = {}, {}, nil, {}
   while r:pos() < stop do
      local field, wire = r:tag(stop)
      if field == BLOB.data then
         readFloats(r, wire, stop, chunks, singles, 4)
      elseif field == BLOB.double_data then
         readFloats(r, wire, stop, chunks, singles, 8)
      elseif field == BLOB.shape and wire == 2 then
         local shapeStop = r:length(stop)
         dims = {}
         while r:pos() < shapeStop do
            local f2, w2 = r:tag(shapeStop)
            if f2 == SHAPE_DIM then readNumbers(r, w2, shapeStop, dims) else r:skip(w2, shapeStop) end
         end
      elseif field >= BLOB.num and field <= BLOB.width and wire == 0 then
         legacy[field] = r:varint(stop)
      else
         r:skip(wire, stop)
      end
   end
   if #singles > 0 then
      local t = torch.FloatTensor(#singles)
      for i = 1, #singles do t[i] = singles[i] end
      chunks[#chunks + 1] = t
   end
   local data
   if #chunks == 1 then
      data = chunks[1]
   elseif #chunks == 0 then
      data = torch.FloatTensor()
   else
      data = torch.cat(chunks, 1)
   end
   if not dims then
      -- the deprecated num/channels/height/width, 0 when absent
      dims = {legacy[1] or 0, legacy[2] or 0, legacy[3] or 0, legacy[4] or 0}
   end
   return {data = data, shape = dims}
end

-- one layer: {name, type, blobs = {...}}; blobs are read only when wanted(name) says so
local function readLayer(r, stop, fields, wanted)
   local layer = {blobs = {}}
   local blobSpans = {}
   while r:pos() < stop do
      local field, wire = r:tag(stop)
      if field == fields.name and wire == 2 then
         layer.name = r:string(r:length(stop))
      elseif field == fields.type and fields == NEW and wire == 2 then
         layer.type = r:string(r:length(stop))
      elseif field == fields.type and fields == V1 and wire == 0 then
         layer.type = r:varint(stop)
      elseif field == fields.blobs and wire == 2 then
         -- the name may come after the blobs: note where they are, read them at the end
         local blobStop = r:length(stop)
         blobSpans[#blobSpans + 1] = {r:pos(), blobStop}
         r:seekTo(blobStop)
      else
         r:skip(wire, stop)
      end
   end
   if #blobSpans > 0 and wanted(layer.name) then
      for i, span in ipairs(blobSpans) do
         r:seekTo(span[1])
         layer.blobs[i] = readBlob(r, span[2])
      end
      r:seekTo(stop)
   end
   return layer
end

-- Reads `path` and returns a table mapping layer names to their layer {name, type, blobs}
-- (the first layer of a name that has blobs wins); `wanted(name)` chooses whose blobs are read.
function M.read(path, wanted)
   wanted = wanted or function() return true end
   local r = openReader(path)
   local ok, result = pcall(function()
      local layers, count = {}, 0
      while r:pos() < r.size do
         local field, wire = r:tag(r.size)
         if (field == NET_LAYER or field == NET_LAYERS_V1) and wire == 2 then
            local stop = r:length(r.size)
            local layer = readLayer(r, stop, field == NET_LAYER and NEW or V1, wanted)
            count = count + 1
            if layer.name and (not layers[layer.name] or #layers[layer.name].blobs == 0) then
               layers[layer.name] = layer
            end
         else
            r:skip(wire, r.size)
         end
      end
      return {layers = layers, count = count}
   end)
   r.f:close()
   if not ok then error(result, 0) end
   return result
end

return M
