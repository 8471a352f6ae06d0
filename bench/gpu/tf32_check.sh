#!/usr/bin/env bash
# TF32 check on the GPU machine: the CUDA tests, then the same MU run in f32, f32 with --tf32 and f64.
#   bash bench/gpu/tf32_check.sh   (binaries carried under .device/build, libraries under .device/lib)
set -u
export LD_LIBRARY_PATH="$PWD/.device/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib"
B=.device/build
$B/tests/cuda/test_cuda_kernels 2>&1 | tail -4
mkdir -p /tmp/w && $B/bin/dnmf gen --rows 8000 --cols 6000 --rank 16 --noise 0.01 --seed 1 -o /tmp/w/A.npy
for f in "" "--tf32"; do
  $B/bin/dnmf factor /tmp/w/A.npy -k 16 --algo mu --iters 300 --tol 0 --precision f32 --backend cuda $f --quiet -o /tmp/w/o$f
done
$B/bin/dnmf factor /tmp/w/A.npy -k 16 --algo mu --iters 300 --tol 0 --precision f64 --backend cuda --quiet -o /tmp/w/o64
grep -h '"tf32"\|"rel_error"\|seconds_per' /tmp/w/o*/report.json
