#!/usr/bin/env bash
# Installs the Debian packages dnmf builds with; does nothing when they are all present (idempotent).
# Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libopenblas-openmp-dev      # BLAS + LAPACK, OpenMP flavour (BLAS calls inside our parallel regions stay serial)
  libcli11-dev nlohmann-json3-dev libgtest-dev
  openmpi-bin libopenmpi-dev  # the distributed solver (mpirun, MPI C++ bindings via the C API)
  libhdf5-openmpi-dev         # parallel HDF5: per-rank hyperslab reads, one shared output file
  libzip-dev                  # .npz input: numpy/scipy archives (zip members, stored or deflated)
  gnuplot-nox                 # NMFk's k-selection plot (svg and png terminals)
  clang libclang-rt-dev libomp-dev  # the fuzz preset: libFuzzer with ASan/UBSan, and clang's OpenMP
  python3 python3-numpy
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
