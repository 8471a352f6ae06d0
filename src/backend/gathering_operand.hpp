// A resident CSR block kept a second time as its transpose (CSC), so that both products of an iteration are
// gathers. With CSR alone, Wᵀ·A has to scatter: every stored a_ij adds a_ij·W[i, :] into column j of a k x n
// accumulator (one per slot, summed afterwards), a read-modify-write of k values far apart in memory. Over Aᵀ's
// rows the same product gathers instead: column j sums a_ij·W[i, :] over its own entries in registers and
// writes once. On the 20000 x 10000 matrix with 1e6 entries at k = 16 the scatter took 5.9-7.5 ms on one Zen 3
// core and the gather over the transpose 4.0-4.4 (docs/benchmarks.md), so the iteration runs unfused: two
// gathers where the fused pass made one gather and one scatter. The price is a second copy of A's entries.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>

#include "backend/operand.hpp"
#include "dnmf/matrix.hpp"

namespace dnmf::backend {

/// A CSR block resident in host memory with its transpose: both products gather, the iteration runs unfused.
template <class T>
class GatheringOperand final : public Operand<T> {
 public:
  /// `a` is CSR in host memory (the CPU backend's); `at` its transpose, owned here.
  GatheringOperand(Kernels<T>& kernels, MatrixRef<T> a, CsrMatrix<T> at)
      : kernels_(kernels), a_(a), at_(std::move(at)), at_ref_(at_.view()) {}
  [[nodiscard]] index_t rows() const override { return rows_of(a_); }
  [[nodiscard]] index_t cols() const override { return cols_of(a_); }
  [[nodiscard]] bool sparse() const override { return true; }
  [[nodiscard]] std::string mode() const override { return "resident"; }
  [[nodiscard]] const MatrixRef<T>* resident() const override { return &a_; }
  /// Taken once: the API's input check reads it before the solver does (MatrixStats::entries_checked).
  [[nodiscard]] MatrixStats stats() override {
    if (!stats_) stats_ = kernels_.stats(a_);
    return *stats_;
  }
  /// Y·A over Aᵀ's rows (a gather), Y·Aᵀ over A's rows (a gather).
  void multiply(Side side, CView<T> y, View<T> out, T beta) override {
    if (side == Side::H) {
      kernels_.multiply(at_ref_, Side::W, y, out, beta);
    } else {
      kernels_.multiply(a_, Side::W, y, out, beta);
    }
  }
  KlSums kl_multiply(Side side, CView<T> y, CView<T> x, View<T> out, T beta) override {
    if (side == Side::H) return kernels_.kl_multiply(at_ref_, Side::W, y, x, out, beta);
    return kernels_.kl_multiply(a_, Side::W, y, x, out, beta);
  }
  [[nodiscard]] Side fused_side() const override { return Side::W; }
  /// Never: a fused pass pairs each tile's gather with a scatter, the product this operand exists to avoid.
  [[nodiscard]] bool can_fuse(Side /*side*/) const override { return false; }
  /// Both sides: a gather over A's rows (along W) or over its transpose's (along H), each tile updated in turn.
  [[nodiscard]] bool can_update_pass(Side /*side*/) const override { return true; }
  FusedSums update_pass(Side side, const UpdateRule& rule, View<T> x, CView<T> y, CView<T> gy, const T* y_row_sums,
                        View<T> gx) override {
    const View<T> no_other_numer{gx.data, x.rows, 0, std::max<index_t>(x.rows, 1)};
    return kernels_.fused_pass(side == Side::H ? at_ref_ : a_, Side::W, rule, x, y, gy, y_row_sums, no_other_numer, gx,
                               false);
  }
  /// A whole, in host memory: a near-exact fit's final error is summed over its cells (without this, a grid's
  /// sparse blocks kept the Gram identity's rounding: 0.0 reported for an error of 1.4e-8).
  bool visit_host(const typename Operand<T>::HostPieceVisitor& visit) override {
    if (!kernels_.host_memory()) return false;
    visit(a_, 0, 0, false);
    return true;
  }
  /// Not called by the iteration (can_fuse is false); correct all the same, through A's rows.
  FusedSums fused_pass(Side side, const UpdateRule& rule, View<T> x, CView<T> y, CView<T> gy, const T* y_row_sums,
                       View<T> other_numer, View<T> gx) override {
    return kernels_.fused_pass(a_, side, rule, x, y, gy, y_row_sums, other_numer, gx, false);
  }

 private:
  Kernels<T>& kernels_;
  MatrixRef<T> a_;
  std::optional<MatrixStats> stats_;
  CsrMatrix<T> at_;
  MatrixRef<T> at_ref_;
};

/// Iterations a fit must be allowed before it copies A's transpose. The copy costs what 3 to 5 iterations save:
/// 4-5 ms on 2 threads for 1e6 entries (its writes are scattered over the transpose's rows), against 0.9 (MU) to
/// 1.5 ms (HALS) saved per iteration at 20000 x 10000, k = 16 (docs/benchmarks.md). A shorter fit, e.g. the
/// single iteration a matrix without structure needs to reach its best error, keeps the scatter.
constexpr int kTransposeMinIterations = 5;

/// The operand of a block made resident on `kernels` (`on_backend`, what make_resident returned): a
/// GatheringOperand for a CSR block on the CPU backend whose transpose takes at most `max_copy_bytes` and a fit of
/// at least kTransposeMinIterations `max_iterations`, else a ResidentOperand. `max_copy_bytes` < 0: the default,
/// an eighth of the machine's physical memory.
template <class T>
std::unique_ptr<Operand<T>> make_resident_operand(Kernels<T>& kernels, MatrixRef<T> on_backend,
                                                  double max_copy_bytes = -1,
                                                  int max_iterations = kTransposeMinIterations);

/// Bytes the transpose of a CSR block takes (what GatheringOperand adds to the block's own).
template <class T>
double transpose_bytes(const CsrView<T>& a) {
  return static_cast<double>(a.nnz()) * static_cast<double>(sizeof(T) + sizeof(col_index_t)) +
         static_cast<double>(a.cols + 1) * static_cast<double>(sizeof(index_t));
}

}  // namespace dnmf::backend
