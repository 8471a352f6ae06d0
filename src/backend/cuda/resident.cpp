#include "backend/cuda/resident.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>

#include "backend/cuda/check.hpp"
#include "backend/cuda/context.hpp"
#include "backend/cuda/launch.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend::cuda {
namespace {

// Above this many stored entries 32-bit offsets overflow.
constexpr index_t kNarrowLimit = std::numeric_limits<std::int32_t>::max();

template <class T>
void upload_span(void* dst, const T* src, index_t count, cudaStream_t stream) {
  if (count > 0) DNMF_CUDA_CHECK(cudaMemcpyAsync(dst, src, to_size(count) * sizeof(T), cudaMemcpyHostToDevice, stream));
}

std::vector<std::int32_t> narrow_rebased(const index_t* indptr, index_t rows, index_t base) {
  std::vector<std::int32_t> out(to_size(rows + 1));
  for (index_t i = 0; i <= rows; ++i) out[to_size(i)] = static_cast<std::int32_t>(indptr[i] - base);
  return out;
}

}  // namespace

template <class T>
DenseView<const T> ResidentStore::upload(const DenseView<const T>& host, cudaStream_t stream) {
  const index_t rows = host.rows;
  const index_t cols = host.cols;
  DeviceBuffer buffer(to_size(std::max<index_t>(rows * cols, 1)) * sizeof(T));
  if (rows > 0 && cols > 0) {
    if (host.ld == rows || cols == 1) {
      upload_span(buffer.get(), host.data, rows * cols, stream);
    } else {
      DNMF_CUDA_CHECK(cudaMemcpy2DAsync(buffer.get(), to_size(rows) * sizeof(T), host.data,
                                        to_size(host.ld) * sizeof(T), to_size(rows) * sizeof(T), to_size(cols),
                                        cudaMemcpyHostToDevice, stream));
    }
    DNMF_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  const T* data = static_cast<const T*>(buffer.get());
  dense_.push_back(std::move(buffer));
  return {data, rows, cols, std::max<index_t>(rows, 1)};
}

template <class T>
CsrView<T> ResidentStore::upload(const CsrView<T>& host, cudaStream_t stream) {
  auto r = std::make_unique<ResidentCsr>();
  r->rows = host.rows;
  r->cols = host.cols;
  const index_t base = host.rows > 0 ? host.indptr[0] : 0;
  const index_t nnz = host.nnz();
  r->wide = nnz > kNarrowLimit;
  r->host_indptr.resize(to_size(host.rows + 1), 0);
  for (index_t i = 0; i <= host.rows && host.rows > 0; ++i) r->host_indptr[to_size(i)] = host.indptr[i] - base;

  // Host temporaries live to the end of the function: the copies below finish before it returns.
  std::vector<std::int32_t> narrow_offsets;
  const std::size_t width = r->wide ? sizeof(std::int64_t) : sizeof(std::int32_t);
  r->offsets.reserve(to_size(host.rows + 1) * width);
  if (r->wide) {
    upload_span(r->offsets.get(), r->host_indptr.data(), host.rows + 1, stream);
  } else {
    narrow_offsets = narrow_rebased(r->host_indptr.data(), host.rows, 0);
    upload_span(r->offsets.get(), narrow_offsets.data(), host.rows + 1, stream);
  }
  r->values.reserve(to_size(std::max<index_t>(nnz, 1)) * sizeof(T));
  upload_span(r->values.get(), host.values + base, nnz, stream);
  r->indices.reserve(to_size(std::max<index_t>(nnz, 1)) * width);
  DeviceBuffer staging;
  if (r->wide) {
    // Widen the 32-bit column indices on the device rather than in a host copy of twice their size.
    staging.reserve(to_size(nnz) * sizeof(std::int32_t));
    upload_span(staging.get(), host.indices + base, nnz, stream);
    launch_rebase_offsets(static_cast<const std::int32_t*>(staging.get()), nnz, 0,
                          static_cast<std::int64_t*>(r->indices.get()), stream);
  } else {
    upload_span(r->indices.get(), host.indices + base, nnz, stream);
  }
  DNMF_CUDA_CHECK(cudaStreamSynchronize(stream));

  const CsrView<T> view{host.rows, host.cols, r->host_indptr.data(), static_cast<const col_index_t*>(r->indices.get()),
                        static_cast<const T*>(r->values.get())};
  csr_.push_back(std::move(r));
  return view;
}

const ResidentCsr* ResidentStore::owner_of(const index_t* indptr) const {
  const std::less_equal<const index_t*> not_after;
  for (const auto& r : csr_) {
    const index_t* first = r->host_indptr.data();
    if (not_after(first, indptr) && not_after(indptr, first + r->rows)) return r.get();
  }
  return nullptr;
}

void ResidentStore::clear() {
  dense_.clear();
  csr_.clear();
}

bool is_device_pointer(const void* p) {
  if (p == nullptr) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

template <class T>
DeviceCsr resolve(Context& context, const CsrView<T>& view) {
  DeviceCsr out;
  out.rows = view.rows;
  out.cols = view.cols;
  if (view.rows == 0) return out;
  const cudaStream_t stream = context.stream();
  const auto count = view.rows + 1;

  if (const ResidentCsr* r = context.residents().owner_of(view.indptr)) {
    const index_t first = view.indptr - r->host_indptr.data();
    const index_t base = view.indptr[0];
    out.nnz = view.indptr[view.rows] - base;
    out.wide = r->wide;
    out.values = static_cast<const T*>(r->values.get()) + base;
    if (r->wide) {
      const auto* offsets = static_cast<const std::int64_t*>(r->offsets.get()) + first;
      out.indices = static_cast<const std::int64_t*>(r->indices.get()) + base;
      out.offsets = offsets;
      if (base != 0) {
        auto* dst = static_cast<std::int64_t*>(context.scratch(Slot::offsets, count * sizeof(std::int64_t)));
        launch_rebase_offsets(offsets, count, base, dst, stream);
        out.offsets = dst;
      }
    } else {
      const auto* offsets = static_cast<const std::int32_t*>(r->offsets.get()) + first;
      out.indices = static_cast<const std::int32_t*>(r->indices.get()) + base;
      out.offsets = offsets;
      if (base != 0) {
        auto* dst = static_cast<std::int32_t*>(context.scratch(Slot::offsets, count * sizeof(std::int32_t)));
        launch_rebase_offsets(offsets, count, base, dst, stream);
        out.offsets = dst;
      }
    }
    return out;
  }

  // A view the store does not own: 32-bit indices, so 32-bit offsets, rebased from wherever indptr lives.
  const bool device_indptr = is_device_pointer(view.indptr);
  index_t base = 0;
  index_t last = 0;
  if (device_indptr) {
    DNMF_CUDA_CHECK(cudaMemcpyAsync(&base, view.indptr, sizeof(index_t), cudaMemcpyDeviceToHost, stream));
    DNMF_CUDA_CHECK(cudaMemcpyAsync(&last, view.indptr + view.rows, sizeof(index_t), cudaMemcpyDeviceToHost, stream));
    DNMF_CUDA_CHECK(cudaStreamSynchronize(stream));
  } else {
    base = view.indptr[0];
    last = view.indptr[view.rows];
  }
  out.nnz = last - base;
  if (out.nnz > kNarrowLimit)
    throw Error("cuda backend: a CSR block with 2^31 or more stored entries must be made resident first");
  auto* dst = static_cast<std::int32_t*>(context.scratch(Slot::offsets, count * sizeof(std::int32_t)));
  if (device_indptr) {
    launch_rebase_offsets(view.indptr, count, base, dst, stream);
  } else {
    const auto narrow = narrow_rebased(view.indptr, view.rows, base);
    upload_span(dst, narrow.data(), count, stream);
    DNMF_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  out.offsets = dst;
  out.indices = view.indices + base;
  out.values = view.values + base;
  return out;
}

template DenseView<const float> ResidentStore::upload<float>(const DenseView<const float>&, cudaStream_t);
template DenseView<const double> ResidentStore::upload<double>(const DenseView<const double>&, cudaStream_t);
template CsrView<float> ResidentStore::upload<float>(const CsrView<float>&, cudaStream_t);
template CsrView<double> ResidentStore::upload<double>(const CsrView<double>&, cudaStream_t);
template DeviceCsr resolve<float>(Context&, const CsrView<float>&);
template DeviceCsr resolve<double>(Context&, const CsrView<double>&);

}  // namespace dnmf::backend::cuda
