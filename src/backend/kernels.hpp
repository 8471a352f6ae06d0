// The kernel interface: everything a solver does with numbers goes through it (DESIGN §2-3).
//
// Factors are kept as two "k x something" column-major matrices, Wt (k x m, i.e. W stored row-major)
// and H (k x n). The problem is then symmetric: updating H given Wt and A is the same computation as
// updating Wt given H and A transposed. `Side` names which factor a call is about, and every kernel is
// written once for both halves.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>

#include "dnmf/matrix.hpp"
#include "dnmf/options.hpp"

namespace dnmf::backend {

/// Which factor a half-iteration updates. Side::H: Y = Wt, products are Y·A (k x n), tiles are column
/// ranges of A. Side::W: Y = H, products are Y·Aᵀ (k x m), tiles are row ranges of A.
enum class Side { H, W };

[[nodiscard]] inline Side other(Side s) { return s == Side::H ? Side::W : Side::H; }

template <class T>
using View = DenseView<T>;
template <class T>
using CView = DenseView<const T>;

/// The per-column update applied to a factor block X (k x c) given its numerator (Y·A or Y·Aᵀ) and
/// the Gram matrix of the other factor (k x k).
struct UpdateRule {
  Algorithm algorithm = Algorithm::mu;
  double eps = 1e-16;  ///< guards every division
  double l1 = 0;       ///< L1 penalty on the factor being updated
  double l2 = 0;       ///< L2 penalty on the factor being updated
  /// The rule's host implementation over columns [first, last) of x (numerator, Gram matrix, the other factor's
  /// row sums for KL), returning the NNLS round-cap hits (bpp). The solvers state each algorithm and hand it down
  /// here (solvers::update_rule(), src/solvers/<algorithm>.hpp), so the host backends apply it without depending
  /// on the layer above; the CUDA backend runs its own kernels for mu, kl and hals and this one for bpp.
  int (*host_f32)(const UpdateRule&, View<float>, CView<float>, CView<float>, const float*, index_t, index_t) = nullptr;
  int (*host_f64)(const UpdateRule&, View<double>, CView<double>, CView<double>, const double*, index_t,
                  index_t) = nullptr;
};

/// Sums a KL ratio product gathers on the way (DESIGN §3: no extra pass for the objective).
struct KlSums {
  double a_log_a_over_m = 0;  ///< Σ over a > 0 of a·log(a / m), m = (WH)_ij
  double a_times_m = 0;       ///< Σ a·m, the cross term of ||A - WH||²
  /// Σ m over the entries whose m the ratio pass formed, and their number (a dense pass forms every entry's; a
  /// sparse one only the stored entries'). Where it covers all of A, KL's objective takes its model term from
  /// it rather than from the factors' sums: then a float m's rounding enters the log term and the model term
  /// alike and cancels to first order (from the factors' exact sums it did not, and float32's tol test read noise).
  double model_sum = 0;
  double model_entries = 0;
  /// Float32 on a sparse A (the cpu backend): Σ over the stored entries of m formed in double, and their number.
  /// The objective's model term is then Σ m over all cells (from double factor sums) less this, plus model_sum:
  /// the stored entries' float m cancel their rounding in the log term as on dense input, and the unstored ones
  /// (a = 0, so m is their whole term) come from the exact sums. 0 where not formed.
  double model_exact = 0;
  double model_exact_entries = 0;
  KlSums& operator+=(const KlSums& o) {
    a_log_a_over_m += o.a_log_a_over_m;
    a_times_m += o.a_times_m;
    model_sum += o.model_sum;
    model_entries += o.model_entries;
    model_exact += o.model_exact;
    model_exact_entries += o.model_exact_entries;
    return *this;
  }
};

/// What a fused pass returns beside the factor it updated.
struct FusedSums {
  double cross = 0;  ///< Σ over tiles of <X_tile (updated), numerator_tile>
  /// Σ over tiles of <X_tile (before the update), numerator_tile>; NaN where a pass does not form it. With
  /// `cross` it gives the half-step's change of the error's cross term with the numerator's rounding cancelled
  /// (the float32 tol test reads it).
  double cross_before = std::numeric_limits<double>::quiet_NaN();
  KlSums kl_numer;  ///< KL sums of the ratio formed for the numerator (state before the update)
  KlSums kl_accum;  ///< KL sums of the ratio formed for the other side's numerator (after the update)
  int nnls_cap_hits = 0;
};

/// Summary statistics of A taken once before iterating.
struct MatrixStats {
  double sum = 0;
  double squared_norm = 0;
  /// Whether the same pass checked every entry (the CPU kernels do), and then whether all were finite and >= 0
  /// (io::acceptable_entry): an in-memory source is then checked by this pass instead of one of its own.
  bool entries_checked = false;
  bool entries_acceptable = true;
};

/// The kernel interface. All views passed in live in the backend's memory space (host for cpu and
/// reference, device for cuda); A is whatever make_resident() returned.
template <class T>
class Kernels {
 public:
  virtual ~Kernels() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// TF32 tensor-core math for float products where the backend has it; the others ignore the request.
  virtual void set_tf32(bool on) { (void)on; }
  /// Threads (cpu) or devices (cuda) the backend computes with.
  [[nodiscard]] virtual int concurrency() const { return 1; }
  /// True when the backend's buffers are ordinary host memory (a host communicator can use them directly).
  [[nodiscard]] virtual bool host_memory() const { return true; }
  /// The queue the backend orders its work on (a cudaStream_t for cuda), or nullptr for host backends: device
  /// communicators (NCCL) and streamed operands queue their work on it so stream order keeps them in step.
  [[nodiscard]] virtual void* stream() const { return nullptr; }

  // ---- memory --------------------------------------------------------------------------------
  /// A zero-filled buffer of `count` elements in the backend's memory.
  [[nodiscard]] virtual T* allocate(std::size_t count) = 0;
  virtual void deallocate(T* ptr) noexcept = 0;
  virtual void copy_to_backend(const T* host, T* dst, std::size_t count) = 0;
  virtual void copy_to_host(const T* src, T* host, std::size_t count) = 0;
  /// The backend's own copy (or view) of a host matrix; valid as long as the backend and `host` live.
  [[nodiscard]] virtual MatrixRef<T> make_resident(const MatrixRef<T>& host) { return host; }

  // ---- products with A (the only kernels that touch A) ----------------------------------------
  /// out = Y·A (Side::H, out k x n) or Y·Aᵀ (Side::W, out k x m), plus beta·out.
  virtual void multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) = 0;
  /// KL ratio product: with M = Wtᵀ H (Wt, H) = (Y, X) for Side::H and (X, Y) for Side::W,
  /// R = A ⊘ M (stored entries only for CSR), out = Y·R (Side::H) or Y·Rᵀ (Side::W), plus beta·out.
  virtual KlSums kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) = 0;
  /// Sum and squared Frobenius norm of A, in float64.
  [[nodiscard]] virtual MatrixStats stats(const MatrixRef<T>& a) = 0;

  // ---- factor-sized kernels ------------------------------------------------------------------
  /// g = X·Xᵀ + beta·g (X is k x d, g is k x k, full symmetric result).
  virtual void gram(CView<T> x, View<T> g, T beta) = 0;
  /// g (k x k, host memory, column-major, full) = X·Xᵀ formed and returned in float64, for the error identity at
  /// float32: gram()'s float result carries a relative error of about eps·sqrt(d) per entry, which put noise of
  /// about 1e-7·‖A‖² into the squared error. False where the backend has none; the caller then uses gram().
  virtual bool gram_f64(CView<T> /*x*/, double* /*g*/) { return false; }
  /// Sets every entry of x to `value`.
  virtual void fill(View<T> x, T value) = 0;
  /// Σ x_ij·y_ij in float64.
  [[nodiscard]] virtual double dot(CView<T> x, CView<T> y) = 0;
  /// out_i = Σ_j x_ij (k entries, backend memory).
  virtual void row_sums(CView<T> x, T* out) = 0;
  /// x_hat = x + beta·(x − x_prev), then x_prev = x: one step of the extrapolation that accelerates the
  /// alternating iteration (docs/algorithms.md, "Extrapolation"). All three are k x d; x_hat aliases neither.
  /// The default works through host memory on any backend (the step is O(k·d), beside O(k·d·other) products).
  virtual void extrapolate(View<T> x_hat, CView<T> x, View<T> x_prev, T beta);
  /// dst = src (both k x d, backend memory): the extrapolation's saved pair. Through host memory on a device.
  void copy(CView<T> src, View<T> dst);
  /// Applies `rule` to every column of X. numer: Y·A-type numerator; g: Gram of Y; y_row_sums: Σ_j Y_ij
  /// (needed by KL only). Returns the number of columns whose NNLS hit its round cap (bpp only).
  virtual int update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) = 0;

  // ---- the fused single pass (DESIGN §3) -------------------------------------------------------
  /// The side a single pass can update tile by tile for this layout (dense: H, CSR: W).
  [[nodiscard]] virtual Side fused_side(const MatrixRef<T>& a) const { return is_sparse(a) ? Side::W : Side::H; }
  /// One pass over A, tile by tile along `side`: numerator of the tile, update of X's tile, then the other
  /// side's numerator accumulated into `other_numer` (k x other dim) and X·Xᵀ into `gx`, both overwritten
  /// or, with `accumulate`, added to (a streamed pass calls this once per tile). `gy` and `y_row_sums`
  /// describe Y as update() needs them. A CSR pass along W with an `other_numer` of no columns forms no other
  /// numerator (the cpu backend's update pass, Operand::update_pass).
  virtual FusedSums fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y,
                               CView<T> gy, const T* y_row_sums, View<T> other_numer, View<T> gx, bool accumulate);
};

/// Creates the backend of the given kind for precision T; throws dnmf::Error when it is not built in.
template <class T>
std::unique_ptr<Kernels<T>> make_kernels(BackendKind kind);

/// True when the backend kind is compiled in and usable (e.g. a CUDA device is present).
bool backend_available(BackendKind kind, std::string* why_not = nullptr);

}  // namespace dnmf::backend
