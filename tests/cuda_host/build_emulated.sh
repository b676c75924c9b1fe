#!/usr/bin/env bash
# Build the emulated CUDA driver, cuBLAS, NCCL and cuDNN (this folder's emulated_*.c) and the kernel files of
# native/cuda as SIMT-emulated host code into OUTDIR, and write OUTDIR/env.sh, which points the C layer at them:
#   bash tests/cuda_host/build_emulated.sh OUTDIR [kernel-file ...]    (from the repository root)
#   . OUTDIR/env.sh && LUATORCH_CUTORCH=gpu luatorch th script.lua
# Kernel modules are rebuilt only when their .cu (or lt_cuda_common.cuh) is newer. The tests build the same through
# tests/simt_emulator.py; this is for running programs and benchmarks by hand (docs/results/cuda.md).
set -euo pipefail
out=${1:?usage: build_emulated.sh OUTDIR [kernel-file ...]}
shift
mkdir -p "$out/cache"
out=$(cd "$out" && pwd)
CC=${CC:-gcc}
CXX=${CXX:-g++}
for n in driver cublas nccl cudnn; do
  "$CC" -std=c11 -O1 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden "tests/cuda_host/emulated_$n.c" \
    -o "$out/lib${n}_emulated.so" -ldl -lm
done
modules=${*:-$(cd native/cuda && ls *.cu | sed 's/\.cu$//')}
for m in $modules; do
  if [ ! -e "$out/$m.so" ] || [ "native/cuda/$m.cu" -nt "$out/$m.so" ] || [ native/cuda/lt_cuda_common.cuh -nt "$out/$m.so" ]; then
    echo "kernels: $m"
    "$CXX" -std=c++20 -O1 -ffp-contract=off -shared -fPIC -pthread -fvisibility=hidden -DLT_SIMT_HOST \
      -I tests/cuda_host -I native/cuda -x c++ "native/cuda/$m.cu" -o "$out/$m.so"
  fi
done
kernels=$(ls "$out"/*.so | grep -v _emulated.so | tr '\n' ':')
cat > "$out/env.sh" <<EOS
export LUATORCH_CUDA_DRIVER=$out/libdriver_emulated.so LUATORCH_CUDA_CUBLAS=$out/libcublas_emulated.so
export LUATORCH_CUDA_NCCL=$out/libnccl_emulated.so LUATORCH_CUDA_CUDNN=$out/libcudnn_emulated.so
export LT_EMULATED_CUDA_KERNELS=$kernels
export LUATORCH_CUDA_CACHE=$out/cache
EOS
echo "built $out (. $out/env.sh)"
