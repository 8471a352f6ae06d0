// The local block of A as the iteration sees it: the products of DESIGN §3 and the fused single pass,
// whether the block is resident in the backend's memory or streamed through it in tiles (src/stream/).
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "backend/kernels.hpp"

namespace dnmf::backend {

/// How an operand moved A, for report.json (zeros for a resident one).
struct OperandStats {
  long long passes = 0;        ///< full passes over A
  long long tiles = 0;         ///< tiles delivered
  double bytes_read = 0;       ///< bytes of A brought in (file or host -> device)
  double seconds_waiting = 0;  ///< time the compute side waited for a tile
  double seconds_reading = 0;  ///< time the producer spent reading
};

/// A (one rank's block, m_i x n_j) for the solver. Products follow backend::Kernels' conventions; the
/// views passed in live in the kernels' memory.
template <class T>
class Operand {
 public:
  virtual ~Operand() = default;
  [[nodiscard]] virtual index_t rows() const = 0;
  [[nodiscard]] virtual index_t cols() const = 0;
  [[nodiscard]] virtual bool sparse() const = 0;
  /// "resident" or "streamed".
  [[nodiscard]] virtual std::string mode() const = 0;
  /// The resident matrix, or nullptr when the operand is streamed (NNDSVD and direct checks need it).
  [[nodiscard]] virtual const MatrixRef<T>* resident() const = 0;

  /// Sum and squared norm of the block (one pass).
  [[nodiscard]] virtual backend::MatrixStats stats() = 0;
  /// out = Y·A (Side::H) or Y·Aᵀ (Side::W), plus beta·out: one pass.
  virtual void multiply(backend::Side side, backend::CView<T> y, backend::View<T> out, T beta) = 0;
  /// The KL ratio product (Kernels::kl_multiply) over the whole block: one pass.
  virtual backend::KlSums kl_multiply(backend::Side side, backend::CView<T> y, backend::CView<T> x,
                                      backend::View<T> out, T beta) = 0;
  /// The side a single pass can update tile by tile (the layout's or the stream's tiling direction).
  [[nodiscard]] virtual backend::Side fused_side() const = 0;
  /// Whether fused_pass can tile along `side` (fused_side() always can).
  [[nodiscard]] virtual bool can_fuse(backend::Side side) const = 0;
  /// Kernels::fused_pass over the whole block (other_numer and gx overwritten): one pass.
  virtual backend::FusedSums fused_pass(backend::Side side, const backend::UpdateRule& rule, backend::View<T> x,
                                        backend::CView<T> y, backend::CView<T> gy, const T* y_row_sums,
                                        backend::View<T> other_numer, backend::View<T> gx) = 0;
  /// Whether update_pass runs along `side`.
  [[nodiscard]] virtual bool can_update_pass(backend::Side /*side*/) const { return false; }
  /// One half-step in one pass along `side`, tile by tile: the tile's numerator (Y·A, or Y·Aᵀ along W), its
  /// update, X·Xᵀ into gx (overwritten) and the cross term Σ x·numer after the update. Where the numerator needs
  /// no reduction over the grid, it never leaves the cache: it is neither written nor read back, and X is read
  /// once for the update and its Gram matrix. Only where can_update_pass(side).
  virtual backend::FusedSums update_pass(backend::Side /*side*/, const backend::UpdateRule& /*rule*/,
                                         backend::View<T> /*x*/, backend::CView<T> /*y*/, backend::CView<T> /*gy*/,
                                         const T* /*y_row_sums*/, backend::View<T> /*gx*/) {
    throw std::logic_error("update_pass on an operand without one");
  }
  [[nodiscard]] virtual OperandStats operand_stats() const { return {}; }
  /// What visit_host hands over: a piece of the block in host memory, at rows [row0, ...) and columns
  /// [col0, ...) of the block; `transposed`: the piece stores that part of Aᵀ (its rows are A's columns).
  using HostPieceVisitor = std::function<void(const MatrixRef<T>& piece, index_t row0, index_t col0, bool transposed)>;
  /// Calls `visit` on pieces that cover the block once (a resident block whole, a streamed one tile by tile: one
  /// pass), for checks that read the entries themselves (the final error computed directly). False, visiting
  /// nothing, where the block is not in host memory.
  virtual bool visit_host(const HostPieceVisitor& /*visit*/) { return false; }
};

/// A block held whole in the kernels' memory (made resident by the caller).
template <class T>
class ResidentOperand final : public Operand<T> {
 public:
  ResidentOperand(backend::Kernels<T>& kernels, MatrixRef<T> a) : kernels_(kernels), a_(a) {}
  [[nodiscard]] index_t rows() const override { return rows_of(a_); }
  [[nodiscard]] index_t cols() const override { return cols_of(a_); }
  [[nodiscard]] bool sparse() const override { return is_sparse(a_); }
  [[nodiscard]] std::string mode() const override { return "resident"; }
  [[nodiscard]] const MatrixRef<T>* resident() const override { return &a_; }
  /// Taken once: the API's input check reads it before the solver does (MatrixStats::entries_checked).
  [[nodiscard]] backend::MatrixStats stats() override {
    if (!stats_) stats_ = kernels_.stats(a_);
    return *stats_;
  }
  void multiply(backend::Side side, backend::CView<T> y, backend::View<T> out, T beta) override {
    kernels_.multiply(a_, side, y, out, beta);
  }
  backend::KlSums kl_multiply(backend::Side side, backend::CView<T> y, backend::CView<T> x, backend::View<T> out,
                              T beta) override {
    return kernels_.kl_multiply(a_, side, y, x, out, beta);
  }
  [[nodiscard]] backend::Side fused_side() const override { return kernels_.fused_side(a_); }
  /// Dense blocks tile either way; CSR only by rows.
  [[nodiscard]] bool can_fuse(backend::Side side) const override { return !is_sparse(a_) || side == backend::Side::W; }
  backend::FusedSums fused_pass(backend::Side side, const backend::UpdateRule& rule, backend::View<T> x,
                                backend::CView<T> y, backend::CView<T> gy, const T* y_row_sums,
                                backend::View<T> other_numer, backend::View<T> gx) override {
    return kernels_.fused_pass(a_, side, rule, x, y, gy, y_row_sums, other_numer, gx, false);
  }
  bool visit_host(const typename Operand<T>::HostPieceVisitor& visit) override {
    if (!kernels_.host_memory()) return false;
    visit(a_, 0, 0, false);
    return true;
  }

 private:
  backend::Kernels<T>& kernels_;
  MatrixRef<T> a_;
  std::optional<backend::MatrixStats> stats_;
};

/// Aᵀ's operand seen as A: every side swapped. The solver iterates on the caller's A through it when A is
/// stored as Aᵀ (row-major or CSC), so the two factors are updated in the caller's order (H half first).
template <class T>
class TransposedOperand final : public Operand<T> {
 public:
  explicit TransposedOperand(Operand<T>& a_transpose) : at_(a_transpose) {}
  [[nodiscard]] index_t rows() const override { return at_.cols(); }
  [[nodiscard]] index_t cols() const override { return at_.rows(); }
  [[nodiscard]] bool sparse() const override { return at_.sparse(); }
  [[nodiscard]] std::string mode() const override { return at_.mode(); }
  /// No MatrixRef holds A itself (only Aᵀ's storage exists).
  [[nodiscard]] const MatrixRef<T>* resident() const override { return nullptr; }
  [[nodiscard]] backend::MatrixStats stats() override { return at_.stats(); }
  void multiply(backend::Side side, backend::CView<T> y, backend::View<T> out, T beta) override {
    at_.multiply(backend::other(side), y, out, beta);  // Y·A = Y·(Aᵀ)ᵀ
  }
  backend::KlSums kl_multiply(backend::Side side, backend::CView<T> y, backend::CView<T> x, backend::View<T> out,
                              T beta) override {
    return at_.kl_multiply(backend::other(side), y, x, out, beta);
  }
  [[nodiscard]] backend::Side fused_side() const override { return backend::other(at_.fused_side()); }
  [[nodiscard]] bool can_fuse(backend::Side side) const override { return at_.can_fuse(backend::other(side)); }
  backend::FusedSums fused_pass(backend::Side side, const backend::UpdateRule& rule, backend::View<T> x,
                                backend::CView<T> y, backend::CView<T> gy, const T* y_row_sums,
                                backend::View<T> other_numer, backend::View<T> gx) override {
    return at_.fused_pass(backend::other(side), rule, x, y, gy, y_row_sums, other_numer, gx);
  }
  [[nodiscard]] OperandStats operand_stats() const override { return at_.operand_stats(); }
  bool visit_host(const typename Operand<T>::HostPieceVisitor& visit) override {
    return at_.visit_host([&](const MatrixRef<T>& piece, index_t row0, index_t col0, bool transposed) {
      visit(piece, col0, row0, !transposed);
    });
  }

 private:
  Operand<T>& at_;
};

}  // namespace dnmf::backend
