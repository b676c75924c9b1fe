-- torch.load for the files a training run is given (-netType FILE.t7, -retrain, -resume's checkpoints,
-- -optimState): a .t7 file may hold Lua functions, whose bytecode LuaJIT runs unverified, so a downloaded
-- model could run any code here. They are refused unless -trustModel (`luatorch train --trust-model`) says
-- the file is trusted; one line names the file and the flag.
return function(path, trusted)
   local ok, res = pcall(torch.load, path, nil, nil, {functions = trusted == true})
   if ok then return res end
   if type(res) == 'string' and res:find('reading functions is disabled', 1, true) then
      error(string.format('%s holds Lua functions (code that would run when it loads); refused: pass ' ..
                          '--trust-model (-trustModel true) if you trust this file', path), 0)
   end
   error(res, 0)
end
