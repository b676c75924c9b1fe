-- fb.resnet.torch's main.lua as a th script, shipped with luatorch:
--   luatorch th train.lua -depth 20 -nEpochs 1 -data builtin
--   mpiexec -n 4 luatorch th train.lua -batchSize 256 ...
-- Options: `luatorch th train.lua -help` (the same as `luatorch train`).
require('luatorch.train').main(arg)
