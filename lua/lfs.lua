-- lfs: LuaFileSystem's API (the `lfs` module Torch7 distributions shipped),
-- written for luatorch over LuaJIT's FFI and the C library (Linux: statx,
-- opendir/readdir, ...), so that it loads in every luatorch Lua state.
--
--   for name in lfs.dir('.') do ... end        lfs.attributes(path [, name | table])
--   lfs.mkdir / rmdir / chdir / currentdir      lfs.symlinkattributes(path [, name])
--   lfs.touch(path [, atime [, mtime]])         lfs.link(old, new [, symlink])
--   lfs.lock(file, 'r'|'w' [, start [, len]]) / lfs.unlock(file [, start [, len]])
--   lfs.lock_dir(path) -> lock (lock:free())    lfs.setmode(file, mode) -> true, 'binary'
--
-- Failures return nil, message, errno as LuaFileSystem does (lfs.dir raises).
local ffi = require 'ffi'
local bit = require 'bit'

local lfs = {_VERSION = 'LuaFileSystem 1.8.0 (luatorch)',
             _DESCRIPTION = 'LuaFileSystem API over LuaJIT FFI', _COPYRIGHT = 'luatorch'}
_G.lfs = lfs   -- the Lua 5.1 build of LuaFileSystem set the global too

-- Declarations under names of our own, so that other cdefs of the same C
-- functions elsewhere cannot clash.
ffi.cdef [[
typedef struct lfs_statx_time { int64_t tv_sec; uint32_t tv_nsec; int32_t reserved; } lfs_statx_time;
typedef struct lfs_statx {
   uint32_t mask, blksize; uint64_t attributes;
   uint32_t nlink, uid, gid; uint16_t mode, spare0;
   uint64_t ino, size, blocks, attributes_mask;
   lfs_statx_time atime, btime, ctime, mtime;
   uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
   uint64_t spare2[14];
} lfs_statx;
typedef struct lfs_dirent { uint64_t d_ino; int64_t d_off; unsigned short d_reclen; unsigned char d_type;
                            char d_name[256]; } lfs_dirent;
typedef struct lfs_DIR lfs_DIR;
typedef struct lfs_timespec { int64_t tv_sec; int64_t tv_nsec; } lfs_timespec;
typedef struct lfs_flock { short l_type, l_whence; int64_t l_start, l_len; int32_t l_pid; } lfs_flock;
]]
local C = ffi.C
local decls = {
   statx = 'int statx(int, const char *, int, unsigned int, lfs_statx *)',
   opendir = 'lfs_DIR *opendir(const char *)',
   readdir = 'lfs_dirent *readdir(lfs_DIR *)',
   closedir = 'int closedir(lfs_DIR *)',
   mkdir = 'int mkdir(const char *, unsigned int)',
   rmdir = 'int rmdir(const char *)',
   chdir = 'int chdir(const char *)',
   getcwd = 'char *getcwd(char *, size_t)',
   strerror = 'char *strerror(int)',
   utimensat = 'int utimensat(int, const char *, const lfs_timespec *, int)',
   link = 'int link(const char *, const char *)',
   symlink = 'int symlink(const char *, const char *)',
   readlink = 'ssize_t readlink(const char *, char *, size_t)',
   unlink = 'int unlink(const char *)',
   fileno = 'int fileno(void *)',
   fcntl = 'int fcntl(int, int, ...)',
}
for name, decl in pairs(decls) do
   -- a declaration another module made first is fine: only the name matters to ffi.C
   pcall(ffi.cdef, decl .. ';')
end

local AT_FDCWD, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS = -100, 0x100, 0x7ff

local function failure(what)
   local errno = ffi.errno()
   local msg = ffi.string(C.strerror(errno))
   return nil, what and (what .. ': ' .. msg) or msg, errno
end

local function checkPath(fname, path, argn)
   if type(path) ~= 'string' then
      error(string.format("bad argument #%d to '%s' (string expected, got %s)", argn or 1, fname, type(path)), 3)
   end
end

local modes = {[0x8000] = 'file', [0x4000] = 'directory', [0xA000] = 'link', [0xC000] = 'socket',
               [0x1000] = 'named pipe', [0x2000] = 'char device', [0x6000] = 'block device'}

local function permissions(mode)
   local s = {}
   local bits = 'rwxrwxrwx'
   for i = 0, 8 do
      s[i + 1] = bit.band(mode, bit.lshift(1, 8 - i)) ~= 0 and bits:sub(i + 1, i + 1) or '-'
   end
   return table.concat(s)
end

-- glibc's makedev
local function devnum(major, minor)
   return bit.band(major, 0xfff) * 256 + bit.band(minor, 0xff) + bit.band(minor, 0xffffff00) * 4096
          + bit.band(major, 0xfffff000) * 4294967296
end

local function time(ts) return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9 end

local members = {
   mode = function(st) return modes[bit.band(st.mode, 0xF000)] or 'other' end,
   dev = function(st) return devnum(st.dev_major, st.dev_minor) end,
   ino = function(st) return tonumber(st.ino) end,
   nlink = function(st) return tonumber(st.nlink) end,
   uid = function(st) return tonumber(st.uid) end,
   gid = function(st) return tonumber(st.gid) end,
   rdev = function(st) return devnum(st.rdev_major, st.rdev_minor) end,
   access = function(st) return math.floor(time(st.atime)) end,
   modification = function(st) return math.floor(time(st.mtime)) end,
   change = function(st) return math.floor(time(st.ctime)) end,
   size = function(st) return tonumber(st.size) end,
   permissions = function(st) return permissions(st.mode) end,
   blocks = function(st) return tonumber(st.blocks) end,
   blksize = function(st) return tonumber(st.blksize) end,
}

local stbuf = ffi.new('lfs_statx')

local function attributes(fname, path, request, nofollow)
   checkPath(fname, path)
   if C.statx(AT_FDCWD, path, nofollow and AT_SYMLINK_NOFOLLOW or 0, STATX_BASIC_STATS, stbuf) ~= 0 then
      return failure('cannot obtain information from file \'' .. path .. '\'')
   end
   if type(request) == 'string' then
      local get = members[request]
      if request == 'target' and nofollow then return lfs._readlink(path) end
      if not get then error("invalid attribute name '" .. request .. "'", 3) end
      return get(stbuf)
   end
   local out = type(request) == 'table' and request or {}
   for name, get in pairs(members) do out[name] = get(stbuf) end
   if nofollow and out.mode == 'link' then out.target = lfs._readlink(path) end
   return out
end

function lfs.attributes(path, request) return attributes('attributes', path, request, false) end
function lfs.symlinkattributes(path, request) return attributes('symlinkattributes', path, request, true) end

function lfs._readlink(path)
   local size = 256
   while true do
      local buf = ffi.new('char[?]', size)
      local n = tonumber(C.readlink(path, buf, size))
      if n < 0 then return failure('cannot read link ' .. path) end
      if n < size then return ffi.string(buf, n) end
      size = size * 2
   end
end

-- lfs.dir(path): an iterator over the entry names (with '.' and '..'), and the
-- directory object (dir:next(), dir:close()) to pass it back.
local dirmeta = {}
dirmeta.__index = dirmeta
function dirmeta.next(self)
   if self.closed then error('calling next on a closed directory', 2) end
   local entry = C.readdir(self.handle)
   if entry == nil then
      self:close()
      return nil
   end
   return ffi.string(entry.d_name)
end
function dirmeta.close(self)
   if not self.closed then
      self.closed = true
      C.closedir(ffi.gc(self.handle, nil))
   end
   return true
end

function lfs.dir(path)
   checkPath('dir', path)
   local handle = C.opendir(path)
   if handle == nil then
      local _, msg = failure()
      error('cannot open ' .. path .. ': ' .. msg, 2)
   end
   local d = setmetatable({handle = ffi.gc(handle, C.closedir)}, dirmeta)
   return dirmeta.next, d
end

local function ok(rc, what)
   if rc == 0 then return true end
   return failure(what)
end

function lfs.mkdir(path, mode)
   checkPath('mkdir', path)
   return ok(C.mkdir(path, mode or 511), nil)  -- 0777, less the umask
end

function lfs.rmdir(path)
   checkPath('rmdir', path)
   return ok(C.rmdir(path), nil)
end

function lfs.chdir(path)
   checkPath('chdir', path)
   if C.chdir(path) == 0 then return true end
   local _, msg, errno = failure()
   return nil, 'Unable to change working directory to \'' .. path .. '\'\n' .. msg .. '\n', errno
end

function lfs.currentdir()
   local size = 4096
   while true do
      local buf = ffi.new('char[?]', size)
      if C.getcwd(buf, size) ~= nil then return ffi.string(buf) end
      if ffi.errno() ~= 34 then return failure() end  -- ERANGE: a longer buffer
      size = size * 2
   end
end

function lfs.touch(path, atime, mtime)
   checkPath('touch', path)
   local times = nil
   if atime ~= nil or mtime ~= nil then
      atime = atime or os.time()
      mtime = mtime or atime
      times = ffi.new('lfs_timespec[2]')
      times[0].tv_sec, times[1].tv_sec = atime, mtime
   end
   return ok(C.utimensat(AT_FDCWD, path, times, 0), nil)
end

function lfs.link(old, new, symbolic)
   checkPath('link', old, 1)
   checkPath('link', new, 2)
   return ok(symbolic and C.symlink(old, new) or C.link(old, new), nil)
end

function lfs.setmode(file, mode)
   -- POSIX files have no text/binary modes
   if mode ~= nil and mode ~= 'binary' and mode ~= 'text' then
      error("bad argument #2 to 'setmode' (invalid option '" .. tostring(mode) .. "')", 2)
   end
   return true, 'binary'
end

-- Byte-range locks (fcntl) on an open Lua file.
local F_SETLK, F_RDLCK, F_WRLCK, F_UNLCK = 6, 0, 1, 2
local function filedes(file)
   if io.type(file) ~= 'file' then error("bad argument #1 (file expected, got " .. io.type(file) .. ")", 3) end
   return C.fileno(ffi.cast('void *', file))  -- LuaJIT converts an io file to its FILE *
end

local function setlock(file, kind, start, len)
   local fl = ffi.new('lfs_flock[1]')  -- an array: passed to the variadic fcntl as a pointer
   fl[0].l_type, fl[0].l_whence, fl[0].l_start, fl[0].l_len = kind, 0, start or 0, len or 0
   return ok(C.fcntl(filedes(file), F_SETLK, fl), nil)
end

function lfs.lock(file, mode, start, len)
   local kind = ({r = F_RDLCK, w = F_WRLCK})[mode]
   if not kind then error("bad argument #2 to 'lock' ('r' or 'w' expected)", 2) end
   return setlock(file, kind, start, len)
end

function lfs.unlock(file, start, len) return setlock(file, F_UNLCK, start, len) end

-- lfs.lock_dir(dir): a lock held by the symbolic link dir/lockfile.lfs; nil,
-- 'File exists' while another holder has it.
local lockmeta = {}
lockmeta.__index = lockmeta
function lockmeta.free(self)
   if self.path then C.unlink(self.path); self.path = nil end
end

function lfs.lock_dir(path)
   checkPath('lock_dir', path)
   local lockfile = path .. '/lockfile.lfs'
   if C.symlink('lock', lockfile) ~= 0 then return failure() end
   return setmetatable({path = lockfile}, lockmeta)
end

return lfs
