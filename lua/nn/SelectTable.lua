-- nn.SelectTable(index): the element `index` of the input table (negative: from the end).
-- gradInput has the input's structure, zero except at `index`.
local SelectTable, parent = torch.class('nn.SelectTable', 'nn.Module')

function SelectTable:__init(index)
   parent.__init(self)
   self.index = index
   self.gradInput = {}
end

local function resolve(index, input)
   if type(index) == 'number' and index < 0 then return #input + index + 1 end
   return index
end

function SelectTable:updateOutput(input)
   local index = resolve(self.index, input)
   assert(input[index], 'index does not exist in the input table')
   self.output = input[index]
   return self.output
end

-- Make `dst` a zero-filled structure shaped as `src` (reusing dst's tensors).
local function zerosLike(dst, src)
   for k, v in pairs(src) do
      if torch.type(v) == 'table' then
         dst[k] = zerosLike(torch.type(dst[k]) == 'table' and dst[k] or {}, v)
      elseif torch.isTensor(v) then
         if torch.isTensor(dst[k]) then dst[k]:resizeAs(v):zero() else dst[k] = v:clone():zero() end
      else
         dst[k] = nil
      end
   end
   for k in pairs(dst) do
      if src[k] == nil then dst[k] = nil end
   end
   return dst
end

function SelectTable:updateGradInput(input, gradOutput)
   zerosLike(self.gradInput, input)
   local index = resolve(self.index, input)
   assert(self.gradInput[index], 'index does not exist in the input table')
   nn.utils.recursiveCopy(self.gradInput[index], gradOutput)
   return self.gradInput
end

function SelectTable:type(type, tensorCache)
   self.gradInput = {}
   self.output = {}
   return parent.type(self, type, tensorCache)
end

-- as Torch7: Identity's (a selected tensor becomes an empty one of its type, a table an empty table)
SelectTable.clearState = nn.Identity.clearState

function SelectTable:__tostring__()
   return torch.type(self) .. '(' .. tostring(self.index) .. ')'
end
