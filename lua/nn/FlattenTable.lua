-- nn.FlattenTable: a nested table of tensors -> the flat table of its tensors (depth-first).
-- input_map mirrors the input's nesting with each tensor's index in the output.
local FlattenTable, parent = torch.class('nn.FlattenTable', 'nn.Module')

function FlattenTable:__init()
   parent.__init(self)
   self.output = {}
   self.input_map = {}
   self.gradInput = {}
end

local function flatten(out, x)
   if torch.type(x) ~= 'table' then
      out[#out + 1] = x
      return #out
   end
   local map = {}
   for i = 1, #x do map[i] = flatten(out, x[i]) end
   return map
end

-- Whether `flat` (with `map`) is still the flattening of `nested` (same tensors, same shape).
local function matches(flat, nested, map)
   if flat == nil or nested == nil or map == nil then return false end
   if torch.type(nested) ~= 'table' then
      return type(map) == 'number' and flat[map] == nested
   end
   if type(map) ~= 'table' or #map ~= #nested then return false end
   for i = 1, #nested do
      if not matches(flat, nested[i], map[i]) then return false end
   end
   return true
end

local function unflatten(flat, map)
   if type(map) ~= 'table' then return flat[map] end
   local t = {}
   for i = 1, #map do t[i] = unflatten(flat, map[i]) end
   return t
end

function FlattenTable:updateOutput(input)
   assert(torch.type(input) == 'table', 'nn.FlattenTable: input must be a table')
   if not matches(self.output, input, self.input_map) then
      self.output = {}
      self.input_map = flatten(self.output, input)
   end
   return self.output
end

function FlattenTable:updateGradInput(input, gradOutput)
   assert(torch.type(input) == 'table', 'nn.FlattenTable: input must be a table')
   assert(torch.type(gradOutput) == 'table', 'nn.FlattenTable: gradOutput must be a table')
   if not matches(gradOutput, self.gradInput, self.input_map) then
      self.gradInput = unflatten(gradOutput, self.input_map)
   end
   return self.gradInput
end

-- Only references are held: nothing to convert.
function FlattenTable:type(type, tensorCache)
   self:clearState()
   return self
end

function FlattenTable:clearState()
   self.input_map = {}
   self.output = {}
   self.gradInput = {}
   return self
end
