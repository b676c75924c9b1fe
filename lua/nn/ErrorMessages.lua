-- nn kernels exist for float and double tensors only: any T.nn.<name> of an integer tensor
-- type raises one clear error naming the kernel, as Torch7.
local onlyFloat = {
   __index = function(_, key)
      error('nn.' .. key .. ' is only supported for Float or Double Tensors.', 2)
   end,
}
for _, name in ipairs {'ByteTensor', 'CharTensor', 'ShortTensor', 'IntTensor', 'LongTensor'} do
   local T = torch[name]
   if T then
      T.nn = {}
      setmetatable(T.nn, onlyFloat)
   end
end
