#!/usr/bin/env bash
# The GPU machine's script: CUDA tests, the masked CLI case and masked-vs-unmasked timings (missing values on the
# GPU), then bench_gpu (resident mode), then bench_gpu_stream (A larger than the device budget, tile x depth
# sweep, overlap timeline, disk -> pinned -> device), then the CLI end to end.
#   bash bench/gpu/run.sh [BUILD_DIR]        (from the repository root; BUILD_DIR defaults to build/release)
# Uses the binaries in BUILD_DIR when they are there (built elsewhere and carried: bench/gpu/carry.sh stages
# them under .device/), else configures and builds the targets here. Shared libraries the machine lacks
# (OpenBLAS, libgomp, MPI, ...) are looked for in .device/lib first; NCCL (loaded at run time) wherever the
# machine has libnccl.so.2. Budget: under 8 minutes on one H200 (each step has its own time limit).
# Results: $OUT (default /tmp/dnmf-bench-gpu) gets summary.txt (the tables and the steps, also printed last),
# bench_gpu.json, bench_gpu_stream.json, timeline.csv and logs.tar.gz (every log and test report): few files,
# so that they all come back from a machine that returns at most eight.
set -euo pipefail

BUILD_DIR="${1:-build/release}"
# Binaries and libraries staged by bench/gpu/carry.sh arrive packed.
if [[ -f .device/payload.tar.xz ]]; then tar -xJf .device/payload.tar.xz -C .device; fi
OUT_DIR="${OUT:-/tmp/dnmf-bench-gpu}"
WORK="$(mktemp -d /tmp/dnmf-gpu-run.XXXXXX)"
mkdir -p "$OUT_DIR"
export LD_LIBRARY_PATH="$PWD/.device/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for cuda_lib in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [[ -d "$cuda_lib" ]] && LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$cuda_lib"
done

source "$(dirname "${BASH_SOURCE[0]}")/targets.sh"
CUDA_TESTS=("${GPU_TESTS[@]}")
BENCH_EXE="$BUILD_DIR/bin/bench_gpu"
STREAM_EXE="$BUILD_DIR/bin/bench_gpu_stream"
SCRIPT_START=$(date +%s.%N)
STEPS=()
FAILED=0

seconds_between() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# Runs "$@" as a named step with its own log; records its time and whether it failed.
step() {
  local name="$1"
  shift
  local start end rc=0
  start=$(date +%s.%N)
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$WORK/$name.log" || rc=$?
  end=$(date +%s.%N)
  STEPS+=("$(printf '%-10s %8s s  exit %d' "$name" "$(seconds_between "$start" "$end")" "$rc")")
  if [[ $rc -ne 0 ]]; then
    FAILED=1
    echo "=== $name failed (exit $rc)"
  fi
  return 0
}

# The summary (tables, then steps) printed last and everything packed into $OUT, also when a step is killed.
finish() {
  {
    for table in "$WORK"/masked_gpu.table "$WORK"/bench_gpu.table "$WORK"/bench_gpu_stream.table; do
      if [[ -s "$table" ]]; then
        cat "$table"
        echo
      fi
    done
    echo "=== steps (total $(seconds_between "$SCRIPT_START" "$(date +%s.%N)") s)"
    printf '%s\n' "${STEPS[@]}"
  } >"$OUT_DIR/summary.txt"
  for f in bench_gpu.json bench_gpu_stream.json timeline.csv; do
    if [[ -f "$WORK/$f" ]]; then cp "$WORK/$f" "$OUT_DIR/$f"; fi
  done
  tar -czf "$OUT_DIR/logs.tar.gz" -C "$WORK" . 2>/dev/null || true
  echo
  cat "$OUT_DIR/summary.txt"
  rm -rf "$WORK"
}
trap finish EXIT

# NCCL is loaded at run time: point the loader at the machine's copy where the default path lacks it
# (the CUDA image keeps one in the Python packages).
find_nccl() {
  [[ -n "${DNMF_NCCL_LIBRARY:-}" ]] && return 0
  ldconfig -p 2>/dev/null | grep -q 'libnccl.so.2' && return 0
  local candidate
  for candidate in /usr/local/cuda/lib64/libnccl.so.2 /usr/local/cuda/lib/libnccl.so.2 \
    $(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' \
      2>/dev/null || true); do
    if [[ -f "$candidate" ]]; then
      export DNMF_NCCL_LIBRARY="$candidate"
      return 0
    fi
  done
}

machine() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv || true
  nvcc --version | tail -2 || true
  nproc
  free -g | head -2 || true
  echo "NCCL: ${DNMF_NCCL_LIBRARY:-$(ldconfig -p 2>/dev/null | grep -m1 libnccl.so.2 || echo 'not found')}"
}

build() {
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$BUILD_DIR" -j16 --target "${CUDA_TESTS[@]}" "${GPU_BINS[@]}"
}

# Lists shared libraries the executables cannot find; a non-empty list explains a failure to start.
libraries() {
  local missing=0 exe
  for exe in "${CUDA_TESTS[@]/#/$BUILD_DIR/tests/cuda/}" "$BENCH_EXE" "$STREAM_EXE"; do
    [[ -x "$exe" ]] || { echo "missing: $exe"; missing=1; continue; }
    if ldd "$exe" | grep "not found"; then missing=1; fi
  done
  [[ $missing -eq 0 ]] && echo "all shared libraries found"
  return "$missing"
}

# ctest where the build dir's recorded paths are valid here (the MPI-launched NCCL tests left out: one GPU);
# otherwise (a build dir carried from another checkout path) the GoogleTest executables run directly.
cuda_tests() {
  local source_dir rc=0 t
  source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || true)
  if [[ "$source_dir" == "$PWD" ]]; then
    (cd "$BUILD_DIR" && timeout 240 ctest -L cuda -LE mpi --output-on-failure --output-junit "$WORK/cuda-tests.xml")
    return
  fi
  echo "(build dir configured in '$source_dir', running the test executables directly)"
  for t in "${CUDA_TESTS[@]}"; do
    timeout 150 "$BUILD_DIR/tests/cuda/$t" --gtest_output="xml:$WORK/$t.xml" || rc=1
  done
  return "$rc"
}

bench() {
  timeout 240 "$BENCH_EXE" --json "$WORK/bench_gpu.json" | tee "$WORK/bench_gpu.table"
}

# Streamed dense MU: A = 4 GiB of f32 in host memory, device budget forced to 1 GiB (A = 4x the budget), tile
# sizes x ring depths, the pinned H2D bandwidth in the same run, the timeline of the best one, the file path.
stream() {
  timeout 180 "$STREAM_EXE" --a-gib 4 --budget-gib 1 --k 16 --iters 6 --tiles-mib 16,64,256 --depths 2,3,4 \
    --json "$WORK/bench_gpu_stream.json" --timeline "$WORK/timeline.csv" | tee "$WORK/bench_gpu_stream.table"
}

# Missing values on the GPU (issue 15): the CLI case that compares --backend cuda with the cpu backend for every
# masked algorithm (dense --mask, sparse --unstored missing), then masked vs unmasked seconds per iteration.
masked_cli() {
  timeout 120 python3 tests/cli/cli_test.py --dnmf "$BUILD_DIR/bin/dnmf" --work "$WORK/masked_cli" masked_cuda &&
    echo "cli.masked_cuda passed"
}

masked_speed() {
  timeout 240 python3 bench/gpu/masked_gpu.py --dnmf "$BUILD_DIR/bin/dnmf" | tee "$WORK/masked_gpu.table"
}

# The CLI end to end on the GPU: the README's planted problem factored by the cuda and the cpu backends.
cli() {
  local dnmf="$BUILD_DIR/bin/dnmf" work="$WORK/cli" rc=0
  [[ -x "$dnmf" ]] || { echo "no dnmf binary in $BUILD_DIR/bin"; return 1; }
  mkdir -p "$work"
  timeout 60 "$dnmf" gen --rows 2000 --cols 1500 --rank 8 --noise 0.01 --seed 1 -o "$work/A.npy" || return 1
  for backend in cuda cpu; do
    timeout 120 "$dnmf" factor "$work/A.npy" -k 8 --algo mu --iters 200 --tol 0 --backend "$backend" --quiet \
      -o "$work/$backend" || rc=1
  done
  rm -f "$work"/A*.npy "$work"/*/W.npy "$work"/*/H.npy
  return "$rc"
}

find_nccl
step machine machine
need_build=0
for t in "${CUDA_TESTS[@]}"; do [[ -x "$BUILD_DIR/tests/cuda/$t" ]] || need_build=1; done
[[ -x "$BENCH_EXE" && -x "$STREAM_EXE" ]] || need_build=1
if [[ $need_build -eq 1 ]]; then
  step build build
fi
step libraries libraries
# DNMF_GPU_STEPS picks steps for a shorter rerun (e.g. "tests masked_cli"); all by default.
for name in ${DNMF_GPU_STEPS:-tests masked_cli masked bench stream cli}; do
  case "$name" in
    tests) step tests cuda_tests ;;
    masked_cli) step masked_cli masked_cli ;;
    masked) step masked masked_speed ;;
    bench) step bench bench ;;
    stream) step stream stream ;;
    cli) step cli cli ;;
    *) echo "unknown step $name" && FAILED=1 ;;
  esac
done
exit $FAILED
