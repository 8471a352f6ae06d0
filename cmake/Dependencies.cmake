# Finds the libraries dnmf builds on. Required: BLAS (OpenBLAS preferred, its OpenMP flavour so that
# BLAS calls made inside our own parallel regions stay single-threaded), OpenMP, threads.
# Required as well: libzip (.npz input), nlohmann_json, CLI11.
# Optional, by option and by presence: CUDA toolkit, MPI, HDF5.
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

# The BLAS is chosen at configure time with DNMF_BLAS (docs/benchmarks.md, "BLAS choice", has the figures
# behind the default). Each must be an OpenMP-threaded build that runs single-threaded when called inside an
# active OpenMP team, which our kernels rely on:
#   openblas  Debian's OpenBLAS, OpenMP flavour (libopenblas-openmp-dev): the default
#   blis      Debian's BLIS, OpenMP flavour (libblis-openmp-dev)
#   mkl       Intel MKL's single dynamic library, mkl_rt, run on GNU OpenMP (e.g. `pip install mkl-devel` into
#             a venv and -DDNMF_MKL_ROOT=<venv>)
set(DNMF_BLAS "openblas" CACHE STRING "BLAS library: openblas, blis or mkl")
set_property(CACHE DNMF_BLAS PROPERTY STRINGS openblas blis mkl)
set(DNMF_MKL_ROOT "" CACHE PATH "With DNMF_BLAS=mkl: the prefix holding lib/libmkl_rt.so* and include/mkl_cblas.h")
add_library(dnmf_blas INTERFACE)
add_library(dnmf::blas ALIAS dnmf_blas)
if(DNMF_BLAS STREQUAL "openblas")
  find_library(DNMF_BLAS_LIBRARY NAMES openblas
    PATHS /usr/lib/x86_64-linux-gnu/openblas-openmp /usr/lib/aarch64-linux-gnu/openblas-openmp
    NO_DEFAULT_PATH)
  if(NOT DNMF_BLAS_LIBRARY)
    find_library(DNMF_BLAS_LIBRARY NAMES openblas)
  endif()
  find_path(DNMF_CBLAS_INCLUDE_DIR NAMES cblas.h PATH_SUFFIXES openblas)
  set(hint "install libopenblas-openmp-dev (scripts/install-deps.sh does)")
elseif(DNMF_BLAS STREQUAL "blis")
  find_library(DNMF_BLAS_LIBRARY NAMES blis
    PATHS /usr/lib/x86_64-linux-gnu/blis-openmp /usr/lib/aarch64-linux-gnu/blis-openmp NO_DEFAULT_PATH)
  find_path(DNMF_CBLAS_INCLUDE_DIR NAMES cblas.h
    PATHS /usr/include/x86_64-linux-gnu/blis-openmp /usr/include/aarch64-linux-gnu/blis-openmp NO_DEFAULT_PATH)
  # BLIS has no LAPACK (NNDSVD's eigensolver needs dsyev): the reference LAPACK, which calls BLIS's BLAS.
  find_library(DNMF_LAPACK_LIBRARY NAMES lapack
    PATHS /usr/lib/x86_64-linux-gnu/lapack /usr/lib/aarch64-linux-gnu/lapack NO_DEFAULT_PATH)
  if(NOT DNMF_LAPACK_LIBRARY)
    message(FATAL_ERROR "DNMF_BLAS=blis needs LAPACK: install liblapack-dev")
  endif()
  target_link_libraries(dnmf_blas INTERFACE ${DNMF_LAPACK_LIBRARY})
  set(hint "install libblis-openmp-dev")
elseif(DNMF_BLAS STREQUAL "mkl")
  find_library(DNMF_BLAS_LIBRARY NAMES mkl_rt libmkl_rt.so.3 libmkl_rt.so.2 HINTS ${DNMF_MKL_ROOT}/lib)
  find_path(DNMF_CBLAS_INCLUDE_DIR NAMES mkl_cblas.h HINTS ${DNMF_MKL_ROOT}/include)
  target_compile_definitions(dnmf_blas INTERFACE DNMF_BLAS_MKL=1)
  set(hint "pip install mkl-devel into a venv and pass -DDNMF_MKL_ROOT=<venv>")
else()
  message(FATAL_ERROR "DNMF_BLAS is '${DNMF_BLAS}'; it must be openblas, blis or mkl")
endif()
if(NOT DNMF_BLAS_LIBRARY OR NOT DNMF_CBLAS_INCLUDE_DIR)
  message(FATAL_ERROR "DNMF_BLAS=${DNMF_BLAS}: library or CBLAS header not found: ${hint}")
endif()
message(STATUS "dnmf: BLAS ${DNMF_BLAS}: ${DNMF_BLAS_LIBRARY}")
target_link_libraries(dnmf_blas INTERFACE ${DNMF_BLAS_LIBRARY})
target_include_directories(dnmf_blas INTERFACE ${DNMF_CBLAS_INCLUDE_DIR})

find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 REQUIRED)
# libzip: the zip container of numpy's .npz files (deflate through zlib inside libzip; it checks each member's
# CRC). A private dependency of the shared library: consumers of the installed package do not need it. Found by
# pkg-config: Debian's libzip CMake package names the zipcmp/zipmerge/ziptool programs, which are packaged
# separately, and refuses to load without them.
find_package(PkgConfig REQUIRED)
pkg_check_modules(DNMF_LIBZIP QUIET IMPORTED_TARGET libzip)
if(NOT DNMF_LIBZIP_FOUND)
  message(FATAL_ERROR "libzip not found: install libzip-dev (scripts/install-deps.sh does)")
endif()
message(STATUS "dnmf: libzip ${DNMF_LIBZIP_VERSION} (.npz input)")
add_library(dnmf_zip INTERFACE)
add_library(dnmf::zip ALIAS dnmf_zip)
target_link_libraries(dnmf_zip INTERFACE PkgConfig::DNMF_LIBZIP)

set(DNMF_HAVE_CUDA OFF)
if(DNMF_ENABLE_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(DNMF_HAVE_CUDA ON)
    # Ampere and Hopper unless the user chose (-DCMAKE_CUDA_ARCHITECTURES or CUDAARCHS): the GPUs the
    # backend is written for; must be set before the language is enabled, which would pick nvcc's default.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    # The shared CUDA runtime, as cuBLAS and cuSPARSE use it, for every target (executables that link
    # dnmf_core get the runtime of their own CUDA_RUNTIME_LIBRARY): one runtime in the process.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # Kernels are C++20 like the rest. CMake before 3.26 or so knows no C++20 flag for nvcc (and takes the
    # CUDA dialect from CMAKE_CXX_STANDARD), so it is told the flag here.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION OR CMAKE_CUDA20_STANDARD_COMPILE_OPTION STREQUAL "")
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    message(STATUS "dnmf: CUDA backend, nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    message(STATUS "dnmf: no CUDA compiler found; the CUDA backend is not built")
  endif()
endif()

# MPI (the distributed solver's communicator) and HDF5 (parallel, per-rank reads and one shared output file):
# built in when found, and the build reports it; without them one process runs as a 1x1 grid.
set(DNMF_HAVE_MPI OFF)
if(DNMF_ENABLE_MPI)
  find_package(MPI QUIET COMPONENTS CXX)
  if(MPI_CXX_FOUND)
    set(DNMF_HAVE_MPI ON)
    message(STATUS "dnmf: MPI found (${MPI_CXX_LIBRARY_VERSION_STRING}); distributed solver built")
  else()
    message(STATUS "dnmf: MPI not found (install libopenmpi-dev for the distributed build)")
  endif()
endif()
set(DNMF_HAVE_HDF5 OFF)
if(DNMF_ENABLE_HDF5 AND DNMF_HAVE_MPI)
  # The parallel build of HDF5 (Debian: libhdf5-openmpi-dev), so ranks read and write one file together.
  set(HDF5_PREFER_PARALLEL ON)
  find_package(HDF5 QUIET COMPONENTS C)
  if(HDF5_FOUND AND HDF5_IS_PARALLEL)
    set(DNMF_HAVE_HDF5 ON)
    message(STATUS "dnmf: parallel HDF5 found (${HDF5_VERSION}); HDF5 input/output built")
  else()
    message(STATUS "dnmf: parallel HDF5 not found (install libhdf5-openmpi-dev for HDF5 input/output)")
  endif()
endif()
