-- nn.MM(transA=false, transB=false): {A, B} -> op(A) op(B); 2-D matrices, or
-- 3-D batches of matrices (batch first).
local MM, parent = torch.class('nn.MM', 'nn.Module')

function MM:__init(transA, transB)
   parent.__init(self)
   self.transA = transA or false
   self.transB = transB or false
   self.gradInput = {torch.Tensor(), torch.Tensor()}
end

function MM:updateOutput(input)
   assert(#input == 2, 'nn.MM: input must be a pair of matrices or of minibatches of matrices')
   local a, b = input[1], input[2]
   assert(a:nDimension() == 2 or a:nDimension() == 3, 'nn.MM: input tensors must be 2D or 3D')
   if a:nDimension() == 2 then
      assert(b:nDimension() == 2, 'nn.MM: second input tensor must be 2D')
      if self.transA then a = a:t() end
      if self.transB then b = b:t() end
      assert(a:size(2) == b:size(1), 'nn.MM: matrix sizes do not match')
      self.output:resize(a:size(1), b:size(2)):mm(a, b)
   else
      assert(b:nDimension() == 3, 'nn.MM: second input tensor must be 3D')
      assert(a:size(1) == b:size(1), 'nn.MM: inputs must contain the same number of minibatches')
      if self.transA then a = a:transpose(2, 3) end
      if self.transB then b = b:transpose(2, 3) end
      assert(a:size(3) == b:size(2), 'nn.MM: matrix sizes do not match')
      self.output:resize(a:size(1), a:size(2), b:size(3)):bmm(a, b)
   end
   return self.output
end

-- C = A B: dA = dC B^T, dB = A^T dC; the transposed forms follow by transposing.
function MM:updateGradInput(input, gradOutput)
   assert(#input == 2, 'nn.MM: input must be a pair of tensors')
   local a, b = input[1], input[2]
   self.gradInput[1] = self.gradInput[1] or a.new()
   self.gradInput[2] = self.gradInput[2] or b.new()
   self.gradInput[1]:resizeAs(a)
   self.gradInput[2]:resizeAs(b)
   local nd = gradOutput:nDimension()
   assert(nd == 2 or nd == 3, 'nn.MM: gradOutput must be a 2D or 3D tensor')
   assert(a:nDimension() == nd and b:nDimension() == nd, 'nn.MM: inputs and gradOutput must have the same dimension')
   local h, w = nd - 1, nd
   local f = nd == 2 and 'mm' or 'bmm'
   local go = gradOutput
   local at, bt, got = a:transpose(h, w), b:transpose(h, w), go:transpose(h, w)
   local ga, gb = self.gradInput[1], self.gradInput[2]
   if self.transA then
      -- A^T op(B) = C: dA = op(B) dC^T
      ga[f](ga, self.transB and bt or b, got)
   else
      ga[f](ga, go, self.transB and b or bt)
   end
   if self.transB then
      -- op(A) B^T = C: dB = dC^T op(A)
      gb[f](gb, got, self.transA and at or a)
   else
      gb[f](gb, self.transA and a or at, go)
   end
   return self.gradInput
end
