#include "gpu_ceilings.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "backend/cuda/blas_calls.hpp"
#include "backend/cuda/check.hpp"
#include "dnmf/index.hpp"
#include "synthetic.hpp"

namespace dnmf::bench {
namespace {

// A stream and two events; times work queued on the stream by event pairs, best of reps after a warm-up.
class StreamTimer {
 public:
  StreamTimer() {
    DNMF_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    DNMF_CUDA_CHECK(cudaEventCreate(&start_));
    DNMF_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~StreamTimer() {
    (void)cudaEventDestroy(stop_);
    (void)cudaEventDestroy(start_);
    (void)cudaStreamDestroy(stream_);
  }
  StreamTimer(const StreamTimer&) = delete;
  StreamTimer& operator=(const StreamTimer&) = delete;
  [[nodiscard]] cudaStream_t stream() const { return stream_; }

  double best_seconds(int reps, const std::function<void()>& queue_work) {
    queue_work();  // warm-up: library heuristics, clocks
    DNMF_CUDA_CHECK(cudaStreamSynchronize(stream_));
    float best_ms = std::numeric_limits<float>::max();
    for (int r = 0; r < std::max(reps, 1); ++r) {
      DNMF_CUDA_CHECK(cudaEventRecord(start_, stream_));
      queue_work();
      DNMF_CUDA_CHECK(cudaEventRecord(stop_, stream_));
      DNMF_CUDA_CHECK(cudaEventSynchronize(stop_));
      float ms = 0;
      DNMF_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
      best_ms = std::min(best_ms, ms);
    }
    return static_cast<double>(best_ms) / 1e3;
  }

 private:
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

// Device memory freed on scope exit.
struct DeviceBlock {
  explicit DeviceBlock(std::size_t bytes) { DNMF_CUDA_CHECK(cudaMalloc(&ptr, std::max<std::size_t>(bytes, 1))); }
  ~DeviceBlock() { (void)cudaFree(ptr); }
  DeviceBlock(const DeviceBlock&) = delete;
  DeviceBlock& operator=(const DeviceBlock&) = delete;
  void* ptr = nullptr;
};

// A k x cols device factor with random entries (zeros would flatter the arithmetic units' power draw).
template <class T>
void upload_random(void* dst, index_t k, index_t cols, std::uint64_t seed) {
  const DenseMatrix<T> host = random_dense<T>(k, cols, seed);
  DNMF_CUDA_CHECK(cudaMemcpy(dst, host.data(), dnmf::to_size(k * cols) * sizeof(T), cudaMemcpyHostToDevice));
}

}  // namespace

std::string device_description() {
  int device = 0;
  DNMF_CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  DNMF_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  int runtime = 0, driver = 0;
  DNMF_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  DNMF_CUDA_CHECK(cudaDriverGetVersion(&driver));
  return std::string(prop.name) + ", " + std::to_string(prop.multiProcessorCount) + " SMs, " +
         std::to_string(prop.totalGlobalMem >> 30) + " GiB, compute " + std::to_string(prop.major) + "." +
         std::to_string(prop.minor) + ", runtime " + std::to_string(runtime) + ", driver " + std::to_string(driver);
}

template <class T>
double cublas_mu_products_seconds(const T* a_device, index_t m, index_t n, index_t k, int reps) {
  StreamTimer timer;
  cublasHandle_t handle = nullptr;
  DNMF_CUDA_CHECK(cublasCreate(&handle));
  DeviceBlock wt(dnmf::to_size(k * m) * sizeof(T)), h(dnmf::to_size(k * n) * sizeof(T));
  DeviceBlock p(dnmf::to_size(k * n) * sizeof(T)), qt(dnmf::to_size(k * m) * sizeof(T));
  double seconds = 0;
  try {
    DNMF_CUDA_CHECK(cublasSetStream(handle, timer.stream()));
    upload_random<T>(wt.ptr, k, m, 11);
    upload_random<T>(h.ptr, k, n, 12);
    const T one = T(1), zero = T(0);
    seconds = timer.best_seconds(reps, [&] {
      DNMF_CUDA_CHECK(backend::cuda::blas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, k, n, m, &one,
                                                static_cast<const T*>(wt.ptr), k, a_device, m, &zero,
                                                static_cast<T*>(p.ptr), k));
      DNMF_CUDA_CHECK(backend::cuda::blas::gemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, k, m, n, &one,
                                                static_cast<const T*>(h.ptr), k, a_device, m, &zero,
                                                static_cast<T*>(qt.ptr), k));
    });
  } catch (...) {
    (void)cublasDestroy(handle);
    throw;
  }
  (void)cublasDestroy(handle);
  return seconds;
}

double device_copy_bandwidth(std::size_t bytes, int reps) {
  StreamTimer timer;
  DeviceBlock src(bytes), dst(bytes);
  DNMF_CUDA_CHECK(cudaMemsetAsync(src.ptr, 1, bytes, timer.stream()));
  const double s = timer.best_seconds(reps, [&] {
    DNMF_CUDA_CHECK(cudaMemcpyAsync(dst.ptr, src.ptr, bytes, cudaMemcpyDeviceToDevice, timer.stream()));
  });
  return 2.0 * static_cast<double>(bytes) / s;
}

double pinned_h2d_bandwidth(std::size_t bytes, int reps) {
  StreamTimer timer;
  DeviceBlock dst(bytes);
  void* host = nullptr;
  DNMF_CUDA_CHECK(cudaMallocHost(&host, bytes));
  double s = 0;
  try {
    std::memset(host, 1, bytes);  // touch every page before timing
    s = timer.best_seconds(
        reps, [&] { DNMF_CUDA_CHECK(cudaMemcpyAsync(dst.ptr, host, bytes, cudaMemcpyHostToDevice, timer.stream())); });
  } catch (...) {
    (void)cudaFreeHost(host);
    throw;
  }
  (void)cudaFreeHost(host);
  return static_cast<double>(bytes) / s;
}

template double cublas_mu_products_seconds<float>(const float*, index_t, index_t, index_t, int);
template double cublas_mu_products_seconds<double>(const double*, index_t, index_t, index_t, int);

}  // namespace dnmf::bench
