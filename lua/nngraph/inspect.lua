-- Looking into gModules: naming nodes after variables, pictures of the graph, and
-- a debug mode that draws the graph with the failing node in red when a run fails.

-- Name every node held in a local variable of the calling function (level 1, or
-- `stackLevel` functions up) after that variable, unless it already has a name.
function nngraph.annotateNodes(stackLevel)
   local level = (stackLevel or 1) + 1
   local index = 1
   while true do
      local name, value = debug.getlocal(level, index)
      if not name then break end
      if nngraph._isNode(value) and not value.data.annotations.name then
         value:annotate({name = name})
      end
      index = index + 1
   end
end

-- The forward graph as DOT text with the node holding `failedData` filled red.
local function dotWithFailure(g, title, failedData)
   local text = g:todot(title)
   for _, node in ipairs(g.nodes) do
      if failedData and node.data == failedData then
         text = text:gsub('}%s*$', '') .. string.format('n%d[style=filled, fillcolor=red];\n}', node.id)
         break
      end
   end
   return text
end

-- Write <prefix>.dot (and <prefix>.svg when Graphviz is installed) for a failed run.
local function saveFailurePicture(gmodule, failedNode)
   local nInputs = gmodule.nInputs or #gmodule.innode.children
   local prefix = gmodule.name or string.format('nngraph_%din_%dout', nInputs, #gmodule.outnode.children)
   if paths.filep(prefix .. '.svg') or paths.filep(prefix .. '.dot') then
      prefix = prefix .. '_' .. paths.basename(os.tmpname())
   end
   local text = dotWithFailure(gmodule.fg, prefix, failedNode and failedNode.data)
   local f = io.open(prefix .. '.dot', 'w')
   if not f then return end
   f:write(text)
   f:close()
   if graph.haveGraphviz() then
      io.stderr:write(string.format('nngraph: saving %s.svg\n', prefix))
      os.execute(string.format("dot -Tsvg -o '%s.svg' '%s.dot'", prefix, prefix))
   else
      io.stderr:write(string.format('nngraph: saving %s.dot (no Graphviz to render an svg)\n', prefix))
   end
end

local plain = {
   runForwardFunction = nn.gModule.runForwardFunction,
   updateGradInput = nn.gModule.updateGradInput,
   accGradParameters = nn.gModule.accGradParameters,
}

-- nngraph.setDebug(true): when a gModule's forward or backward fails, a picture of
-- its graph is saved (named after gmodule.name, else nngraph_<n>in_<m>out) with the
-- node that failed in red, and the error goes on. setDebug(false) turns it off.
function nngraph.setDebug(enable)
   for name, method in pairs(plain) do
      if enable then
         nn.gModule[name] = function(self, ...)
            local args, n = {...}, select('#', ...)
            local failed
            local ok, result = xpcall(function() return method(self, unpack(args, 1, n)) end,
                                      function(message)
                                         failed = nngraph._currentNode()
                                         message = tostring(message)
                                         if not message:find('stack traceback:\n', 1, true) then
                                            message = debug.traceback(message, 2)
                                         end
                                         return message
                                      end)
            if ok then return result end
            saveFailurePicture(self, failed)
            error(result, 0)
         end
      else
         nn.gModule[name] = method
      end
   end
end

-- Torch7 opened the picture in a browser; write it and open it when possible.
function nngraph.display(gmodule)
   local prefix = os.tmpname()
   graph.dot(gmodule.fg, gmodule.name or 'gModule', prefix)
   local opener = jit and jit.os == 'OSX' and 'open' or 'xdg-open'
   os.execute(opener .. " '" .. prefix .. ".svg' >/dev/null 2>&1")
   return prefix .. '.svg'
end
