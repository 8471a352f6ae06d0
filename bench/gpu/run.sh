#!/usr/bin/env bash
# The GPU machine's script: CUDA tests, then bench_gpu; every log and result goes to $OUT
# (default /tmp/dnmf-bench-gpu).
#   bash bench/gpu/run.sh [BUILD_DIR]        (from the repository root; BUILD_DIR defaults to build/release)
# Uses the binaries in BUILD_DIR when they are there (built elsewhere and carried), else configures and
# builds the two targets here. Shared libraries the machine lacks (OpenBLAS, libgomp, ...) are looked for
# in .device/lib first. Budget: well under 8 minutes on one H200 (each step has its own time limit).
set -euo pipefail

BUILD_DIR="${1:-build/release}"
OUT_DIR="${OUT:-/tmp/dnmf-bench-gpu}"
mkdir -p "$OUT_DIR"
export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for cuda_lib in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d "$cuda_lib" ]] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cuda_lib"
done

TEST_EXE="$BUILD_DIR/tests/cuda/test_cuda_kernels"
BENCH_EXE="$BUILD_DIR/bin/bench_gpu"
SCRIPT_START=$(date +%s.%N)
STEPS=()
FAILED=0

seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Runs "$@" as a named step with its own log in $OUT_DIR; records its time and whether it failed.
step() {
  local name="$1"
  shift
  local start end rc=0
  start=$(date +%s.%N)
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$OUT_DIR/$name.log" || rc=$?
  end=$(date +%s.%N)
  STEPS+=("$(printf '%-10s %8s s  exit %d' "$name" "$(seconds_between "$start" "$end")" "$rc")")
  if [[ $rc -ne 0 ]]; then
    FAILED=1
    echo "=== $name failed (exit $rc)"
  fi
  return 0
}

machine() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv || true
  nvcc --version | tail -2 || true
  nproc
}

build() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$BUILD_DIR" -j16 --target test_cuda_kernels bench_gpu
}

# Lists shared libraries the executables cannot find; a non-empty list explains a failure to start.
libraries() {
  local missing=0
  for exe in "$TEST_EXE" "$BENCH_EXE"; do
    if ldd "$exe" | grep "not found"; then missing=1; fi
  done
  [[ $missing -eq 0 ]] && echo "all shared libraries found"
  return $missing
}

# ctest where the build dir's recorded paths are valid here; otherwise (a build dir carried from another
# checkout path) the same GoogleTest executable run directly.
cuda_tests() {
  local source_dir
  source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
  if [[ "$source_dir" == "$PWD" ]]; then
    (cd "$BUILD_DIR" && timeout 300 ctest -L cuda --output-on-failure --output-junit "$OUT_DIR/cuda-tests.xml")
  else
    echo "(build dir configured in '$source_dir', running the test executable directly)"
    timeout 300 "$TEST_EXE" --gtest_output="xml:$OUT_DIR/cuda-tests.xml"
  fi
}

bench() {
  timeout 300 "$BENCH_EXE" --json "$OUT_DIR/bench_gpu.json"
}

# The CLI end to end on the GPU: the README's planted problem factored by the cuda and the cpu backends.
cli() {
  local dnmf="$BUILD_DIR/bin/dnmf" work="$OUT_DIR/cli"
  [[ -x "$dnmf" ]] || { echo "no dnmf binary in $BUILD_DIR/bin"; return 1; }
  mkdir -p "$work"
  timeout 60 "$dnmf" gen --rows 2000 --cols 1500 --rank 8 --noise 0.01 --seed 1 -o "$work/A.npy"
  for backend in cuda cpu; do
    timeout 120 "$dnmf" factor "$work/A.npy" -k 8 --algo mu --iters 200 --tol 0 --backend "$backend" --quiet \
      -o "$work/$backend"
  done
  rm -f "$work"/A*.npy "$work"/*/W.npy "$work"/*/H.npy
}

step machine machine
if [[ ! -x "$TEST_EXE" || ! -x "$BENCH_EXE" ]]; then
  step build build
fi
step libraries libraries
step tests cuda_tests
step bench bench
step cli cli

echo
echo "=== steps (total $(seconds_between "$SCRIPT_START" "$(date +%s.%N)") s)"
printf '%s\n' "${STEPS[@]}" | tee "$OUT_DIR/steps.txt"
exit $FAILED
