#include "nmfk/job.hpp"

#include <chrono>
#include <string>

#include "backend/gathering_operand.hpp"
#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "nmfk/perturb.hpp"
#include "solvers/solve.hpp"

namespace dnmf::rank_search {

template <class T>
std::optional<JobRecord> run_job(GroupContext<T>& group, index_t k, int p, const NmfkOptions& options) {
  return run_job(group.block, *group.grid, group.layout, k, p, options);
}

template <class T>
std::optional<JobRecord> run_job(const MatrixBlock<T>& block, const dist::Grid& grid, const dist::Layout& layout,
                                 index_t k, int p, const NmfkOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const MatrixBlock<T> perturbed = perturb_block(block, layout.a_rows.first, layout.a_cols.first, layout.m,
                                                 options.perturbation, options.epsilon, options.factor.seed, p);
  FactorOptions factor = options.factor;
  factor.rank = k;
  factor.seed = job_seed(options.factor.seed, k, p);
  factor.progress = nullptr;
  // Fresh kernels per job: a device backend's resident copy of A_p is released with them.
  auto kernels = backend::make_kernels<T>(factor.backend);
  kernels->set_tf32(factor.tf32);
  auto host =
      backend::make_kernels<T>(factor.backend == BackendKind::reference ? BackendKind::reference : BackendKind::cpu);
  const MatrixRef<T> a = perturbed.ref();
  const auto operand = backend::make_resident_operand(*kernels, kernels->make_resident(a), -1, factor.max_iterations);
  const bool alone = grid.shape().size() == 1;
  // A job's failure says which job: a Poisson copy of small entries can be all zeros while A is not (it was
  // reported as "the matrix is all zeros").
  const auto which = [&](const Error& e) {
    std::string text =
        "nmfk: perturbed copy " + std::to_string(p) + " of A, k = " + std::to_string(k) + ": " + e.what();
    if (options.perturbation == Perturbation::poisson && e.kind() == ErrorKind::data)
      text +=
          " (Poisson draws of entries well below 1 are mostly 0: are the data counts? --perturbation uniform "
          "perturbs any data)";
    return text;
  };
  solvers::Solution<T> solution = [&] {
    try {
      return solvers::solve(*kernels, *host, *operand, alone ? &a : nullptr, grid, layout, factor);
    } catch (const Cancelled&) {
      throw;
    } catch (const PeerError&) {
      throw;
    } catch (const CollectiveError& e) {
      throw CollectiveError(which(e), e.kind());
    } catch (const Error& e) {
      throw_as(e.kind(), which(e));
    }
  }();
  DenseMatrix<T> W, H;
  solvers::gather_factors(grid, layout, solution.pieces, W, H, 0);
  if (grid.world().rank() != 0) return std::nullopt;
  JobRecord r;
  r.k = k;
  r.p = p;
  r.rel_error = solution.result.rel_error;
  r.iterations = solution.result.iterations;
  r.W = DenseMatrix<double>(W.rows(), W.cols());
  r.H = DenseMatrix<double>(H.rows(), H.cols());
  for (std::size_t i = 0; i < W.storage().size(); ++i) r.W.storage()[i] = static_cast<double>(W.storage()[i]);
  for (std::size_t i = 0; i < H.storage().size(); ++i) r.H.storage()[i] = static_cast<double>(H.storage()[i]);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

template std::optional<JobRecord> run_job<float>(GroupContext<float>&, index_t, int, const NmfkOptions&);
template std::optional<JobRecord> run_job<double>(GroupContext<double>&, index_t, int, const NmfkOptions&);
template std::optional<JobRecord> run_job<float>(const MatrixBlock<float>&, const dist::Grid&, const dist::Layout&,
                                                 index_t, int, const NmfkOptions&);
template std::optional<JobRecord> run_job<double>(const MatrixBlock<double>&, const dist::Grid&, const dist::Layout&,
                                                  index_t, int, const NmfkOptions&);

}  // namespace dnmf::rank_search
