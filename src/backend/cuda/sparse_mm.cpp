#include "backend/cuda/sparse_mm.hpp"

#include <iterator>
#include <type_traits>

#include "backend/cuda/check.hpp"
#include "backend/cuda/launch.hpp"

namespace dnmf::backend::cuda {
namespace {

// One way of asking cuSPARSE for op(A)·B. The same three arrays that hold A in CSR hold Aᵀ in CSC, so
// Aᵀ·B can be asked for as a transposed CSR product or as a plain CSC one.
struct Plan {
  bool csc_of_transpose;  // describe Aᵀ (cols x rows) in CSC instead of A in CSR
  cusparseOperation_t op_a;
  cusparseSpMMAlg_t alg;
};

// In order of preference. CSR_ALG2 is cuSPARSE's row-major algorithm for A·B (and deterministic); where a
// cuSPARSE refuses a plan at the buffer-size query, the next one is used from then on.
constexpr Plan kPlansW[] = {{false, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_SPMM_CSR_ALG2},
                            {false, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_SPMM_ALG_DEFAULT}};
constexpr Plan kPlansH[] = {{false, CUSPARSE_OPERATION_TRANSPOSE, CUSPARSE_SPMM_ALG_DEFAULT},
                            {true, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_SPMM_ALG_DEFAULT}};

// Destroys cuSPARSE descriptors on every way out, exceptions included.
struct Descriptors {
  cusparseConstSpMatDescr_t a = nullptr;
  cusparseConstDnMatDescr_t b = nullptr;
  cusparseDnMatDescr_t c = nullptr;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    reset_a();
    if (c) (void)cusparseDestroyDnMat(c);
    if (b) (void)cusparseDestroyDnMat(b);
  }
  void reset_a() {
    if (a) (void)cusparseDestroySpMat(a);
    a = nullptr;
  }
};

void describe_a(const DeviceCsr& a, const Plan& plan, cudaDataType value_type, cusparseConstSpMatDescr_t* out) {
  const cusparseIndexType_t index_type = a.wide ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  if (plan.csc_of_transpose) {
    DNMF_CUDA_CHECK(cusparseCreateConstCsc(out, a.cols, a.rows, a.nnz, a.offsets, a.indices, a.values, index_type,
                                           index_type, CUSPARSE_INDEX_BASE_ZERO, value_type));
  } else {
    DNMF_CUDA_CHECK(cusparseCreateConstCsr(out, a.rows, a.cols, a.nnz, a.offsets, a.indices, a.values, index_type,
                                           index_type, CUSPARSE_INDEX_BASE_ZERO, value_type));
  }
}

}  // namespace

template <class T>
void spmm(Context& context, const DeviceCsr& a, Side side, CView<T> y, View<T> out, T beta) {
  const index_t k = y.rows;
  if (k == 0 || out.cols == 0) return;
  const cudaStream_t stream = context.stream();
  if (a.nnz == 0 || a.rows == 0 || a.cols == 0) {
    launch_scale(out, beta, stream);
    return;
  }
  // beta = 0 must not read out (it may hold anything, NaN included), as in BLAS; cuSPARSE does not
  // promise that, so out is zeroed first.
  if (beta == T(0)) launch_scale(out, T(0), stream);

  constexpr cudaDataType value_type = std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_64F;
  const bool h_side = side == Side::H;
  const index_t b_rows = h_side ? a.rows : a.cols;  // Yᵀ, row-major
  const index_t c_rows = h_side ? a.cols : a.rows;  // outᵀ, row-major
  Descriptors d;
  DNMF_CUDA_CHECK(cusparseCreateConstDnMat(&d.b, b_rows, k, y.ld, y.data, value_type, CUSPARSE_ORDER_ROW));
  DNMF_CUDA_CHECK(cusparseCreateDnMat(&d.c, c_rows, k, out.ld, out.data, value_type, CUSPARSE_ORDER_ROW));

  const Plan* plans = h_side ? kPlansH : kPlansW;
  const int count = static_cast<int>(h_side ? std::size(kPlansH) : std::size(kPlansW));
  int& chosen = context.spmm_plan[h_side ? 0 : 1];
  const T alpha = T(1);
  const cusparseOperation_t op_b = CUSPARSE_OPERATION_NON_TRANSPOSE;
  for (int i = chosen; i < count; ++i) {
    const Plan& plan = plans[i];
    d.reset_a();
    describe_a(a, plan, value_type, &d.a);
    std::size_t bytes = 0;
    const cusparseStatus_t status = cusparseSpMM_bufferSize(context.sparse(), plan.op_a, op_b, &alpha, d.a, d.b, &beta,
                                                            d.c, value_type, plan.alg, &bytes);
    if (status != CUSPARSE_STATUS_SUCCESS) {
      if (i + 1 < count) continue;
      check(status, "cusparseSpMM_bufferSize", __FILE__, __LINE__);
    }
    chosen = i;
    void* workspace = context.scratch(Slot::spmm, bytes);
    DNMF_CUDA_CHECK(
        cusparseSpMM(context.sparse(), plan.op_a, op_b, &alpha, d.a, d.b, &beta, d.c, value_type, plan.alg, workspace));
    return;
  }
}

template void spmm<float>(Context&, const DeviceCsr&, Side, CView<float>, View<float>, float);
template void spmm<double>(Context&, const DeviceCsr&, Side, CView<double>, View<double>, double);

}  // namespace dnmf::backend::cuda
