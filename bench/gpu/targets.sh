# The executables the GPU run needs, sourced by carry.sh (which stages them) and run.sh (which builds them where
# none were carried, and runs them): one list, so that a test added to one script is never missing from the other.
# shellcheck shell=bash
# shellcheck disable=SC2034  # used by the scripts that source this file
GPU_TESTS=(test_cuda_kernels test_cuda_masked test_cuda_masked_ops test_cuda_streamed test_nccl test_device_stream
  test_device_planner test_device_exchange)
GPU_BINS=(bench_gpu bench_gpu_stream dnmf)
