-- torch.Timer: accumulated real (monotonic clock), user and system CPU time
-- of the process, in seconds, between resume()s and stop()s, as in Torch7.
local torch = ...
local ffi = require 'ffi'

-- Private names bound to the libc symbols with __asm__, so other modules'
-- declarations of the same functions cannot clash with these.
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } lt_timer_timespec;
typedef struct { long tv_sec; long tv_usec; } lt_timer_timeval;
typedef struct { lt_timer_timeval ru_utime; lt_timer_timeval ru_stime; long ru_rest[14]; } lt_timer_rusage;
int lt_timer_clock_gettime(int clk, lt_timer_timespec *ts) __asm__("clock_gettime");
int lt_timer_getrusage(int who, lt_timer_rusage *usage) __asm__("getrusage");
]]

local CLOCK_MONOTONIC, RUSAGE_SELF = 1, 0
local ts = ffi.new('lt_timer_timespec')
local ru = ffi.new('lt_timer_rusage')

local function realNow()
   ffi.C.lt_timer_clock_gettime(CLOCK_MONOTONIC, ts)
   return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function now()
   ffi.C.lt_timer_getrusage(RUSAGE_SELF, ru)
   return realNow(),
          tonumber(ru.ru_utime.tv_sec) + tonumber(ru.ru_utime.tv_usec) * 1e-6,
          tonumber(ru.ru_stime.tv_sec) + tonumber(ru.ru_stime.tv_usec) * 1e-6
end

-- Torch7's torch.tic() -> a time stamp in seconds; torch.toc(t) -> the
-- seconds elapsed since t (on the same clock as Timer's real time).
function torch.tic() return realNow() end

function torch.toc(t)
   if type(t) ~= 'number' then error('torch.toc: a time stamp from torch.tic() expected', 2) end
   return realNow() - t
end

local Timer = torch.class('torch.Timer')

local function start(self)
   self._startReal, self._startUser, self._startSys = now()
end

function Timer:__init()
   self._running = true
   self._real, self._user, self._sys = 0, 0, 0
   start(self)
end

-- Zero the totals; a running timer keeps running from now.
function Timer:reset()
   self._real, self._user, self._sys = 0, 0, 0
   start(self)
   return self
end

function Timer:stop()
   if self._running then
      local r, u, s = now()
      self._real = self._real + r - self._startReal
      self._user = self._user + u - self._startUser
      self._sys = self._sys + s - self._startSys
      self._running = false
   end
   return self
end

function Timer:resume()
   if not self._running then
      self._running = true
      start(self)
   end
   return self
end

function Timer:time()
   local real, user, sys = self._real, self._user, self._sys
   if self._running then
      local r, u, s = now()
      real, user, sys = real + r - self._startReal, user + u - self._startUser, sys + s - self._startSys
   end
   return {real = real, user = user, sys = sys}
end

function Timer:__tostring()
   return 'torch.Timer [status: ' .. (self._running and 'running' or 'stopped') .. ']'
end
