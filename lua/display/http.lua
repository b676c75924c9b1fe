-- One HTTP POST over a TCP socket, through LuaJIT's FFI and the C library (the original display client used
-- LuaSocket, which the distro does not carry). Enough HTTP/1.1 for display's server: a request with a
-- Content-Length, the status line of the answer. Every socket call has a time limit, so that a server that is
-- away or stuck costs a script seconds at most, never a hang.
local ffi = require 'ffi'
local C = ffi.C

ffi.cdef [[
typedef struct display_addrinfo {
   int ai_flags, ai_family, ai_socktype, ai_protocol;
   uint32_t ai_addrlen;
   void *ai_addr;
   char *ai_canonname;
   struct display_addrinfo *ai_next;
} display_addrinfo;
typedef struct display_timeval { long tv_sec, tv_usec; } display_timeval;
]]
for _, decl in ipairs {
   'int getaddrinfo(const char *, const char *, const display_addrinfo *, display_addrinfo **)',
   'void freeaddrinfo(display_addrinfo *)',
   'const char *gai_strerror(int)',
   'int socket(int, int, int)',
   'int connect(int, const void *, uint32_t)',
   'int setsockopt(int, int, int, const void *, uint32_t)',
   'long send(int, const void *, size_t, int)',
   'long recv(int, void *, size_t, int)',
   'int close(int)',
   'char *strerror(int)',
} do
   pcall(ffi.cdef, decl .. ';')   -- a declaration another module made first is fine
end

local AF_UNSPEC, SOCK_STREAM, SOL_SOCKET, SO_RCVTIMEO, SO_SNDTIMEO, MSG_NOSIGNAL = 0, 1, 1, 20, 21, 0x4000

local http = {}

local function failure(what)
   return nil, what .. ': ' .. ffi.string(C.strerror(ffi.errno()))
end

-- http://HOST[:PORT]/PATH into its parts
function http.parse(url)
   local host, port, path = url:match('^http://([^:/]+):?(%d*)(/?.*)$')
   if not host then return nil, 'not an http:// URL: ' .. tostring(url) end
   return host, tonumber(port) or 80, path ~= '' and path or '/'
end

local function connect(host, port, seconds)
   local hints = ffi.new('display_addrinfo')
   hints.ai_family, hints.ai_socktype = AF_UNSPEC, SOCK_STREAM
   local res = ffi.new('display_addrinfo *[1]')
   local rc = C.getaddrinfo(host, tostring(port), hints, res)
   if rc ~= 0 then return nil, 'cannot resolve ' .. host .. ': ' .. ffi.string(C.gai_strerror(rc)) end
   local tv = ffi.new('display_timeval', math.floor(seconds), math.floor(seconds % 1 * 1e6))
   local fd, err = -1, nil
   local ai = res[0]
   while ai ~= nil do
      fd = C.socket(ai.ai_family, ai.ai_socktype, ai.ai_protocol)
      if fd >= 0 then
         -- (Linux's connect honours the send time limit too)
         C.setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, tv, ffi.sizeof(tv))
         C.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, tv, ffi.sizeof(tv))
         if C.connect(fd, ai.ai_addr, ai.ai_addrlen) == 0 then break end
         err = select(2, failure('cannot connect to ' .. host .. ':' .. port))
         C.close(fd)
         fd = -1
      end
      ai = ai.ai_next
   end
   C.freeaddrinfo(res[0])
   if fd < 0 then return nil, err or ('cannot connect to ' .. host .. ':' .. port) end
   return fd
end

local function sendAll(fd, s)
   local buf, sent = ffi.cast('const char *', s), 0
   while sent < #s do
      local n = C.send(fd, buf + sent, #s - sent, MSG_NOSIGNAL)
      if n <= 0 then return failure('sending') end
      sent = sent + tonumber(n)
   end
   return true
end

-- POST body to url; the answer's status code and its first bytes, or nil and what went wrong
function http.post(url, body, contentType, seconds)
   local host, port, path = http.parse(url)
   if not host then return nil, port end
   local fd, err = connect(host, port, seconds or 5)
   if not fd then return nil, err end
   local head = string.format('POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\nContent-Length: %d\r\n' ..
                              'Connection: close\r\n\r\n', path, host, port, contentType or 'application/json', #body)
   local ok, why = sendAll(fd, head)
   if ok then ok, why = sendAll(fd, body) end
   local answer = ''
   if ok then
      local buf = ffi.new('char[512]')
      local n = C.recv(fd, buf, 512, 0)
      if n > 0 then answer = ffi.string(buf, n) else ok, why = failure('reading the answer') end
   end
   C.close(fd)
   if not ok then return nil, why end
   local code = tonumber(answer:match('^HTTP/%d%.%d (%d%d%d)'))
   if not code then return nil, 'not an HTTP answer from ' .. url end
   return code, answer:match('\r\n\r\n(.*)$') or ''
end

return http
