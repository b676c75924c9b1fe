-- paths: Torch7's file-name and directory package (the global `paths`, which
-- `th` loaded for every script), written for luatorch on top of lfs.
--
--   paths.filep(p) / dirp(p)            paths.basename(p [, suffix]) / dirname(p) / extname(p)
--   paths.concat([p1, ..., pn])         absolute, '.'/'..' resolved; no argument: the current folder
--   paths.cwd() / execdir() / home      paths.dir(d) -> names (with '.' and '..') or nil
--   paths.files(d [, pattern | filter]) / iterdirs(d) / iterfiles(d)
--   paths.mkdir(d) / rmdir(d) / rmall(d, 'yes')    paths.tmpname() (removed when Lua closes)
--   paths.uname() -> sysname, nodename, machine     paths.is_win() / is_mac()
--   paths.thisfile([arg [, depth]]) / dofile(f)     paths.findprogram(name, ...)
--   paths.install_* : where luatorch's Lua packages live
local lfs = require 'lfs'
local ffi = require 'ffi'

local paths = rawget(_G, 'paths') or {}
_G.paths = paths

local function attr(path)
   return type(path) == 'string' and lfs.attributes(path, 'mode') or nil
end

function paths.filep(path) return attr(path) ~= nil and attr(path) ~= 'directory' end
function paths.dirp(path) return attr(path) == 'directory' end

-- The last name of `path` (a trailing '/' ignored), without `suffix` ('.ext' or 'ext') if it ends so.
function paths.basename(path, suffix)
   local base = path:gsub('/+$', ''):match('[^/]*$')
   if base == '' and path:match('^/') then base = '/' end
   if suffix and suffix ~= '' then
      suffix = suffix:gsub('^%.', '')
      if suffix ~= '' and #base > #suffix + 1 and base:sub(-#suffix - 1) == '.' .. suffix then
         base = base:sub(1, -#suffix - 2)
      end
   end
   return base
end

-- The folder holding `path`: '.' for a bare name, '/' for a name at the root.
function paths.dirname(path)
   local trimmed = path:gsub('/+$', '')
   if trimmed == '' then return path:match('^/') and '/' or '.' end
   local dir = trimmed:match('^(.*)/[^/]*$')
   if dir == nil then return '.' end
   dir = dir:gsub('/+$', '')
   if dir == '' then return '/' end
   return dir
end

-- The extension of the last name in `path`, nil if it has none.
function paths.extname(path)
   return paths.basename(path):match('%.([^.]*)$')
end

function paths.cwd() return lfs.currentdir() or '.' end

-- Join names onto `from`, resolving '.' and '..'; an absolute name starts over.
local function join(from, name)
   local parts = {}
   if name:sub(1, 1) ~= '/' then
      for p in from:gmatch('[^/]+') do parts[#parts + 1] = p end
   end
   for p in name:gmatch('[^/]+') do
      if p == '..' then parts[#parts] = nil
      elseif p ~= '.' then parts[#parts + 1] = p end
   end
   return '/' .. table.concat(parts, '/')
end

function paths.concat(...)
   local out = paths.cwd()
   for i = 1, select('#', ...) do
      local name = select(i, ...)
      if type(name) ~= 'string' then
         error(string.format("bad argument #%d to 'concat' (string expected, got %s)", i, type(name)), 2)
      end
      out = join(out, name)
   end
   return out
end

function paths.execdir()
   local ok, exe = pcall(lfs._readlink, '/proc/self/exe')
   if ok and type(exe) == 'string' then return paths.dirname(exe) end
   return nil
end

function paths.dir(d)
   if not paths.dirp(d) then return nil end
   local ok, names = pcall(function()
      local t = {}
      for name in lfs.dir(d) do t[#t + 1] = name end
      return t
   end)
   return ok and names or nil
end

-- true, or nil, 'PATH: reason' and errno, as Torch7's paths; mkdir makes the missing parents first (Torch7's did:
-- pix2pix's test.lua counts on it for results/<name>/<epoch>_net_G_val)
local function result(path, done, message, errno)   -- (lfs's answer: true, or nil, strerror, errno)
   if done then return true end
   return nil, path .. ': ' .. tostring(message), errno
end

function paths.mkdir(d)
   local parent = paths.dirname(d)
   if parent and parent ~= d and not paths.dirp(parent) then paths.mkdir(parent) end
   return result(d, lfs.mkdir(d))
end
function paths.rmdir(d) return result(d, lfs.rmdir(d)) end

-- Temporary names, removed when this Lua state closes.
local tmpnames = {}
local remover = newproxy(true)
getmetatable(remover).__gc = function()
   for _, name in ipairs(tmpnames) do os.remove(name) end
end
paths._tmpnameRemover = remover  -- keeps it alive with the module
function paths.tmpname()
   local name = os.tmpname()
   tmpnames[#tmpnames + 1] = name
   return name
end

pcall(ffi.cdef, [[typedef struct paths_utsname { char sysname[65], nodename[65], release[65], version[65],
                  machine[65], domainname[65]; } paths_utsname;]])
pcall(ffi.cdef, 'int uname(paths_utsname *);')
function paths.uname()
   local u = ffi.new('paths_utsname')
   if ffi.C.uname(u) ~= 0 then return 'Unknown' end
   return ffi.string(u.sysname), ffi.string(u.nodename), ffi.string(u.machine)
end
function paths.is_win() return false end
function paths.is_mac() return (paths.uname()) == 'Darwin' end

paths.home = os.getenv('HOME') or '.'

-- paths.files(d [, f]): the names in d for which f(name) is true (a string f is a pattern).
function paths.files(d, f)
   local names = paths.dir(d) or {}
   if type(f) == 'string' then
      local pattern = f
      f = function(name) return name:find(pattern) ~= nil end
   elseif f ~= nil and type(f) ~= 'function' then
      error('paths.files: optional argument 2 must be a function or a pattern, got ' .. type(f), 2)
   end
   local i = 0
   return function()
      while true do
         i = i + 1
         local name = names[i]
         if name == nil or f == nil or f(name) then return name end
      end
   end
end

function paths.iterdirs(d)
   return paths.files(d, function(name)
      return name ~= '.' and name ~= '..' and paths.dirp(paths.concat(d, name))
   end)
end

function paths.iterfiles(d)
   return paths.files(d, function(name) return paths.filep(paths.concat(d, name)) end)
end

-- Remove a file or a whole tree; the second argument must be 'yes'.
function paths.rmall(d, confirm)
   if confirm ~= 'yes' then return nil, "missing second argument ('yes')" end
   if paths.filep(d) or lfs.symlinkattributes(d, 'mode') == 'link' then return os.remove(d) end
   if not paths.dirp(d) then return nil, 'not a file or directory', d end
   for name in paths.files(d) do
      if name ~= '.' and name ~= '..' then
         local full = paths.concat(d, name)
         local ok, err = paths.rmall(full, 'yes')
         if not ok then return ok, err, full end
      end
   end
   return lfs.rmdir(d)
end

-- The file of the function `depth` levels up (2: the caller), or `arg` relative to its folder.
function paths.thisfile(arg, depth)
   local info = debug.getinfo(depth or 2, 'S')
   local file = info and info.source
   if type(file) == 'string' and file:sub(1, 1) == '@' then file = paths.concat(file:sub(2)) else file = nil end
   if type(arg) == 'string' then
      return file and paths.concat(paths.dirname(file), arg) or arg
   end
   return file
end

-- dofile relative to the calling file's folder.
function paths.dofile(f, depth)
   local here = paths.thisfile(nil, 1 + (depth or 2))
   if here then f = paths.concat(paths.dirname(here), f) end
   return dofile(f)
end

function paths.findprogram(...)
   for i = 1, select('#', ...) do
      local exe = select(i, ...)
      for dir in (os.getenv('PATH') or '.'):gmatch('[^:]+') do
         local full = paths.concat(dir, exe)
         if paths.filep(full) then return full end
      end
   end
   return nil
end

-- paths.require(name): Torch7 loaded a C library by name; luatorch's are FFI modules.
function paths.require(name) return require(name) end

-- Where luatorch's Lua packages are (Torch7: its installation tree).
do
   local here = debug.getinfo(1, 'S').source:match('^@(.*)/paths/init%.lua$')
   local luadir = here and paths.concat(here) or paths.cwd()
   local prefix = paths.dirname(luadir)
   paths.install_prefix = prefix
   paths.install_lua_path = luadir
   paths.install_lua_cpath = luadir
   paths.install_bin = paths.execdir() or prefix
   paths.install_lib = luadir
   paths.install_share = luadir
   paths.install_include = paths.concat(prefix, 'native', 'include')
   paths.install_man, paths.install_hlp, paths.install_html, paths.install_cmake = prefix, prefix, prefix, prefix
end

return paths
