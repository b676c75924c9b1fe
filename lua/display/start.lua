-- `luatorch th -ldisplay.start [port [hostname]]`, the original's way to start its server: runs
-- `luatorch display port hostname` (run/display_server.py) until Ctrl-C, then ends th.
local port, hostname = 8000, '127.0.0.1'
-- (Torch7's th handed the whole command line to the library as arg[1..]; luatorch th takes the first word after
-- the options as the script, arg[0]: the port is the first number either way, the hostname the word after it)
for i = 0, #(arg or {}) do
   if tonumber(arg[i]) then
      port, hostname = tonumber(arg[i]), arg[i + 1] or hostname
      break
   end
end
local python = os.getenv('LUATORCH_PYTHON') or 'python3'
local ok = os.execute(string.format("'%s' -m run.display_server %d '%s'", (python:gsub("'", "'\\''")), port,
                                    (hostname:gsub("'", "'\\''"))))
os.exit((ok == 0 or ok == true) and 0 or 1)
