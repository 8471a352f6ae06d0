#!/usr/bin/env bash
# Stages binaries built on this machine for the GPU machine, where building costs device time: the CUDA test
# executables and the benchmarks as .device/build (the layout run.sh expects of a build dir), and the shared
# libraries they load that the GPU machine's image may lack as .device/lib (libdnmf_core.so and the CUDA module
# libdnmf_cuda.so included), packed into .device/payload.tar.xz
# (run.sh unpacks it). The base C/C++ runtime and the CUDA libraries are left out (the image has them), and so
# is NCCL (loaded at run time from the image's copy).
#   bash bench/gpu/carry.sh [BUILD_DIR]      (BUILD_DIR defaults to build/release; build it first, e.g.
#     cmake -S . -B BUILD_DIR -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 &&
#     (source bench/gpu/targets.sh && ninja -C BUILD_DIR "${GPU_TESTS[@]}" "${GPU_BINS[@]}"))
# then on the GPU machine, with .device carried:  bash bench/gpu/run.sh .device/build
set -euo pipefail

BUILD_DIR="${1:-build/release}"
DEST="${DNMF_CARRY_DIR:-.device}" # another folder for a dry run; run.sh reads .device
LIMIT_MIB=60 # what travels to the machine is capped at 64 MiB with the source tree
source "$(dirname "${BASH_SOURCE[0]}")/targets.sh"
TESTS=("${GPU_TESTS[@]}")
BINS=("${GPU_BINS[@]}")

rm -rf "${DEST:?}/build" "${DEST:?}/lib" "${DEST:?}/payload.tar.xz"
mkdir -p "$DEST/build/bin" "$DEST/build/tests/cuda" "$DEST/lib"
exes=()
for t in "${TESTS[@]}"; do
  cp "$BUILD_DIR/tests/cuda/$t" "$DEST/build/tests/cuda/"
  exes+=("$DEST/build/tests/cuda/$t")
done
for b in "${BINS[@]}"; do
  cp "$BUILD_DIR/bin/$b" "$DEST/build/bin/"
  exes+=("$DEST/build/bin/$b")
done
strip --strip-unneeded "${exes[@]}"
# The CUDA module: dnmf_core loads it with dlopen from its own directory (src/backend/cuda_module.cpp), so no
# executable that reaches the backend only through dnmf_core (dnmf) names it and ldd below would not find it.
# It travels beside libdnmf_core.so in .device/lib, and its own dependencies are scanned like an executable's.
cp -L "$BUILD_DIR/lib/libdnmf_cuda.so" "$DEST/lib/"
exes+=("$DEST/lib/libdnmf_cuda.so")

# Libraries the executables resolve here, less those every Linux and the CUDA image have.
base='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|librt\.|libpthread\.|libstdc\+\+|libgcc_s|libcuda\.|libcudart|libcublas|libcusparse|libnvJitLink|libnccl)'
for exe in "${exes[@]}"; do
  ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r name path; do
  if [[ ! "$name" =~ $base ]]; then cp -L "$path" "$DEST/lib/$name"; fi
done

# libdnmf_core.so comes from ldd above (every executable links it); both dnmf libraries must be there.
for lib in libdnmf_core.so libdnmf_cuda.so; do
  [[ -f "$DEST/lib/$lib" ]] || { echo "carry.sh: $lib not staged (built in $BUILD_DIR/lib?)" >&2; exit 1; }
done
strip --strip-unneeded "$DEST/lib/libdnmf_core.so" "$DEST/lib/libdnmf_cuda.so"
ls -la "$DEST/lib"
# Packed: the libraries (OpenBLAS alone is 36 MiB) compress about five to one; run.sh unpacks the payload.
tar -cJf "$DEST/payload.tar.xz" -C "$DEST" build lib
rm -rf "${DEST:?}/build" "${DEST:?}/lib"
total_kib=$(du -sk "$DEST/payload.tar.xz" | awk '{ print $1 }')
echo "staged $DEST/payload.tar.xz: $((total_kib / 1024)) MiB (limit ${LIMIT_MIB} MiB)"
if ((total_kib > LIMIT_MIB * 1024)); then
  echo "too large to carry: build for sm_90 only (-DCMAKE_CUDA_ARCHITECTURES=90) or carry fewer libraries" >&2
  exit 1
fi
