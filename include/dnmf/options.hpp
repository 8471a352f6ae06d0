// dnmf: options of a factorisation.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "dnmf/matrix.hpp"
#include "dnmf/missing.hpp"

namespace dnmf {

/// The update rule of the alternating iteration (DESIGN §3).
enum class Algorithm {
  mu,    ///< multiplicative updates, Frobenius loss
  kl,    ///< multiplicative updates, generalised Kullback-Leibler divergence
  hals,  ///< hierarchical alternating least squares (exact coordinate updates)
  bpp,   ///< alternating non-negative least squares, block principal pivoting
};

/// How W and H are initialised.
enum class InitMethod {
  random,   ///< uniform, scaled to A's mean; keyed by (seed, global index) so it does not depend on the split
  nndsvd,   ///< non-negative double SVD (zeros kept)
  nndsvda,  ///< NNDSVD with zeros replaced by the mean of A (better for multiplicative updates)
  given,    ///< caller supplies W and H
};

/// Where the kernels run.
enum class BackendKind {
  reference,  ///< plain loops in float64 accumulation: the oracle for tests
  cpu,        ///< BLAS + OpenMP
  cuda,       ///< cuBLAS / cuSPARSE (when built with CUDA)
};

/// Optional penalties: l1 * sum(X) + 0.5 * l2 * ||X||_F^2 added to the Frobenius objective.
struct Penalties {
  double l1_w = 0, l2_w = 0, l1_h = 0, l2_h = 0;
  /// True when any of the four is set.
  [[nodiscard]] bool any() const { return l1_w != 0 || l2_w != 0 || l1_h != 0 || l2_h != 0; }
};

/// What the progress callback is told after each iteration.
struct IterationInfo {
  int iteration = 0;  ///< 1-based
  int max_iterations = 0;
  double rel_error = 0;  ///< ||A - WH||_F / ||A||_F
  /// The loss the algorithm decreases: Frobenius 0.5||A-WH||^2 + penalties, KL the divergence + penalties.
  double objective = 0;
  double seconds = 0;  ///< wall time since the iterations started
};

/// Most OpenMP threads one process runs (FactorOptions::threads, or OMP_NUM_THREADS where that is 0); more is refused.
inline constexpr int kMaxThreads = 4096;

/// Options of factorize(); defaults are what the CLI uses.
struct FactorOptions {
  index_t rank = 0;  ///< k, 1 <= k <= min(m, n)
  Algorithm algorithm = Algorithm::mu;
  int max_iterations = 200;
  double tol = 1e-4;  ///< stop when the objective's relative change falls below tol (0: never)
  InitMethod init = InitMethod::random;
  std::uint64_t seed = 1;
  Penalties penalties;
  BackendKind backend = BackendKind::cpu;
  int threads = 0;        ///< 0: OpenMP's default
  bool tf32 = false;      ///< cuda, float: TF32 tensor-core products (rounding ~1e-3 per product)
  bool fused = true;      ///< single pass over A per iteration where the layout allows
  bool normalize = true;  ///< W's columns sum to 1, H absorbs the scale
  /// Each iteration updates W before H (scikit-learn's order) instead of H before W (DESIGN §3). From the same
  /// start the two orders give different iterates; both converge alike.
  bool w_first = false;
  /// Extrapolation with restarts (Ang & Gillis 2019; docs/algorithms.md, "Extrapolation"): the first half of each
  /// iteration works from the second factor pushed along its last step, W + β(W − W_prev), β adapted to the
  /// objective. Fewer iterations to a given error for hals and bpp; not for mu or kl, nor with missing values.
  bool extrapolate = false;
  std::function<void(const IterationInfo&)> progress;  ///< called after every iteration (rank 0)
  /// Polled on rank 0 after every iteration (and by nmfk() between jobs; a streamed run on one process also asks
  /// before each tile): returning true stops every process together and the entry point throws dnmf::Cancelled;
  /// nothing is written.
  std::function<bool()> cancel;
  /// Missing values: a mask, NaN entries or unstored entries not observed (docs/masked.md, "Where masks run").
  /// Supported on one process (A in memory or streamed under a memory budget; cpu, reference and cuda backends)
  /// and on the MPI grid in memory (each rank reads its block of A and of the mask). Refused with a UsageError:
  /// cuda with a memory budget, and the grid with a memory budget or cuda.
  MissingValues missing;
};

/// Parses "mu", "kl", "hals", "bpp" (throws dnmf::Error otherwise).
Algorithm parse_algorithm(const std::string& name);
/// Parses "random", "nndsvd", "nndsvda" and "given" (W0 and H0 supplied by the caller); throws dnmf::Error
/// otherwise.
InitMethod parse_init(const std::string& name);
/// Parses "reference", "cpu", "cuda".
BackendKind parse_backend(const std::string& name);
std::string to_string(Algorithm a);
std::string to_string(InitMethod i);
std::string to_string(BackendKind b);

}  // namespace dnmf
