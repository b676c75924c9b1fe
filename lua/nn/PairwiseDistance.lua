-- nn.PairwiseDistance(p=2): {a, b} -> || a - b ||_p (1-D: one element; 2-D: one per row).
local PairwiseDistance, parent = torch.class('nn.PairwiseDistance', 'nn.Module')

function PairwiseDistance:__init(p)
   parent.__init(self)
   self.gradInput = {}
   self.diff = torch.Tensor()
   self.norm = p or 2
end

function PairwiseDistance:updateOutput(input)
   local a, b = input[1], input[2]
   if a:dim() == 1 then
      self.output:resize(1)
      self.output[1] = a:dist(b, self.norm)
   elseif a:dim() == 2 then
      self.diff = self.diff or a.new()
      self.diff:resizeAs(a):add(a, -1, b):abs():pow(self.norm)
      self.output:sum(self.diff, 2)
      self.output:resize(a:size(1)):pow(1 / self.norm)
   else
      error('nn.PairwiseDistance: input must be vector or matrix, got ' .. a:dim() .. 'D')
   end
   return self.output
end

-- d ||d||_p / d a = sign(d) |d|^(p-1) / ||d||^(p-1) with d = a - b (p = 1: sign(d),
-- a random sign where d is 0, as Torch7); the gradient of b is its negation.
function PairwiseDistance:updateGradInput(input, gradOutput)
   local a, b = input[1], input[2]
   if a:dim() > 2 then error('nn.PairwiseDistance: input must be vector or matrix, got ' .. a:dim() .. 'D') end
   self.gradInput[1] = (self.gradInput[1] or a.new()):resizeAs(a)
   self.gradInput[2] = (self.gradInput[2] or b.new()):resizeAs(b)
   local g = self.gradInput[1]
   g:copy(a):add(-1, b)
   if self.norm == 1 then
      g:apply(function(x)
         if x == 0 then return 2 * torch.random(2) - 3 end
         return x > 0 and 1 or -1
      end)
   else
      if self.norm > 2 then g:cmul(g:clone():abs():pow(self.norm - 2)) end
      if a:dim() > 1 then
         self.outExpand = self.outExpand or self.output.new()
         self.outExpand:resize(self.output:size(1), 1):copy(self.output):add(1e-6):pow(-(self.norm - 1))
         g:cmul(self.outExpand:expandAs(g))
      else
         g:mul(math.pow(self.output[1] + 1e-6, -(self.norm - 1)))
      end
   end
   if a:dim() == 1 then
      g:mul(gradOutput[1])
   else
      self.grad = self.grad or gradOutput.new()
      self.ones = self.ones or gradOutput.new()
      self.ones:resize(a:size(2)):fill(1)
      self.grad:resizeAs(a):zero():addr(gradOutput, self.ones)
      g:cmul(self.grad)
   end
   self.gradInput[2]:zero():add(-1, g)
   return self.gradInput
end

function PairwiseDistance:clearState()
   nn.utils.clear(self, 'diff', 'outExpand', 'grad', 'ones')
   return parent.clearState(self)
end
