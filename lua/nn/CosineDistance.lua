-- nn.CosineDistance(): {a, b} -> <a, b> / (||a|| ||b||), row-wise for matrices.
local CosineDistance, parent = torch.class('nn.CosineDistance', 'nn.Module')

function CosineDistance:__init()
   parent.__init(self)
   self.gradInput = {torch.Tensor(), torch.Tensor()}
end

local eps = 1e-12

local function rows(t)
   if t:dim() == 1 then return t:contiguous():view(1, t:nElement()) end
   if t:dim() == 2 then return t:contiguous() end
   error('nn.CosineDistance: inputs must be vectors or matrices, got ' .. t:dim() .. 'D')
end

-- w1 = <a, b>, w22 = 1 / (||a||^2 + eps), w32 = 1 / (||b||^2 + eps), w = sqrt(w22 w32), all (N, 1).
function CosineDistance:updateOutput(input)
   local a, b = rows(input[1]), rows(input[2])
   if not self.buffer then
      self.buffer, self.w1, self.w22, self.w, self.w32, self.ones =
         a.new(), a.new(), a.new(), a.new(), a.new(), a.new()
   end
   self.buffer:cmul(a, b)
   self.w1:sum(self.buffer, 2)
   self.buffer:cmul(a, a)
   self.w22:sum(self.buffer, 2):add(eps)
   self.ones:resizeAs(self.w22):fill(1)
   self.w22:cdiv(self.ones, self.w22)
   self.buffer:cmul(b, b)
   self.w32:sum(self.buffer, 2):add(eps)
   self.w32:cdiv(self.ones, self.w32)
   self.w:cmul(self.w22, self.w32):sqrt()
   self.output:cmul(self.w1, self.w)
   self.output:resize(a:size(1))
   return self.output
end

-- d cos / d a = (b - <a,b> a / ||a||^2) / (||a|| ||b||), symmetrically for b.
function CosineDistance:updateGradInput(input, gradOutput)
   local a, b = rows(input[1]), rows(input[2])
   self.gradInput[1] = self.gradInput[1] or a.new()
   self.gradInput[2] = self.gradInput[2] or a.new()
   for i = #self.gradInput, 3, -1 do self.gradInput[i] = nil end
   local ga, gb = self.gradInput[1], self.gradInput[2]
   local go = gradOutput:contiguous():view(a:size(1), 1):expandAs(a)
   ga:resizeAs(a):copy(b)
   self.buffer:cmul(self.w1, self.w22)
   ga:addcmul(-1, self.buffer:expandAs(a), a):cmul(self.w:expandAs(a)):cmul(go)
   gb:resizeAs(b):copy(a)
   self.buffer:cmul(self.w1, self.w32)
   gb:addcmul(-1, self.buffer:expandAs(b), b):cmul(self.w:expandAs(b)):cmul(go)
   ga:resizeAs(input[1])
   gb:resizeAs(input[2])
   return self.gradInput
end

function CosineDistance:clearState()
   nn.utils.clear(self, {'buffer', 'w1', 'w22', 'w', 'w32', 'ones'})
   return parent.clearState(self)
end
