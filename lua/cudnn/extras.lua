-- cudnn names that cudnn.torch never had but earlier luatorch gave (programs may use them): plain
-- subclasses of their nn counterparts, nn's constructors unchanged. cudnn.convert does not touch them.
for _, name in ipairs {'SpatialDilatedConvolution', 'VolumetricDilatedConvolution', 'Dropout'} do
   local class, parent = torch.class('cudnn.' .. name, 'nn.' .. name)
   cudnn._withoutDescriptors(class, parent)
end
