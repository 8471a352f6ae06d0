// See gathering_operand.hpp.

#include "backend/gathering_operand.hpp"

#include <limits>

#include "io/csr_build.hpp"
#include "util/memory.hpp"

namespace dnmf::backend {

template <class T>
std::unique_ptr<Operand<T>> make_resident_operand(Kernels<T>& kernels, MatrixRef<T> on_backend, double max_copy_bytes,
                                                  int max_iterations) {
  const auto* csr = std::get_if<CsrView<T>>(&on_backend);
  // The transpose's row indices are A's column index type; the copy is made in host memory, the CPU backend's.
  const bool takes = csr != nullptr && kernels.name() == "cpu" && csr->nnz() > 0 &&
                     csr->rows <= static_cast<index_t>(std::numeric_limits<col_index_t>::max()) &&
                     max_iterations >= kTransposeMinIterations;
  if (takes) {
    const double limit = max_copy_bytes >= 0 ? max_copy_bytes : util::physical_memory_bytes() / 8;
    if (transpose_bytes(*csr) <= limit)
      return std::make_unique<GatheringOperand<T>>(kernels, on_backend, io::detail::transpose(*csr));
  }
  return std::make_unique<ResidentOperand<T>>(kernels, on_backend);
}

template std::unique_ptr<Operand<float>> make_resident_operand(Kernels<float>&, MatrixRef<float>, double, int);
template std::unique_ptr<Operand<double>> make_resident_operand(Kernels<double>&, MatrixRef<double>, double, int);

}  // namespace dnmf::backend
