-- sys: Torch7's small system package (the global `sys`, which `th` loaded):
-- wall-clock timing, shell commands, the OS name, colours.
--
--   sys.clock() (seconds, wall clock)   sys.tic() / sys.toc([verbose])
--   sys.sleep(s) / sys.usleep(us)       sys.execute(cmd) / sys.fexecute(cmd [, what]) -> output
--   sys.uname() / sys.OS ('linux', 'macos', '?')       sys.ls / ll / la / lla([dir])
--   sys.fpath() -> folder, name of the calling file     sys.split(str, pattern), sys.isNaN(x)
--   sys.COLORS (sys.colors)              sys.dirname / sys.concat / sys.filep / sys.dirp (paths)
local ffi = require 'ffi'
local paths = require 'paths'

local sys = rawget(_G, 'sys') or {}
_G.sys = sys

pcall(ffi.cdef, 'typedef struct sys_timespec { int64_t tv_sec; int64_t tv_nsec; } sys_timespec;')
pcall(ffi.cdef, 'int clock_gettime(int, sys_timespec *);')
pcall(ffi.cdef, 'int nanosleep(const sys_timespec *, sys_timespec *);')
local CLOCK_REALTIME = 0
local now = ffi.new('sys_timespec')

function sys.clock()
   ffi.C.clock_gettime(CLOCK_REALTIME, now)
   return tonumber(now.tv_sec) + tonumber(now.tv_nsec) * 1e-9
end

function sys.usleep(us)
   local t = ffi.new('sys_timespec')
   t.tv_sec = math.floor(us / 1e6)
   t.tv_nsec = math.floor((us - tonumber(t.tv_sec) * 1e6) * 1000)
   ffi.C.nanosleep(t, nil)
end
function sys.sleep(seconds) sys.usleep(seconds * 1e6) end

local started
function sys.tic() started = sys.clock() end
function sys.toc(verbose)
   if not started then error('sys.toc: call sys.tic() first', 2) end
   local dt = sys.clock() - started
   if verbose then print(dt) end
   return dt
end

local function trim(s) return (s:gsub('^%s+', ''):gsub('%s+$', '')) end

-- The output (stdout and stderr) of a shell command, trimmed.
function sys.execute(cmd)
   local f = assert(io.popen(cmd .. ' 2>&1'))
   local out = f:read('*a')
   f:close()
   return trim(out)
end

-- The same through a temporary file; `what` is the io read format ('*a' by default).
function sys.fexecute(cmd, what)
   local tmp = os.tmpname()
   os.execute(cmd .. ' > ' .. tmp .. ' 2>&1')
   local f = assert(io.open(tmp))
   local out = f:read(what or '*a') or ''
   f:close()
   os.remove(tmp)
   return trim(out)
end

function sys.uname()
   if ffi.os == 'Linux' then return 'linux' elseif ffi.os == 'OSX' then return 'macos' end
   return '?'
end
sys.OS = sys.uname()

for name, flags in pairs {ls = '', ll = ' -l', la = ' -a', lla = ' -la'} do
   sys[name] = function(d) return sys.execute('ls' .. flags .. ' ' .. (d or '')) end
end

sys.prefix = paths.install_prefix

-- The folder and name of the file calling sys.fpath().
function sys.fpath()
   local source = debug.getinfo(2, 'S').source:gsub('^@', '')
   if source:sub(1, 1) ~= '/' then source = paths.concat(paths.cwd(), source) end
   return paths.dirname(source), paths.basename(source)
end

-- str cut at each match of the Lua pattern `pat` (empty leading piece dropped).
function sys.split(str, pat)
   local out, pos = {}, 1
   while true do
      local s, e = str:find(pat, pos)
      if not s or e < s then break end
      if s > 1 or pos > 1 then out[#out + 1] = str:sub(pos, s - 1) end
      pos = e + 1
   end
   if pos <= #str then out[#out + 1] = str:sub(pos) end
   return out
end

function sys.isNaN(x) return x ~= x end

sys.COLORS = require 'sys.colors'
sys.dirname, sys.concat, sys.filep, sys.dirp = paths.dirname, paths.concat, paths.filep, paths.dirp

return sys
