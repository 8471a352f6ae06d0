// nmfk(): the whole sweep on a world of processes. Phases, each collective over the world:
//   1. groups, grids and blocks; the data's fingerprint; the checkpoints (world rank 0 decides what is done);
//   2. the remaining (k, p) jobs on the groups, checkpointed by each group's root as they finish;
//   3. on world rank 0: clustering and silhouettes per k; the centroids go to every rank;
//   4. the regressions (one per k) on the groups; 5. on world rank 0: the selection.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "dnmf/nmfk.hpp"
#include "nmfk/checkpoint.hpp"
#include "nmfk/clustering.hpp"
#include "nmfk/collect.hpp"
#include "nmfk/group.hpp"
#include "nmfk/job.hpp"
#include "nmfk/provider.hpp"
#include "nmfk/regression.hpp"
#include "nmfk/schedule.hpp"
#include "nmfk/selection.hpp"
#include "nmfk/silhouette.hpp"
#include "solvers/solve.hpp"

namespace dnmf {
namespace rank_search {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The shortest of 15 or 17 significant digits that reads back as v (0.03, not 0.029999999999999999).
std::string number(double v) {
  for (int digits : {15, 17}) {
    std::ostringstream s;
    s.precision(digits);
    s << v;
    if (digits == 17 || std::stod(s.str()) == v) return s.str();
  }
  return {};
}

// Every check that can fail for reasons the user controls, identical on every rank (no rank waits forever
// for one that gave up).
void validate(const NmfkOptions& o, const std::vector<index_t>& ks, index_t m, index_t n, int processes) {
  if (m < 1 || n < 1)
    throw CollectiveError("nmfk: the matrix is empty (" + std::to_string(m) + "x" + std::to_string(n) + ")");
  if (ks.empty()) throw CollectiveError("nmfk: no k to try (--k is empty)");
  for (index_t k : ks)
    if (k < 1 || k > std::min(m, n))
      throw CollectiveError("nmfk: k=" + std::to_string(k) + " does not fit a " + std::to_string(m) + "x" +
                            std::to_string(n) + " matrix: need 1 <= k <= " + std::to_string(std::min(m, n)));
  if (o.perturbations < 1)
    throw CollectiveError("nmfk: --perturbations must be >= 1, got " + std::to_string(o.perturbations));
  if (!(o.epsilon >= 0 && o.epsilon < 1))
    throw CollectiveError("nmfk: --epsilon must be in [0, 1), got " + number(o.epsilon));
  if (!std::isfinite(o.sil_threshold) || o.sil_threshold > 1)
    throw CollectiveError("nmfk: --sil-threshold must be a finite number <= 1, got " + number(o.sil_threshold));
  if (o.err_threshold && !(*o.err_threshold >= 0))
    throw CollectiveError("nmfk: --err-threshold must be >= 0, got " + number(*o.err_threshold));
  if (!(o.wilcoxon_alpha > 0 && o.wilcoxon_alpha < 1))
    throw CollectiveError("nmfk: the Wilcoxon level must be in (0, 1)");
  if (o.groups < 1 || o.groups > processes)
    throw CollectiveError("nmfk: --groups " + std::to_string(o.groups) + " needs 1 <= groups <= processes (" +
                          std::to_string(processes) + ")");
  if (o.max_cluster_iterations < 1) throw CollectiveError("nmfk: the clustering iteration cap must be >= 1");
  if (!(o.accept_factor >= 1))
    throw CollectiveError("nmfk: --accept-factor must be >= 1, got " + number(o.accept_factor));
  if (o.factor.init == InitMethod::given) throw CollectiveError("nmfk: given initial factors make no sense for NMFk");
  const bool shared = processes / o.groups > 1 || processes % o.groups != 0;
  if (shared && (o.factor.init == InitMethod::nndsvd || o.factor.init == InitMethod::nndsvda))
    throw CollectiveError("nmfk: --init " + to_string(o.factor.init) +
                          " needs the whole matrix on one process: use --init random or one process per group");
  if (o.grid != "auto") {
    const dist::GridShape shape = dist::parse_grid(o.grid);
    if (processes % o.groups != 0 || shape.size() != processes / o.groups)
      throw CollectiveError("nmfk: --grid " + o.grid + " must have as many ranks as each group (" +
                            std::to_string(processes) + " processes in " + std::to_string(o.groups) + " groups)");
  }
  FactorOptions check = o.factor;
  check.rank = ks.back();
  solvers::check_options(check, m, n);
}

template <class T>
Fingerprint make_fingerprint(const NmfkOptions& o, index_t m, index_t n, double nonzeros, double sum,
                             double sum_squares) {
  Fingerprint f;
  f.data = {{"rows", std::to_string(m)}, {"cols", std::to_string(n)}, {"nonzeros", number(nonzeros)}};
  for (const auto& item : o.data_identity) f.data.push_back(item);
  f.sum = sum;
  f.sum_squares = sum_squares;
  const FactorOptions& s = o.factor;
  f.options = {{"precision", std::is_same_v<T, float> ? "f32" : "f64"},
               {"perturbation", to_string(o.perturbation)},
               {"epsilon", number(o.epsilon)},
               {"seed", std::to_string(s.seed)},
               {"algo", to_string(s.algorithm)},
               {"iters", std::to_string(s.max_iterations)},
               {"tol", number(s.tol)},
               {"init", to_string(s.init)},
               {"backend", to_string(s.backend)},
               {"tf32", s.tf32 ? "on" : "off"},
               {"l1_w", number(s.penalties.l1_w)},
               {"l2_w", number(s.penalties.l2_w)},
               {"l1_h", number(s.penalties.l1_h)},
               {"l2_h", number(s.penalties.l2_h)}};
  return f;
}

// Sum, squared norm and non-zero count of a block.
template <class T>
void block_stats(const MatrixBlock<T>& b, double out[3]) {
  const auto add = [&](T value) {
    const double v = static_cast<double>(value);
    out[0] += v;
    out[1] += v * v;
    out[2] += v != 0 ? 1 : 0;
  };
  if (b.sparse)
    for (T v : b.csr.values()) add(v);
  else
    for (T v : b.dense.storage()) add(v);
}

void append(std::vector<double>& payload, const DenseMatrix<double>& x) {
  payload.insert(payload.end(), x.storage().begin(), x.storage().end());
}

}  // namespace
}  // namespace rank_search

template <class T>
NmfkResult<T> nmfk(index_t m, index_t n, const BlockProvider<T>& provider, const NmfkOptions& options,
                   dist::Communicator& world) {
  using namespace rank_search;
  const auto start = Clock::now();
  std::vector<index_t> ks(options.ks);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  const int processes = world.size(), rank = world.rank(), P = options.perturbations;
  validate(options, ks, m, n, processes);
  if (options.factor.threads > 0) omp_set_num_threads(options.factor.threads);
  auto notice = [&](const std::string& line) {
    if (rank == 0 && options.notice && !line.empty()) options.notice(line);
  };

  // 1. Groups, grids, blocks.
  GroupContext<T> group;
  group.count = options.groups;
  group.index = group_of(rank, processes, options.groups);
  group.comm = world.split(group.index, rank);
  const dist::GridShape shape =
      options.grid == "auto" ? dist::choose_grid(group.comm->size(), m, n, ks.back()) : dist::parse_grid(options.grid);
  group.grid = std::make_unique<dist::Grid>(*group.comm, shape);
  group.layout = dist::make_layout(*group.grid, m, n);
  const dist::Layout& layout = group.layout;
  group.block =
      provider({layout.a_rows.first, layout.a_rows.last, layout.a_cols.first, layout.a_cols.last, group.comm.get()});
  if (rows_of(group.block.ref()) != layout.a_rows.size() || cols_of(group.block.ref()) != layout.a_cols.size())
    throw Error("nmfk: the block provider returned a block of the wrong shape");
  double stats[3] = {0, 0, 0};
  block_stats(group.block, stats);
  group.comm->allreduce_sum(stats, 3);
  world.broadcast(stats, 3, dist::Scalar::f64, 0);  // group 0's figures for everyone: one fingerprint
  if (!(stats[1] > 0)) throw CollectiveError("nmfk: the matrix is all zeros: there is nothing to factorise");

  // Checkpoints: world rank 0 reads what is finished; everyone learns which jobs remain.
  std::vector<Job> jobs;
  for (index_t k : ks)
    for (int p = 0; p < P; ++p) jobs.push_back({k, p});
  CheckpointStore store(options.checkpoint_dir);
  std::map<std::pair<index_t, int>, JobRecord> records;
  std::vector<unsigned char> finished(jobs.size(), 0);
  {
    std::string error;
    if (rank == 0) {
      try {
        notice(store.open(make_fingerprint<T>(options, m, n, stats[2], stats[0], stats[1]), options.restart));
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          std::string problem;
          auto record = store.load(jobs[i].k, jobs[i].p, m, n, &problem);
          notice(problem);
          if (!record) continue;
          if (!options.h_silhouettes) record->H = DenseMatrix<double>();
          records.emplace(std::make_pair(jobs[i].k, jobs[i].p), std::move(*record));
          finished[i] = 1;
        }
      } catch (const Error& e) {
        error = e.what();
      }
    }
    dist::throw_root_error(world, 0, std::move(error));  // rank 0's error becomes every rank's
  }
  world.broadcast(finished.data(), finished.size(), dist::Scalar::u8, 0);
  std::vector<Job> remaining;
  for (std::size_t i = 0; i < jobs.size(); ++i)
    if (!finished[i]) remaining.push_back(jobs[i]);
  NmfkResult<T> result;
  result.rows = m;
  result.cols = n;
  result.jobs_total = static_cast<int>(jobs.size());
  result.jobs_loaded = static_cast<int>(jobs.size() - remaining.size());
  result.jobs_run = static_cast<int>(remaining.size());
  result.processes = processes;
  result.groups = options.groups;
  result.group_grid = shape.str();
  if (result.jobs_loaded > 0)
    notice("resuming from " + store.directory() + ": " + std::to_string(result.jobs_loaded) + " of " +
           std::to_string(result.jobs_total) + " jobs already finished, " + std::to_string(result.jobs_run) +
           " to run");

  // 2. The remaining jobs, largest k first, dealt to the groups.
  const std::vector<std::vector<Job>> plan = schedule_jobs(remaining, options.groups);
  const std::vector<Job>& mine = plan[static_cast<std::size_t>(group.index)];
  std::vector<double> payload;
  {
    int done = 0;
    for (const Job& job : mine) {
      std::optional<JobRecord> record = run_job(group, job.k, job.p, options);
      ++done;
      if (!record) continue;
      store.save(*record);
      if (options.progress)
        options.progress({job.k, job.p, group.index, false, record->rel_error, record->iterations, record->seconds,
                          done, static_cast<int>(mine.size())});
      payload.insert(payload.end(), {static_cast<double>(job.k), static_cast<double>(job.p), record->rel_error,
                                     record->seconds, static_cast<double>(record->iterations)});
      append(payload, record->W);
      if (options.h_silhouettes) append(payload, record->H);
    }
  }
  {
    const auto payloads = gather_payloads(world, payload);
    payload.clear();
    for (const auto& from : payloads) {
      PayloadReader in(from);
      while (!in.done()) {
        JobRecord r;
        r.k = static_cast<index_t>(in.next());
        r.p = static_cast<int>(in.next());
        r.rel_error = in.next();
        r.seconds = in.next();
        r.iterations = static_cast<int>(in.next());
        r.W = DenseMatrix<double>(m, r.k);
        in.next(r.W.data(), r.W.storage().size());
        if (options.h_silhouettes) {
          r.H = DenseMatrix<double>(r.k, n);
          in.next(r.H.data(), r.H.storage().size());
        }
        records.emplace(std::make_pair(r.k, r.p), std::move(r));
      }
    }
  }

  // 3. Clustering and silhouettes on world rank 0; the centroids (columns summing to 1) to every rank.
  std::vector<DenseMatrix<double>> centroids;
  centroids.reserve(ks.size());
  for (index_t k : ks) centroids.emplace_back(m, k);
  if (rank == 0) {
    auto host = backend::make_kernels<double>(BackendKind::cpu);
    for (std::size_t ki = 0; ki < ks.size(); ++ki) {
      const auto cluster_start = Clock::now();
      const index_t k = ks[ki];
      NmfkRank<T> r;
      r.k = k;
      int best = 0;
      for (int p = 0; p < P; ++p) {
        const JobRecord& job = records.at({k, p});
        r.perturbation_errors.push_back(job.rel_error);
        r.perturbation_iterations.push_back(job.iterations);
        r.seconds += job.seconds;
        if (job.rel_error < r.perturbation_errors[static_cast<std::size_t>(best)]) best = p;
      }
      // Factorisations stuck far above the best fit (a poor local minimum) are left out of the clustering.
      std::vector<int> used;
      for (int p = 0; p < P; ++p) {
        if (r.perturbation_errors[static_cast<std::size_t>(p)] <=
            options.accept_factor * r.perturbation_errors[static_cast<std::size_t>(best)])
          used.push_back(p);
        else
          r.rejected_perturbations.push_back(p);
      }
      const int used_count = static_cast<int>(used.size());
      DenseMatrix<double> vectors(k * used_count, m);
      int seed = 0;
      for (int u = 0; u < used_count; ++u) {
        const JobRecord& job = records.at({k, used[static_cast<std::size_t>(u)]});
        if (used[static_cast<std::size_t>(u)] == best) seed = u;
        for (index_t l = 0; l < k; ++l)
          for (index_t i = 0; i < m; ++i) vectors(u * k + l, i) = job.W(i, l);
      }
      normalise_rows(vectors);
      const Clustering c = cluster_columns(*host, vectors, k, used_count, seed, options.max_cluster_iterations);
      const Silhouettes s = cosine_silhouettes(*host, vectors, c.labels, k);
      r.silhouettes = s.per_cluster;
      r.min_silhouette = s.min;
      r.mean_silhouette = s.mean;
      r.cluster_iterations = c.iterations;
      r.cluster_converged = c.converged;
      if (options.h_silhouettes) {
        DenseMatrix<double> rows(k * used_count, n);
        for (int u = 0; u < used_count; ++u) {
          const JobRecord& job = records.at({k, used[static_cast<std::size_t>(u)]});
          for (index_t l = 0; l < k; ++l)
            for (index_t j = 0; j < n; ++j) rows(u * k + l, j) = job.H(l, j);
        }
        const Silhouettes hs = cosine_silhouettes(*host, rows, c.labels, k);
        r.h_silhouettes = hs.per_cluster;
        r.h_min_silhouette = hs.min;
        r.h_mean_silhouette = hs.mean;
      }
      DenseMatrix<double>& w = centroids[ki];
      for (index_t l = 0; l < k; ++l) {
        double sum = 0;
        for (index_t i = 0; i < m; ++i) sum += c.centroids(i, l);
        for (index_t i = 0; i < m; ++i) w(i, l) = sum > 0 ? c.centroids(i, l) / sum : 0.0;
      }
      r.seconds += seconds_since(cluster_start);
      result.ranks.push_back(std::move(r));
    }
    records.clear();
  }
  for (auto& w : centroids) world.broadcast(w.data(), w.storage().size(), dist::Scalar::f64, 0);

  // 4. One regression per k on the groups.
  std::vector<Job> regressions;
  regressions.reserve(ks.size());
  for (index_t k : ks) regressions.push_back({k, 0});
  const auto regression_plan = schedule_jobs(regressions, options.groups);
  {
    for (const Job& job : regression_plan[static_cast<std::size_t>(group.index)]) {
      const auto ki = static_cast<std::size_t>(std::find(ks.begin(), ks.end(), job.k) - ks.begin());
      std::optional<RegressionRecord> rec = regress(group, centroids[ki], options.factor.backend);
      if (!rec) continue;
      payload.insert(payload.end(), {static_cast<double>(rec->k), rec->rel_error, rec->seconds});
      append(payload, rec->H);
      payload.insert(payload.end(), rec->column_errors.begin(), rec->column_errors.end());
    }
  }
  const auto payloads = gather_payloads(world, payload);

  // 5. Selection.
  long long chosen[4] = {-1, -1, -1, 0};
  if (rank == 0) {
    for (const auto& from : payloads) {
      PayloadReader in(from);
      while (!in.done()) {
        const auto k = static_cast<index_t>(in.next());
        const auto ki = static_cast<std::size_t>(std::find(ks.begin(), ks.end(), k) - ks.begin());
        NmfkRank<T>& r = result.ranks[ki];
        r.rel_error = in.next();
        r.seconds += in.next();
        DenseMatrix<double> h(k, n);
        in.next(h.data(), h.storage().size());
        r.column_errors.resize(static_cast<std::size_t>(n));
        in.next(r.column_errors.data(), r.column_errors.size());
        r.H = DenseMatrix<T>(k, n);
        for (std::size_t i = 0; i < h.storage().size(); ++i) r.H.storage()[i] = static_cast<T>(h.storage()[i]);
        r.W = DenseMatrix<T>(m, k);
        for (std::size_t i = 0; i < centroids[ki].storage().size(); ++i)
          r.W.storage()[i] = static_cast<T>(centroids[ki].storage()[i]);
      }
    }
    const SelectionCriteria criteria{options.sil_threshold, options.err_threshold, options.rule,
                                     options.wilcoxon_alpha};
    std::vector<RankFigures> figures;
    for (auto& r : result.ranks) {
      figures.push_back({r.k, r.min_silhouette, r.rel_error, r.column_errors});
      r.accepted = accepted(figures.back(), criteria);
    }
    result.selection = select_rank(figures, criteria);
    const NmfkSelection& s = result.selection;
    chosen[0] = s.selected_k ? *s.selected_k : -1;
    chosen[1] = s.silhouette_k ? *s.silhouette_k : -1;
    chosen[2] = s.wilcoxon_k ? *s.wilcoxon_k : -1;
    chosen[3] = s.best_candidate;
  }
  world.broadcast(chosen, 4, dist::Scalar::i64, 0);
  if (rank != 0) {
    NmfkSelection& s = result.selection;
    s.decided_by = options.rule;
    if (chosen[0] >= 0) s.selected_k = chosen[0];
    if (chosen[1] >= 0) s.silhouette_k = chosen[1];
    if (chosen[2] >= 0) s.wilcoxon_k = chosen[2];
    s.best_candidate = chosen[3];
  }
  result.seconds = seconds_since(start);
  return result;
}

template NmfkResult<float> nmfk<float>(index_t, index_t, const BlockProvider<float>&, const NmfkOptions&,
                                       dist::Communicator&);
template NmfkResult<double> nmfk<double>(index_t, index_t, const BlockProvider<double>&, const NmfkOptions&,
                                         dist::Communicator&);

}  // namespace dnmf
