// dnmf: factor() — one factorisation of a Source on a Context, with everything `dnmf factor` reports: the
// factors (gathered, or this process's blocks), the solver's figures, the memory plan and the traffic.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dnmf/context.hpp"
#include "dnmf/factorize.hpp"
#include "dnmf/options.hpp"
#include "dnmf/source.hpp"

namespace dnmf {

/// Bytes moved between processes (DESIGN §4).
struct CommunicationFigures {
  int processes = 1;
  std::vector<double> bytes_per_iteration_per_rank;  ///< measured: what each rank sent per iteration (rank 0 only)
  double model_bytes_per_iteration = 0;              ///< DESIGN §4's prediction per rank
};

/// One grid the automatic choice considered, with the time model's figures (docs/scaling.md).
struct GridCandidate {
  std::string grid;              ///< "PRxPC"
  std::string path;              ///< the iteration on it: "fused-H", "fused-W" or "unfused"
  double words_per_rank = 0;     ///< DESIGN §4's words per iteration
  double predicted_seconds = 0;  ///< per iteration: compute + memory + network
  double compute_seconds = 0;    ///< the products with A
  double memory_seconds = 0;     ///< the factor-sized buffers
  double network_seconds = 0;    ///< the collectives
  double panel_bytes = 0;        ///< the factor panels the products keep in cache
};

/// How the process grid was chosen.
struct GridChoiceFigures {
  std::string rule = "given";  ///< "given" (PRxPC), "time model" (auto, cpu backend) or "words" (auto, other backends)
  std::string by_words;        ///< the grid moving the fewest words (the choice before the time model)
  std::vector<GridCandidate> candidates;  ///< empty for a given grid
  double cache_bytes = 0;                 ///< the per-core cache the time model assumed (smallest over the ranks)
};

/// The memory plan under Context::memory_budget and how the stream went (DESIGN §5); this process's figures.
struct MemoryFigures {
  std::int64_t budget_bytes = 0;  ///< 0: no budget was given (nothing planned; the other fields are zero)
  bool streamed = false;          ///< A was streamed in tiles rather than held
  // The planner's count of the bytes this process needs (stream/planner.hpp).
  std::int64_t baseline_bytes = 0, runtime_reserve_bytes = 0, factors_bytes = 0, workspace_bytes = 0, matrix_bytes = 0,
               ring_bytes = 0, staging_bytes = 0, total_bytes = 0, resident_total_bytes = 0, minimum_budget_bytes = 0;
  // Streamed runs only.
  std::string access;           ///< "mapped" (tiles lent from a mapped file) or "pread"
  std::int64_t tile_bytes = 0;  ///< largest tile
  int depth = 0;                ///< slots of the prefetch ring
  std::int64_t tiles_per_pass = 0;
  long long passes = 0;  ///< full passes over A
  long long tiles_delivered = 0;
  double bytes_read = 0;
  double seconds_waiting = 0;  ///< compute waiting for tiles
  double seconds_reading = 0;  ///< the reader's time
};

namespace detail {
template <class T>
struct Distribution;  ///< the grid and this process's ranges (library-internal)
}

/// What factor() returns on every process.
template <class T>
struct Factorization {
  /// The solver's figures on every process; W and H are the whole factors on rank 0 after a gather (empty on
  /// other ranks and without a gather).
  FactorResult<T> result;
  DenseMatrix<T> w_block;  ///< this process's rows of W, transposed: k x (its W rows), rows from w_row_first
  DenseMatrix<T> h_block;  ///< this process's columns of H: k x (its H columns), columns from h_col_first
  index_t w_row_first = 0;
  index_t h_col_first = 0;
  std::string input;         ///< Source::name()
  std::string format;        ///< "npy", "npz", "mtx", "hdf5", "dcsr" or "memory"
  std::string precision;     ///< "f32" or "f64"
  std::string grid = "1x1";  ///< the process grid as run
  GridChoiceFigures grid_choice;
  index_t m = 0, n = 0;
  index_t nnz = 0;        ///< stored entries (sparse) or entries != 0 (dense)
  FactorOptions options;  ///< as run (backend and threads from the context)
  CommunicationFigures communication;
  MemoryFigures memory;
  std::shared_ptr<const detail::Distribution<T>> distribution;  ///< for gather() and write_factors_h5()
};

/// Whether factor() collects W and H on rank 0.
enum class Gather {
  to_root,  ///< result.W and result.H filled on rank 0
  none,     ///< only the blocks; call gather() or write_factors_h5() later
};

/// Initial factors for FactorOptions::init == InitMethod::given: W (m x k) and H (k x n) of A, whole on every
/// process (each takes its own rows and columns), whatever the source's storage order.
template <class T>
struct InitialFactors {
  DenseMatrix<T> W;
  DenseMatrix<T> H;
};

/// Factorises the matrix of `source` on the processes of `context`: each process reads (or slices) only its
/// block of A; with a memory budget the block is planned resident or streamed from the file (.npy, .dcsr).
/// Collective. Throws dnmf::Error naming the source for bad input or options (CollectiveError when every process
/// sees it alike), dnmf::Cancelled when options.cancel asked to stop. Transposed sources (row-major dense, CSC)
/// are factored as Aᵀ and W, H returned for A (then W's columns, not H's rows, carry the normalisation's scale
/// as usual: W's columns sum to 1). `initial` is required with InitMethod::given and refused otherwise.
template <class T>
Factorization<T> factor(const Source& source, const FactorOptions& options, const Context& context = Context(),
                        Gather gather = Gather::to_root, const InitialFactors<T>* initial = nullptr);

/// Collects W and H of `run` on rank 0 (result.W, result.H). Collective over the context factor() ran on.
template <class T>
void gather(Factorization<T>& run, const Context& context);

/// Writes W (m x k, dataset "W") and H (k x n, dataset "H") into the HDF5 file `path`, every process writing
/// its blocks (parallel HDF5 under MPI); atomic. Collective. dnmf::Error in builds without HDF5.
template <class T>
void write_factors_h5(const Factorization<T>& run, const std::string& path, const Context& context);

/// report.json of `dnmf factor`: options, shape, iterations, error histories, timings, peak memory, grid and
/// traffic, the memory plan, version and a UTC timestamp; pretty-printed, non-finite numbers as null. Rank 0's
/// Factorization holds every figure.
template <class T>
std::string report_json(const Factorization<T>& run);

}  // namespace dnmf
