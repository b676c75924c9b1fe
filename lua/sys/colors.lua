-- sys.colors: ANSI escape sequences by colour name (lower case: normal,
-- Capitalized: bold, _underscored: background); `none` resets.
local colors = {none = '\27[0m'}
local names = {'black', 'red', 'green', 'yellow', 'blue', 'magenta', 'cyan', 'white'}
for i, name in ipairs(names) do
   local code = 29 + i
   colors[name] = '\27[0;' .. code .. 'm'
   colors[name:sub(1, 1):upper() .. name:sub(2)] = '\27[1;' .. code .. 'm'
   colors['_' .. name] = '\27[' .. (code + 10) .. 'm'
end
return colors
