// The resident copy of A on the device (make_resident) and the device form of CSR views.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backend/cuda/device_buffer.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::backend::cuda {

class Context;

/// A CSR matrix (or a row range of one) as cuSPARSE and our kernels take it: row offsets start at zero,
/// and offsets and column indices share one integer width (cuSPARSE's safest combination).
struct DeviceCsr {
  index_t rows = 0;
  index_t cols = 0;
  index_t nnz = 0;
  const void* offsets = nullptr;  ///< rows + 1 entries, offsets[0] == 0
  const void* indices = nullptr;  ///< nnz entries
  const void* values = nullptr;   ///< nnz entries of the matrix's value type
  bool wide = false;              ///< 64-bit offsets and indices; 32-bit otherwise
};

/// One CSR matrix uploaded by make_resident(). Below 2^31 stored entries everything is 32-bit on the
/// device; from there on offsets and indices are both 64-bit.
struct ResidentCsr {
  index_t rows = 0;
  index_t cols = 0;
  std::vector<index_t> host_indptr;  ///< row pointers rebased to zero: the resident view's indptr
  DeviceBuffer offsets;              ///< the same row pointers on the device, 32- or 64-bit
  DeviceBuffer indices;
  DeviceBuffer values;
  bool wide = false;
};

/// Owns every matrix made resident on a backend until the backend goes.
class ResidentStore {
 public:
  /// Uploads a host dense matrix (any ld) as a contiguous device matrix; waits for the copy.
  template <class T>
  DenseView<const T> upload(const DenseView<const T>& host, cudaStream_t stream);
  /// Uploads a host CSR matrix (indptr[0] may be non-zero); returns a view whose indptr is the store's host
  /// copy (rebased to zero) and whose indices and values are device pointers. Waits for the copy.
  template <class T>
  CsrView<T> upload(const CsrView<T>& host, cudaStream_t stream);
  /// The resident CSR matrix whose host row pointers contain `indptr`, or nullptr.
  [[nodiscard]] const ResidentCsr* owner_of(const index_t* indptr) const;
  /// Frees everything (the stream must be idle).
  void clear();

 private:
  std::vector<DeviceBuffer> dense_;
  std::vector<std::unique_ptr<ResidentCsr>> csr_;  // by pointer: views point into host_indptr
};

/// True when `p` is device (or managed) memory, false for host memory of any kind.
bool is_device_pointer(const void* p);

/// The device form of a CSR view: a resident matrix or row range of it directly (rebasing its offsets
/// into scratch where the range does not start at entry zero); any other view (host or device indptr,
/// device indices and values) by copying and rebasing its row pointers. Offsets that land in scratch stay
/// valid until the next resolve() on the same context.
template <class T>
DeviceCsr resolve(Context& context, const CsrView<T>& view);

}  // namespace dnmf::backend::cuda
