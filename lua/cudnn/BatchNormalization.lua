-- cudnn.BatchNormalization(nFeature, eps=1e-5, momentum=0.1, affine=true) on N x C inputs:
-- nn.BatchNormalization, affine only (as cuDNN). The Spatial/Volumetric classes follow the same rule.
local BN, parent = torch.class('cudnn.BatchNormalization', 'nn.BatchNormalization')
BN.mode = 'CUDNN_BATCHNORM_PER_ACTIVATION'
BN.__version = 2

-- Gives a cudnn batch-normalization class the affine-only constructor and cudnn.torch's fields.
function cudnn._batchNormalization(class, parent, name)
   function class:__init(nFeature, eps, momentum, affine)
      if type(nFeature) ~= 'number' then
         error(name .. ': missing argument #1, the number of feature planes', 2)
      end
      if affine ~= nil and affine ~= true then
         error(string.format('%s: only affine = true is supported (use nn.%s for affine = false)', name,
                             name:match('%.(.*)')), 2)
      end
      parent.__init(self, nFeature, eps, momentum, true)
   end
   class.__tostring__ = cudnn._plainName
   cudnn._withoutDescriptors(class, parent)
end

cudnn._batchNormalization(BN, parent, 'cudnn.BatchNormalization')
