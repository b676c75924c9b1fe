-- torch.DiskFile(path, [mode = 'r' | 'w' | 'rw'], [quiet]): a torch.File on
-- a disk file, through C stdio (bulk storage data goes straight between the
-- FILE buffer and the storage memory, without Lua strings).
local torch = ...
local ffi = require 'ffi'

-- Own symbol names (asm aliases), so no other ffi.cdef of stdio can clash.
pcall(ffi.cdef, [[
typedef struct lts_FILE lts_FILE;
lts_FILE *lts_fopen(const char *path, const char *mode) __asm__("fopen");
int lts_fclose(lts_FILE *f) __asm__("fclose");
size_t lts_fread(void *ptr, size_t size, size_t n, lts_FILE *f) __asm__("fread");
size_t lts_fwrite(const void *ptr, size_t size, size_t n, lts_FILE *f) __asm__("fwrite");
int lts_fseeko(lts_FILE *f, int64_t off, int whence) __asm__("fseeko");
int64_t lts_ftello(lts_FILE *f) __asm__("ftello");
int lts_fflush(lts_FILE *f) __asm__("fflush");
int lts_fgetc(lts_FILE *f) __asm__("fgetc");
int lts_ungetc(int c, lts_FILE *f) __asm__("ungetc");
]])
local C = ffi.C
local SEEK_SET, SEEK_END = 0, 2

local DiskFile, File = torch.class('torch.DiskFile', 'torch.File')

local modes = {r = {'rb', true, false}, w = {'wb', false, true}, rw = {'r+b', true, true}}

function DiskFile:__init(name, mode, quiet)
   if type(name) ~= 'string' then error('torch.DiskFile: file name (string) expected', 3) end
   mode = mode or 'r'
   local m = modes[mode]
   if not m then error("torch.DiskFile: file mode should be 'r', 'w' or 'rw'", 3) end
   local fp = C.lts_fopen(name, m[1])
   if fp == nil and mode == 'rw' then fp = C.lts_fopen(name, 'w+b') end
   if fp == nil then
      if quiet then return end
      error(string.format("cannot open <%s> in mode %s", name, mode), 3)
   end
   self._fp = ffi.gc(fp, C.lts_fclose)
   self._name = name
   File._initFile(self, m[2], m[3])
   if m[2] then
      -- the size is needed to check lengths read from the file
      C.lts_fseeko(fp, 0, SEEK_END)
      local len = tonumber(C.lts_ftello(fp))
      C.lts_fseeko(fp, 0, SEEK_SET)
      if len < 0 then len = 0 end
      self._len = len
   end
   self._lastWrite = false
end

-- torch.DiskFile(name, mode, true) gives nil when the file cannot be opened.
do
   local ctorMeta = getmetatable(torch.DiskFile)
   local mt = torch.getmetatable('torch.DiskFile')
   ctorMeta.__call = function(_, ...)
      local self = setmetatable({}, mt)
      self:__init(...)
      if not self._fp then return nil end
      return self
   end
end

function DiskFile:name() return self._name end

-- stdio needs a seek between a write and a read on the same stream.
local function direction(self, writing)
   if self._lastWrite ~= writing then
      C.lts_fseeko(self._fp, self._pos, SEEK_SET)
      self._lastWrite = writing
   end
end

function DiskFile:_rawread(ptr, n)
   direction(self, false)
   local got = tonumber(C.lts_fread(ptr, 1, n, self._fp))
   self._pos = self._pos + got
   return got
end

function DiskFile:_rawwrite(ptr, n)
   direction(self, true)
   local put = tonumber(C.lts_fwrite(ptr, 1, n, self._fp))
   self._pos = self._pos + put
   if self._pos > self._len then self._len = self._pos end
   if put < n then
      if self._quiet then self._hasError = true
      else error(string.format('write error: wrote %d bytes instead of %d to <%s>', put, n, self._name), 0) end
   end
   return put
end

function DiskFile:_getc()
   direction(self, false)
   local c = C.lts_fgetc(self._fp)
   if c < 0 then return nil end
   self._pos = self._pos + 1
   return c
end

function DiskFile:_ungetc()
   C.lts_fseeko(self._fp, self._pos - 1, SEEK_SET)
   self._pos = self._pos - 1
end

function DiskFile:_seek(pos)
   C.lts_fseeko(self._fp, pos, SEEK_SET)
end

function DiskFile:_flush() C.lts_fflush(self._fp) end

function DiskFile:_close()
   local fp = self._fp
   self._fp = nil
   ffi.gc(fp, nil)
   C.lts_fclose(fp)
end
