-- What cudnn.torch's pointwise modules (ReLU, ClippedReLU, Tanh, Sigmoid) share: an `inplace`
-- flag (the output overwrites the input, the gradInput the gradOutput) and the class name as
-- their printed form.
local C = torch.C
local check = torch._check

-- Gives `class` (a subclass of `parent`, an nn pointwise module without its own in-place mode)
-- the constructor (inplace=false) and the kernels of lt_nn_pointwise op `op` with the flag.
function cudnn._pointwise(class, parent, op)
   function class:__init(inplace)
      parent.__init(self)
      self.inplace = inplace or false
   end
   function class:updateOutput(input)
      check(C.lt_nn_pointwise_updateOutput(op, input._c, self.output._c, 0, 0, self.inplace and 1 or 0), 2)
      return self.output
   end
   -- the derivative is read from the output (1 - y^2 for tanh, y(1 - y) for the sigmoid)
   function class:updateGradInput(input, gradOutput)
      check(C.lt_nn_pointwise_updateGradInput(op, self.output._c, gradOutput._c, self.gradInput._c, 0, 0,
                                              self.inplace and 1 or 0), 2)
      return self.gradInput
   end
   class.__tostring__ = cudnn._plainName
   cudnn._withoutDescriptors(class, parent)
end
