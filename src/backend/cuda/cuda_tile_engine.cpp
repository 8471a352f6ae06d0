#include "backend/cuda/cuda_tile_engine.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "backend/cuda/blas_calls.hpp"
#include "backend/cuda/check.hpp"
#include "backend/cuda/context.hpp"
#include "backend/cuda/device_buffer.hpp"
#include "backend/cuda/device_memory.hpp"
#include "backend/cuda/launch.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "stream/device_planner.hpp"

namespace dnmf::backend::cuda {
namespace {

// Events without timing (cheaper to record and wait on) for ordering; with timing for the timeline.
cudaEvent_t make_event(bool timing) {
  cudaEvent_t e = nullptr;
  DNMF_CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return e;
}

void destroy_events(std::vector<cudaEvent_t>& events) noexcept {
  for (cudaEvent_t e : events)
    if (e) (void)cudaEventDestroy(e);
  events.clear();
}

template <class T>
class CudaTileEngine final : public stream::TileEngine<T> {
 public:
  explicit CudaTileEngine(CudaKernels<T>& kernels) : kernels_(kernels), context_(kernels.context()) {
    DNMF_CUDA_CHECK(cudaGetDevice(&device_));
    DNMF_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    try {
      partials_.reserve(2 * to_size(kReduceBlocks) * sizeof(double));
    } catch (...) {
      release();
      throw;
    }
  }
  ~CudaTileEngine() override { release(); }
  CudaTileEngine(const CudaTileEngine&) = delete;
  CudaTileEngine& operator=(const CudaTileEngine&) = delete;

  Kernels<T>& kernels() override { return kernels_; }
  stream::BufferAllocator host_allocator() override { return pinned_allocator(); }
  [[nodiscard]] bool pins_host() const override { return true; }

  void configure(int depth, std::size_t elements, std::size_t tiles, std::size_t sums, int host_slots) override {
    if (!slots_.empty()) throw Error("internal: a tile engine is configured once");
    for (int s = 0; s < depth; ++s) {
      slots_.emplace_back(elements * sizeof(T));
      copied_.push_back(make_event(false));
      consumed_.push_back(make_event(false));
    }
    for (int h = 0; h < host_slots; ++h) host_read_.push_back(make_event(false));
    tiles_ = tiles;
    sums_.reserve(std::max<std::size_t>(sums, 1) * 2 * sizeof(double));
    DNMF_CUDA_CHECK(cudaMemsetAsync(sums_.get(), 0, std::max<std::size_t>(sums, 1) * 2 * sizeof(double), compute()));
    void* pinned = nullptr;
    DNMF_CUDA_CHECK(cudaMallocHost(&pinned, std::max<std::size_t>(sums, 1) * 2 * sizeof(double)));
    host_sums_ = static_cast<double*>(pinned);
    sum_capacity_ = std::max<std::size_t>(sums, 1);
    slot_elements_ = elements;
  }

  T* slot(int s) override { return static_cast<T*>(slots_[to_size(s)].get()); }

  bool pin(const void* host, std::size_t bytes) override {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, host) == cudaSuccess && attributes.type == cudaMemoryTypeHost)
      return true;  // already page-locked (cudaHostAlloc or registered by someone else)
    (void)cudaGetLastError();
    void* p = const_cast<void*>(host);
    const cudaError_t status = cudaHostRegister(p, bytes, cudaHostRegisterDefault);
    if (status == cudaSuccess) {
      registered_.push_back(p);
      return true;
    }
    (void)cudaGetLastError();  // not fatal: pageable copies still work (memlock limits, odd mappings)
    return status == cudaErrorHostMemoryAlreadyRegistered;
  }

  void copy_in(int s, std::size_t tile, const T* host, index_t rows, index_t cols, index_t ld) override {
    const auto i = to_size(s);
    if (tile == 0) {  // a pass begins
      timing_ = timeline_requested_ && !copy_start_.empty();
      timed_tiles_ = 0;
    }
    DNMF_CUDA_CHECK(cudaStreamWaitEvent(copy_, consumed_[i], 0));
    if (timing_) record(copy_start_, tile, copy_);
    if (rows > 0 && cols > 0) {
      const std::size_t width = to_size(rows) * sizeof(T);
      if (ld == rows || cols == 1) {
        DNMF_CUDA_CHECK(cudaMemcpyAsync(slots_[i].get(), host, width * to_size(cols), cudaMemcpyHostToDevice, copy_));
      } else {
        DNMF_CUDA_CHECK(cudaMemcpy2DAsync(slots_[i].get(), width, host, to_size(ld) * sizeof(T), width, to_size(cols),
                                          cudaMemcpyHostToDevice, copy_));
      }
    }
    DNMF_CUDA_CHECK(cudaEventRecord(copied_[i], copy_));
    if (timing_) record(copy_end_, tile, copy_);
  }

  void mark_host_read(int h) override { DNMF_CUDA_CHECK(cudaEventRecord(host_read_[to_size(h)], copy_)); }

  void wait_host_read(int h) override {
    DNMF_CUDA_CHECK(cudaSetDevice(device_));  // the producer thread's current device
    DNMF_CUDA_CHECK(cudaEventSynchronize(host_read_[to_size(h)]));
  }

  void compute_begin(int s, std::size_t tile) override {
    DNMF_CUDA_CHECK(cudaStreamWaitEvent(compute(), copied_[to_size(s)], 0));
    if (timing_) record(compute_start_, tile, compute());
  }

  void compute_end(int s, std::size_t tile) override {
    DNMF_CUDA_CHECK(cudaEventRecord(consumed_[to_size(s)], compute()));
    if (timing_) {
      record(compute_end_, tile, compute());
      timed_tiles_ = tile + 1;
    }
  }

  void stats(CView<T> tile, std::size_t at) override {
    if (tile.empty()) return zero(at);
    launch_sum_squares(tile, partials(), pair(at), compute());
  }

  void dot(CView<T> x, CView<T> y, std::size_t at) override {
    if (x.empty()) return zero(at);
    launch_dot(x, y, partials(), pair(at), compute());
  }

  // CudaKernels' dense KL product with its sums left in pair `at` instead of fetched: per chunk of columns,
  // the model M = Wtᵀ·H_chunk (cuBLAS), the ratio in place with its sums (our kernel), the product with it.
  void kl_multiply(CView<T> a, Side side, CView<T> y, CView<T> x, View<T> out, T beta, std::size_t at) override {
    const CView<T> wt = side == Side::H ? y : x;
    const CView<T> h = side == Side::H ? x : y;
    const index_t m = a.rows, n = a.cols, k = wt.rows;
    if (k == 0) return zero(at);
    if (m == 0 || n == 0) {
      launch_scale(out, beta, compute());
      return zero(at);
    }
    const auto per_chunk = static_cast<index_t>(static_cast<double>(stream::kKlChunkBytes) / sizeof(T)) / m;
    const index_t width = std::clamp<index_t>(per_chunk, 1, n);
    T* model = static_cast<T*>(model_.reserve(to_size(m * width) * sizeof(T)));
    for (index_t first = 0; first < n; first += width) {
      const index_t last = std::min(n, first + width);
      const index_t w = last - first;
      const T* h_chunk = h.data + first * h.ld;
      gemm(true, false, m, w, k, wt.data, wt.ld, h_chunk, h.ld, T(0), model, m);
      launch_kl_ratio_dense(a.columns(first, last), View<T>{model, m, w, m}, partials(), pair(at), first > 0,
                            compute());
      if (side == Side::H) {
        gemm(false, false, k, w, m, wt.data, wt.ld, model, m, beta, out.data + first * out.ld, out.ld);
      } else {
        gemm(false, true, k, m, w, h_chunk, h.ld, model, m, first == 0 ? beta : T(1), out.data, out.ld);
      }
    }
  }

  std::vector<stream::SumPair> finish(std::size_t count) override {
    if (count > sum_capacity_) throw Error("internal: tile engine asked for more sums than configured");
    std::vector<stream::SumPair> out(count);
    if (count > 0)
      DNMF_CUDA_CHECK(
          cudaMemcpyAsync(host_sums_, sums_.get(), count * 2 * sizeof(double), cudaMemcpyDeviceToHost, compute()));
    DNMF_CUDA_CHECK(cudaStreamSynchronize(compute()));
    for (std::size_t i = 0; i < count; ++i) out[i] = {host_sums_[2 * i], host_sums_[2 * i + 1]};
    return out;
  }

  void set_timeline(bool on) override {
    if (on && copy_start_.empty() && tiles_ > 0) {
      for (std::size_t t = 0; t < tiles_; ++t) {
        copy_start_.push_back(make_event(true));
        copy_end_.push_back(make_event(true));
        compute_start_.push_back(make_event(true));
        compute_end_.push_back(make_event(true));
      }
    }
    timeline_requested_ = on;
  }

  stream::Timeline timeline(std::size_t tiles) override {
    stream::Timeline t;
    if (!timing_ || tiles == 0 || timed_tiles_ < tiles || tiles > tiles_) return t;
    DNMF_CUDA_CHECK(cudaEventSynchronize(compute_end_[tiles - 1]));
    DNMF_CUDA_CHECK(cudaStreamSynchronize(copy_));
    const cudaEvent_t origin = copy_start_[0];
    auto at = [&](cudaEvent_t e) {
      float ms = 0;
      DNMF_CUDA_CHECK(cudaEventElapsedTime(&ms, origin, e));
      return static_cast<double>(ms) * 1e-3;
    };
    for (std::size_t i = 0; i < tiles; ++i)
      t.tiles.push_back({at(copy_start_[i]), at(copy_end_[i]), at(compute_start_[i]), at(compute_end_[i])});
    return t;
  }

  void synchronize() override {
    DNMF_CUDA_CHECK(cudaStreamSynchronize(copy_));
    DNMF_CUDA_CHECK(cudaStreamSynchronize(compute()));
  }

 private:
  [[nodiscard]] cudaStream_t compute() const { return context_.stream(); }
  [[nodiscard]] double* partials() const { return static_cast<double*>(partials_.get()); }
  [[nodiscard]] double* pair(std::size_t at) const {
    if (at >= sum_capacity_) throw Error("internal: tile engine sum index out of range");
    return static_cast<double*>(sums_.get()) + 2 * at;
  }
  void zero(std::size_t at) { DNMF_CUDA_CHECK(cudaMemsetAsync(pair(at), 0, 2 * sizeof(double), compute())); }
  void record(std::vector<cudaEvent_t>& events, std::size_t tile, cudaStream_t stream) {
    if (tile < events.size()) DNMF_CUDA_CHECK(cudaEventRecord(events[tile], stream));
  }
  void gemm(bool ta, bool tb, index_t m, index_t n, index_t k, const T* a, index_t lda, const T* b, index_t ldb, T beta,
            T* c, index_t ldc) {
    const T one(1);
    DNMF_CUDA_CHECK(blas::gemm(context_.blas(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k,
                               &one, a, std::max<index_t>(lda, 1), b, std::max<index_t>(ldb, 1), &beta, c,
                               std::max<index_t>(ldc, 1)));
  }
  void release() noexcept {
    if (copy_) (void)cudaStreamSynchronize(copy_);
    if (context_.stream()) (void)cudaStreamSynchronize(context_.stream());
    for (void* p : registered_) (void)cudaHostUnregister(p);
    registered_.clear();
    destroy_events(copied_);
    destroy_events(consumed_);
    destroy_events(host_read_);
    destroy_events(copy_start_);
    destroy_events(copy_end_);
    destroy_events(compute_start_);
    destroy_events(compute_end_);
    if (host_sums_) (void)cudaFreeHost(host_sums_);
    host_sums_ = nullptr;
    if (copy_) (void)cudaStreamDestroy(copy_);
    copy_ = nullptr;
  }

  CudaKernels<T>& kernels_;
  Context& context_;
  int device_ = 0;
  cudaStream_t copy_ = nullptr;
  std::vector<DeviceBuffer> slots_;
  std::size_t slot_elements_ = 0;
  std::vector<cudaEvent_t> copied_, consumed_, host_read_;
  std::vector<cudaEvent_t> copy_start_, copy_end_, compute_start_, compute_end_;
  std::size_t tiles_ = 0;
  bool timeline_requested_ = false;
  bool timing_ = false;  // the current pass records timing events
  std::size_t timed_tiles_ = 0;
  DeviceBuffer partials_, sums_, model_;
  double* host_sums_ = nullptr;
  std::size_t sum_capacity_ = 0;
  std::vector<void*> registered_;
};

}  // namespace

template <class T>
std::unique_ptr<stream::TileEngine<T>> make_cuda_tile_engine(CudaKernels<T>& kernels) {
  return std::make_unique<CudaTileEngine<T>>(kernels);
}

template std::unique_ptr<stream::TileEngine<float>> make_cuda_tile_engine<float>(CudaKernels<float>&);
template std::unique_ptr<stream::TileEngine<double>> make_cuda_tile_engine<double>(CudaKernels<double>&);

}  // namespace dnmf::backend::cuda
