// What the GPU itself can do, measured in the same run as the backend: cuBLAS on the exact GEMM shapes
// of one MU iteration, device-to-device copy bandwidth, and pinned host-to-device bandwidth.
#pragma once

#include <string>

#include "dnmf/matrix.hpp"

namespace dnmf::bench {

/// Name, multiprocessors and memory of the current device, one line.
std::string device_description();

/// Best-of-`reps` seconds for the two products of one MU iteration on a resident dense A (m x n, column
/// major, device memory): P = Wt·A (k x n) and Qᵀ = H·Aᵀ (k x m), straight through cuBLAS.
template <class T>
double cublas_mu_products_seconds(const T* a_device, index_t m, index_t n, index_t k, int reps);

/// Device memory bandwidth as bytes read plus bytes written per second by cudaMemcpy of `bytes` D2D.
double device_copy_bandwidth(std::size_t bytes, int reps);

/// Host-to-device bandwidth from pinned (cudaMallocHost) memory, bytes per second, for `bytes` at a time.
double pinned_h2d_bandwidth(std::size_t bytes, int reps);

}  // namespace dnmf::bench
