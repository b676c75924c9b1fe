-- Graphviz output for graph.Graph: the DOT text (always available) and rendering
-- through Graphviz's `dot` command when it is installed (Torch7 loaded libgvc
-- through the FFI; the command line does the same work and needs no C library).

-- Quote a DOT identifier unless it is a single word of letters.
function graph._dotEscape(str)
   if not str:find('[^a-zA-Z]') then return str end
   return '"' .. str:gsub('\n', '\\n'):gsub('"', '\\"') .. '"'
end

-- `k=v` pairs for a node's attribute list, keys in sorted order (the order Graphviz
-- itself writes them in); values are escaped, keys are used as given.
local function attributeList(attributes)
   local keys = {}
   for k in pairs(attributes) do keys[#keys + 1] = k end
   table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
   local parts = {}
   for i, k in ipairs(keys) do
      parts[i] = tostring(k) .. '=' .. graph._dotEscape(tostring(attributes[k]))
   end
   return table.concat(parts, ' ')
end

-- The graph in DOT: one `n<id>` per node, labelled with its name and label()
-- (nodes may provide graphNodeName/graphNodeAttributes, as nngraph's do).
function graph.Graph:todot(title)
   local out = {'digraph G {\n'}
   if title then out[#out + 1] = 'labelloc="t";\nlabel="' .. title .. '";\n' end
   out[#out + 1] = 'node [shape = oval]; '
   local names = {}
   for _, node in ipairs(self.nodes) do
      names[node] = 'n' .. node.id
      local attributes = {}
      if node.graphNodeAttributes then
         for k, v in pairs(node:graphNodeAttributes()) do attributes[k] = v end
      end
      local name = node.graphNodeName and node:graphNodeName() or ('Node' .. node.id)
      attributes.label = name .. '\n' .. node:label()
      out[#out + 1] = '\n' .. names[node] .. '[' .. attributeList(attributes) .. '];'
   end
   out[#out + 1] = '\n'
   for _, e in ipairs(self.edges) do
      out[#out + 1] = names[e.from] .. ' -> ' .. names[e.to] .. ';\n'
   end
   out[#out + 1] = '}'
   return table.concat(out)
end

local function shellQuote(s)
   return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

local function succeeded(status)
   return status == true or status == 0
end

function graph.haveGraphviz()
   return succeeded(os.execute('command -v dot >/dev/null 2>&1'))
end

local function writeText(path, text)
   local f, err = io.open(path, 'w')
   if not f then error('graph: cannot write ' .. path .. ': ' .. tostring(err), 3) end
   f:write(text)
   f:close()
end

local function readText(path)
   local f = io.open(path, 'r')
   if not f then return nil end
   local text = f:read('*a')
   f:close()
   return text
end

local function needGraphviz(what, extra)
   if not graph.haveGraphviz() then
      error(what .. ": Graphviz's `dot` command was not found" .. (extra or '') ..
            '; install graphviz (e.g. apt-get install graphviz) to render graphs', 3)
   end
end

-- Run `dot -K<algorithm> -T<format>` on the graph, writing `outPath`.
local function render(g, algorithm, format, outPath)
   local source = os.tmpname()
   writeText(source, g:todot())
   os.remove(outPath)
   local cmd = string.format('dot -K%s -T%s -o %s %s 2>&1', algorithm, format, shellQuote(outPath), shellQuote(source))
   local pipe = io.popen(cmd)
   local messages = pipe:read('*a')
   local ok = pipe:close()
   os.remove(source)
   if ok == false or (not readText(outPath)) then
      error(string.format('graph: Graphviz could not render %s: %s', outPath, messages), 3)
   end
end

-- Render the graph into `fname`, the format taken from its extension (.svg, .png, .dot, ...).
function graph.graphvizFile(g, algorithm, fname)
   needGraphviz('graph.graphvizFile')
   local format = fname:match('%.(%w+)$')
   if not format then error('graph.graphvizFile: the file name needs an extension naming the format: ' .. fname, 2) end
   render(g, algorithm or 'dot', format, fname)
end

-- Node positions from a Graphviz layout: an n x 2 tensor (row = node id) in [0, 1].
function graph.graphvizLayout(g, algorithm)
   needGraphviz('graph.graphvizLayout')
   local plain = os.tmpname()
   render(g, algorithm or 'dot', 'plain', plain)
   local text = readText(plain)
   os.remove(plain)
   local width, height = text:match('^graph%s+%S+%s+(%S+)%s+(%S+)')
   width, height = tonumber(width), tonumber(height)
   local positions = torch.zeros(#g.nodes, 2)
   for id, x, y in text:gmatch('\nnode%s+n(%d+)%s+(%S+)%s+(%S+)') do
      id = tonumber(id)
      positions[id][1] = width > 0 and tonumber(x) / width or 0
      positions[id][2] = height > 0 and tonumber(y) / height or 0
   end
   return positions
end

-- Write `fname`.dot and `fname`.svg. Without Graphviz the DOT text is still written
-- (it can be rendered elsewhere) and the call fails saying so. Without `fname`
-- Torch7 opened a Qt window, which luatorch does not have.
function graph.dot(g, title, fname)
   if not fname then
      error('graph.dot: pass a file name (graph.dot(g, title, "name") writes name.dot and name.svg); ' ..
            'luatorch has no Qt window to show the graph in', 2)
   end
   if not graph.haveGraphviz() then
      writeText(fname .. '.dot', g:todot(title))
      needGraphviz('graph.dot', ' (wrote the DOT text to ' .. fname .. '.dot)')
   end
   local titled = setmetatable({todot = function() return g:todot(title) end}, {__index = g})
   render(titled, 'dot', 'svg', fname .. '.svg')
   render(titled, 'dot', 'dot', fname .. '.dot')
end
