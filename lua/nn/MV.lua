-- nn.MV(trans=false): {M, v} -> op(M) v; M 2-D with v 1-D, or M 3-D with v 2-D (batch first).
local MV, parent = torch.class('nn.MV', 'nn.Module')

function MV:__init(trans)
   parent.__init(self)
   self.trans = trans or false
   assert(type(self.trans) == 'boolean', 'nn.MV(trans): trans must be a boolean (transpose the matrix first)')
   self.gradInput = {torch.Tensor(), torch.Tensor()}
end

function MV:updateOutput(input)
   assert(#input == 2, 'nn.MV: input must be a pair {matrix, vector}')
   local M, v = input[1], input[2]
   assert(M:nDimension() == 2 or M:nDimension() == 3, 'nn.MV: input matrix must be 2D or 3D')
   assert(v:nDimension() == 1 or v:nDimension() == 2, 'nn.MV: input vector must be 1D or 2D')
   if M:nDimension() == 2 then
      assert(v:nDimension() == 1, 'nn.MV: vector must be 1D')
      if self.trans then M = M:t() end
      assert(M:size(2) == v:size(1), 'nn.MV: matrix row count and vector length do not match')
      self.output:resize(M:size(1)):mv(M, v)
   else
      assert(v:nDimension() == 2, 'nn.MV: vector must be 2D (batch dimension)')
      assert(M:size(1) == v:size(1), 'nn.MV: inputs must contain the same number of minibatches')
      if self.trans then M = M:transpose(2, 3) end
      assert(M:size(3) == v:size(2), 'nn.MV: matrix row count and vector length do not match')
      self.output:resize(M:size(1), M:size(2), 1)
      self.output:bmm(M, v:contiguous():view(v:size(1), v:size(2), 1))
      self.output:resize(M:size(1), M:size(2))
   end
   return self.output
end

-- y = M v: dM = dy v^T, dv = M^T dy (trans: dM = v dy^T, dv = M dy).
function MV:updateGradInput(input, gradOutput)
   assert(#input == 2, 'nn.MV: input must be a pair {matrix, vector}')
   local M, v = input[1], input[2]
   local gM, gv = self.gradInput[1], self.gradInput[2]
   gM:resizeAs(M)
   gv:resizeAs(v)
   assert(gradOutput:nDimension() == 1 or gradOutput:nDimension() == 2, 'nn.MV: gradOutput must be 1D or 2D')
   if gradOutput:nDimension() == 2 then
      assert(M:nDimension() == 3 and v:nDimension() == 2, 'nn.MV: batched gradOutput needs a 3D matrix, 2D vector')
      local B, R, K = M:size(1), M:size(2), M:size(3)
      local go, vc = gradOutput:contiguous(), v:contiguous()
      if self.trans then
         gM:bmm(vc:view(B, R, 1), go:view(B, 1, K))
         gv:view(B, R, 1):bmm(M, go:view(B, K, 1))
      else
         gM:bmm(go:view(B, R, 1), vc:view(B, 1, K))
         gv:view(B, K, 1):bmm(M:transpose(2, 3), go:view(B, R, 1))
      end
   else
      assert(M:nDimension() == 2 and v:nDimension() == 1, 'nn.MV: gradOutput 1D needs a 2D matrix, 1D vector')
      if self.trans then
         gM:ger(v, gradOutput)
         gv:mv(M, gradOutput)
      else
         gM:ger(gradOutput, v)
         gv:mv(M:t(), gradOutput)
      end
   end
   return self.gradInput
end
