-- loadcaffe: Caffe models into Torch, with the API of Torch7's loadcaffe (szagoruyko/loadcaffe).
--
--   local net = loadcaffe.load(prototxt_path, caffemodel_path, backend)   -- backend 'nn' (default) | 'cudnn'
--
-- returns an nn.Sequential of the prototxt's layers in file order, each module's `.name` the Caffe
-- layer name, weights and biases copied from the caffemodel layer of the same name. Written in Lua
-- here, with no protobuf library: prototxt.lua reads the text format (new `layer { type: "..." }`
-- and old V1 `layers { type: ENUM }` nets), caffemodel.lua streams the binary format, layers.lua
-- holds one builder per supported Caffe layer type. A layer type without a builder is reported and
-- left out, as loadcaffe did.
require 'nn'
local pt = require 'loadcaffe.prototxt'
local caffemodel = require 'loadcaffe.caffemodel'
local layers = require 'loadcaffe.layers'

loadcaffe = loadcaffe or {}
local loadcaffe = loadcaffe

loadcaffe.prototxt = pt
loadcaffe.caffemodel = caffemodel

-- A layer belongs to the deploy (TEST) net unless an include rule names only TRAIN or an exclude
-- rule names TEST.
local function inTestPhase(def)
   local function phases(rules)
      local out = {}
      for _, rule in ipairs(rules) do
         local ph = pt.one(rule, 'phase')
         if ph then out[#out + 1] = (ph == '1' or ph == 'TEST') and 'TEST' or 'TRAIN' end
      end
      return out
   end
   local include, exclude = phases(pt.all(def, 'include')), phases(pt.all(def, 'exclude'))
   for _, ph in ipairs(exclude) do if ph == 'TEST' then return false end end
   if #include == 0 then return true end
   for _, ph in ipairs(include) do if ph == 'TEST' then return true end end
   return false
end

-- whether the net's declared input is an image (more than two dimensions); true when undeclared
local function spatialInput(net)
   local dims = pt.all(net, 'input_dim')
   if #dims > 0 then return #dims ~= 2 end
   local shape = pt.one(net, 'input_shape')
   if shape then return #pt.all(shape, 'dim') ~= 2 end
   return true
end

function loadcaffe.load(prototxtPath, modelPath, backend)
   backend = backend or 'nn'
   if backend == 'ccn2' then
      error("loadcaffe: the 'ccn2' backend (cuda-convnet2) is not available in luatorch: use 'nn' or 'cudnn'", 2)
   elseif backend ~= 'nn' and backend ~= 'cudnn' then
      error(string.format("loadcaffe: unknown backend '%s': use 'nn' or 'cudnn'", tostring(backend)), 2)
   end
   if backend == 'cudnn' then require 'cudnn' end

   local net = pt.parseFile(prototxtPath)
   local defs, v1 = pt.all(net, 'layer'), false
   if #defs == 0 then defs, v1 = pt.all(net, 'layers'), true end
   if #defs == 0 then
      error(string.format("loadcaffe: the prototxt '%s' defines no layers", prototxtPath), 2)
   end
   local kept, names = {}, {}
   for _, def in ipairs(defs) do
      if inTestPhase(def) then
         kept[#kept + 1] = def
         names[pt.one(def, 'name', '')] = true
      end
   end

   local model = caffemodel.read(modelPath, function(name) return names[name] end)
   print(string.format('loadcaffe: read %s (%d layers)', modelPath, model.count))

   local ctx = {backend = backend, spatial = spatialInput(net)}
   function ctx.blobs(name)
      local layer = model.layers[name]
      return layer and layer.blobs
   end
   local seq = nn.Sequential()
   for _, def in ipairs(kept) do
      local list, typeName = layers.build(ctx, def, v1)
      if list then
         for _, item in ipairs(list) do
            item[2].name = item[1]
            seq:add(item[2])
         end
      else
         print(string.format("loadcaffe: warning: layer '%s' of type %s is not supported, left out",
                             pt.one(def, 'name', '?'), tostring(typeName)))
      end
   end
   if backend == 'cudnn' then seq:cuda() end
   -- Torch7's LuaJIT was built with Lua 5.2's __len for tables, and programs (neural-style among
   -- them) loop `for i = 1, #cnn`. This LuaJIT has no __len on tables: the modules are also the
   -- array part of the result, so that # counts them.
   for i, m in ipairs(seq.modules) do seq[i] = m end
   return seq
end

return loadcaffe
