// nmfk(): the whole sweep on a world of processes. Phases, each collective over the world:
//   1. groups, grids and blocks; the data's fingerprint; the checkpoints (world rank 0 decides what is done);
//   2. the remaining (k, p) jobs on the groups, checkpointed by each group's root as they finish;
//   3. on world rank 0: clustering and silhouettes per k; the centroids go to every rank;
//   4. the regressions (one per k) on the groups; 5. on world rank 0: the selection.
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/nmfk.hpp"
#include "nmfk/checkpoint.hpp"
#include "nmfk/clustering.hpp"
#include "nmfk/collect.hpp"
#include "nmfk/content_hash.hpp"
#include "nmfk/group.hpp"
#include "nmfk/job.hpp"
#include "nmfk/provider.hpp"
#include "nmfk/regression.hpp"
#include "nmfk/schedule.hpp"
#include "nmfk/selection.hpp"
#include "nmfk/silhouette.hpp"
#include "nmfk/sweep_cancel.hpp"
#include "solvers/solve.hpp"
#include "util/memory.hpp"
#include "util/parallel_loops.hpp"
#include "util/thread_count.hpp"

namespace dnmf {
namespace rank_search {
namespace {

using Clock = std::chrono::steady_clock;

/// Relative errors at or below this are fits of A to its rounding (float32's included): never "stuck in a poor
/// local minimum", whatever NmfkOptions::accept_factor says.
constexpr double kExactFit = 1e-4;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// The shortest of 15 or 17 significant digits that reads back as v (0.03, not 0.029999999999999999).
std::string number(double v) {
  for (int digits : {15, 17}) {
    std::ostringstream s;
    s.precision(digits);
    s << v;
    // Read back with from_chars ('.' whatever the locale): stod under a decimal-comma locale stopped at the '.',
    // and the 17-digit form made checkpoints refuse the same options in another locale.
    std::string text = s.str();
    double back = 0;
    const auto parsed = std::from_chars(text.data(), text.data() + text.size(), back);
    if (digits == 17 || (parsed.ec == std::errc() && back == v)) return text;
  }
  return {};
}

// Option checks fail identically on every rank, and are the user's to fix: exit status 2.
[[noreturn]] void throw_usage(const std::string& message) { throw CollectiveError(message, ErrorKind::usage); }

// Bytes world rank 0 holds for the clustering: every job's W (and H with h_silhouettes), once as gathered
// payload and once as records, and for the largest k the stacked unit vectors and their (P·k)² cosine Gram.
double ensemble_bytes(const NmfkOptions& o, const std::vector<index_t>& ks, index_t m, index_t n) {
  const double p = o.perturbations;
  const double per_column = static_cast<double>(m) + (o.h_silhouettes ? static_cast<double>(n) : 0.0);
  double columns = 0;
  for (index_t k : ks) columns += static_cast<double>(k);
  const double vectors = p * static_cast<double>(ks.back());
  return 8 * (2 * p * columns * per_column + vectors * per_column + vectors * vectors);
}

// Every check that can fail for reasons the user controls, identical on every rank (no rank waits forever
// for one that gave up).
void validate(const NmfkOptions& o, const std::vector<index_t>& ks, index_t m, index_t n, int processes) {
  if (m < 1 || n < 1)
    throw CollectiveError("nmfk: the matrix is empty (" + std::to_string(m) + "x" + std::to_string(n) + ")",
                          ErrorKind::data);
  if (ks.empty()) throw_usage("nmfk: no k to try (--k is empty)");
  for (index_t k : ks)
    if (k < 1 || k > std::min(m, n))
      throw_usage("nmfk: k=" + std::to_string(k) + " does not fit a " + std::to_string(m) + "x" + std::to_string(n) +
                  " matrix: need 1 <= k <= " + std::to_string(std::min(m, n)));
  // One perturbation per k gives clusters of one member, whose silhouettes are 0: no k could ever pass.
  if (o.perturbations < 2)
    throw_usage(
        "nmfk: --perturbations must be >= 2 (the silhouettes compare the factors of different "
        "perturbations), got " +
        std::to_string(o.perturbations));
  // Refused before any job runs: otherwise a sweep too large to cluster fails only after all its fits.
  const double need = ensemble_bytes(o, ks, m, n);
  const double have = util::physical_memory_bytes();
  if (have > 0 && need > have) {
    std::ostringstream message;
    message.precision(3);
    message << "nmfk: " << o.perturbations << " perturbations of k up to " << ks.back() << " on a " << m << "x" << n
            << " matrix need about " << need / (1 << 30) << " GiB on rank 0 to cluster, more than this machine's "
            << have / (1 << 30) << " GiB: use fewer --perturbations or fewer k";
    throw_usage(message.str());
  }
  if (!(o.epsilon >= 0 && o.epsilon < 1)) throw_usage("nmfk: --epsilon must be in [0, 1), got " + number(o.epsilon));
  // Values cast from integers outside the enumerations: one ran uniform draws and was reported as poisson.
  if (o.perturbation != Perturbation::uniform && o.perturbation != Perturbation::poisson)
    throw_usage("nmfk: unknown perturbation (value " + std::to_string(static_cast<int>(o.perturbation)) +
                "; expected uniform or poisson)");
  if (o.rule != SelectionRule::silhouette && o.rule != SelectionRule::wilcoxon)
    throw_usage("nmfk: unknown selection rule (value " + std::to_string(static_cast<int>(o.rule)) +
                "; expected silhouette or wilcoxon)");
  // Silhouettes lie in [-1, 1]: a threshold below -1 accepted every k without saying so.
  if (!std::isfinite(o.sil_threshold) || o.sil_threshold > 1 || o.sil_threshold < -1)
    throw_usage("nmfk: --sil-threshold must be in [-1, 1] (silhouettes are), got " + number(o.sil_threshold));
  if (o.err_threshold && !(*o.err_threshold >= 0))
    throw_usage("nmfk: --err-threshold must be >= 0, got " + number(*o.err_threshold));
  if (!(o.wilcoxon_alpha > 0 && o.wilcoxon_alpha < 1)) throw_usage("nmfk: the Wilcoxon level must be in (0, 1)");
  if (o.groups < 1 || o.groups > processes)
    throw_usage("nmfk: --groups " + std::to_string(o.groups) + " needs 1 <= groups <= processes (" +
                std::to_string(processes) + ")");
  if (o.max_cluster_iterations < 1) throw_usage("nmfk: the clustering iteration cap must be >= 1");
  if (!(o.accept_factor >= 1)) throw_usage("nmfk: --accept-factor must be >= 1, got " + number(o.accept_factor));
  if (o.factor.init == InitMethod::given) throw_usage("nmfk: given initial factors make no sense for NMFk");
  const bool shared = processes / o.groups > 1 || processes % o.groups != 0;
  if (shared && (o.factor.init == InitMethod::nndsvd || o.factor.init == InitMethod::nndsvda))
    throw_usage("nmfk: --init " + to_string(o.factor.init) +
                " needs the whole matrix on one process: use --init random or one process per group");
  if (o.grid != "auto") {
    const dist::GridShape shape = dist::parse_grid(o.grid);
    if (processes % o.groups != 0 || shape.size() != processes / o.groups)
      throw_usage("nmfk: --grid " + o.grid + " must have as many ranks as each group (" + std::to_string(processes) +
                  " processes in " + std::to_string(o.groups) + " groups)");
  }
  FactorOptions check = o.factor;
  check.rank = ks.back();
  solvers::check_options(check, m, n);
}

template <class T>
Fingerprint make_fingerprint(const NmfkOptions& o, index_t m, index_t n, double nonzeros, double sum,
                             double sum_squares, std::uint64_t content_hash) {
  Fingerprint f;
  f.data = {{"rows", std::to_string(m)}, {"cols", std::to_string(n)}, {"nonzeros", number(nonzeros)}};
  f.content_hash = content_hash_text(content_hash);
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
  // Options that change a job's numbers but were not recorded before: listed only where they differ from their
  // default, so that earlier checkpoints (made at the defaults) still resume and any other setting is refused.
  const FactorOptions defaults;
  if (s.extrapolate != defaults.extrapolate) f.options.emplace_back("extrapolate", s.extrapolate ? "on" : "off");
  if (s.fused != defaults.fused) f.options.emplace_back("fused", s.fused ? "on" : "off");
  if (s.w_first != defaults.w_first) f.options.emplace_back("w_first", s.w_first ? "on" : "off");
  if (s.normalize != defaults.normalize) f.options.emplace_back("normalize", s.normalize ? "on" : "off");
  return f;
}

// Sum, squared norm, non-zero count and the number of entries that are not whole numbers of a block.
template <class T>
void block_stats(const MatrixBlock<T>& b, double out[4]) {
  const auto add = [&](T value) {
    const double v = static_cast<double>(value);
    out[0] += v;
    out[1] += v * v;
    out[2] += v != 0 ? 1 : 0;
    out[3] += v != std::floor(v) ? 1 : 0;
  };
  if (b.sparse)
    for (T v : b.csr.values()) add(v);
  else
    for (T v : b.dense.storage()) add(v);
}

// Job and regression records travel to world rank 0 as flat payloads of doubles. Each record type has one
// field list (job_fields, regression_fields) that both the writer and the reader walk, so the two cannot
// disagree on the order or the shapes.
class PayloadWriter {
 public:
  explicit PayloadWriter(std::vector<double>& out) : out_(out) {}
  template <class V>
  void scalar(const V& v) {
    out_.push_back(static_cast<double>(v));
  }
  void matrix(const DenseMatrix<double>& x, index_t /*rows*/, index_t /*cols*/) {
    out_.insert(out_.end(), x.storage().begin(), x.storage().end());
  }
  void vector(const std::vector<double>& x, index_t /*size*/) { out_.insert(out_.end(), x.begin(), x.end()); }

 private:
  std::vector<double>& out_;
};

class PayloadFieldReader {
 public:
  explicit PayloadFieldReader(PayloadReader& in) : in_(in) {}
  template <class V>
  void scalar(V& v) {
    v = static_cast<V>(in_.next());
  }
  void matrix(DenseMatrix<double>& x, index_t rows, index_t cols) {
    x = DenseMatrix<double>(rows, cols);
    in_.next(x.data(), x.storage().size());
  }
  void vector(std::vector<double>& x, index_t size) {
    x.resize(to_size(size));
    in_.next(x.data(), x.size());
  }

 private:
  PayloadReader& in_;
};

// Record is JobRecord (reading) or const JobRecord (writing); W is m x k, H (only with_h) k x n.
template <class Io, class Record>
void job_fields(Io& io, Record& r, index_t m, index_t n, bool with_h) {
  io.scalar(r.k);
  io.scalar(r.p);
  io.scalar(r.rel_error);
  io.scalar(r.seconds);
  io.scalar(r.iterations);
  io.matrix(r.W, m, r.k);
  if (with_h) io.matrix(r.H, r.k, n);
}

// Record is RegressionRecord or its const; H is k x n, one error per column.
template <class Io, class Record>
void regression_fields(Io& io, Record& r, index_t n) {
  io.scalar(r.k);
  io.scalar(r.rel_error);
  io.scalar(r.seconds);
  io.matrix(r.H, r.k, n);
  io.vector(r.column_errors, n);
}

template <class T>
DenseMatrix<T> to_precision(const DenseMatrix<double>& x) {
  DenseMatrix<T> y(x.rows(), x.cols());
  for (std::size_t i = 0; i < x.storage().size(); ++i) y.storage()[i] = static_cast<T>(x.storage()[i]);
  return y;
}

std::vector<index_t> sorted_ks(const NmfkOptions& options) {
  std::vector<index_t> ks(options.ks);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

// One rank's part of the sweep; each method is one phase (or part of one) of the list at the top of the file.
template <class T>
class Sweep {
 public:
  Sweep(index_t m, index_t n, const BlockProvider<T>& provider, const NmfkOptions& options, dist::Communicator& world)
      : start_(Clock::now()),
        m_(m),
        n_(n),
        provider_(provider),
        options_(options),
        world_(world),
        ks_(sorted_ks(options)),
        rank_(world.rank()),
        P_(options.perturbations),
        store_(options.checkpoint_dir),
        cancel_(options.factor.cancel, world) {}

  NmfkResult<T> run() {
    validate(options_, ks_, m_, n_, world_.size());
    const util::ThreadCountScope thread_count(options_.factor.threads);
    form_group();
    const std::vector<Job> remaining = load_checkpoints();
    const std::vector<double> records = run_jobs(remaining);
    cancel_.agree();  // every process, before the first collective after the groups' own work
    collect_job_records(records);
    centroids_.reserve(ks_.size());
    for (index_t k : ks_) centroids_.emplace_back(m_, k);
    if (rank_ == 0) cluster_all();
    for (auto& w : centroids_) world_.broadcast(w.data(), w.storage().size(), dist::Scalar::f64, 0);
    const auto payloads = gather_payloads(world_, run_regressions());
    cancel_.agree();  // a signal during the clustering or the regressions, to any process
    select(payloads);
    result_.seconds = seconds_since(start_);
    return std::move(result_);
  }

 private:
  void notice(const std::string& line) const {
    if (rank_ == 0 && options_.notice && !line.empty()) options_.notice(line);
  }

  std::size_t index_of(index_t k) const { return to_size(std::find(ks_.begin(), ks_.end(), k) - ks_.begin()); }

  // 1. Groups, grids, blocks; the data's sum, squared norm and non-zero count.
  void form_group() {
    const int processes = world_.size();
    group_.count = options_.groups;
    group_.index = group_of(rank_, processes, options_.groups);
    group_.comm = world_.split(group_.index, rank_);
    shape_ = options_.grid == "auto" ? dist::choose_grid(group_.comm->size(), m_, n_, ks_.back())
                                     : dist::parse_grid(options_.grid);
    group_.grid = std::make_unique<dist::Grid>(*group_.comm, shape_);
    group_.layout = dist::make_layout(*group_.grid, m_, n_);
    const dist::Layout& layout = group_.layout;
    group_.block = provider_(
        {layout.a_rows.first, layout.a_rows.last, layout.a_cols.first, layout.a_cols.last, group_.comm.get()});
    if (rows_of(group_.block.ref()) != layout.a_rows.size() || cols_of(group_.block.ref()) != layout.a_cols.size())
      throw Error("nmfk: the block provider returned a block of the wrong shape");
    block_stats(group_.block, stats_);
    group_.comm->allreduce_sum(stats_, 4);
    world_.broadcast(stats_, 4, dist::Scalar::f64, 0);  // group 0's figures for everyone: one fingerprint
    const std::uint64_t hash =
        sum_content_hash(block_content_hash(group_.block, layout.a_rows.first, layout.a_cols.first), *group_.comm);
    std::int64_t word = 0;
    std::memcpy(&word, &hash, sizeof word);
    world_.broadcast(&word, 1, dist::Scalar::i64, 0);
    std::memcpy(&content_hash_, &word, sizeof word);
    if (!(stats_[1] > 0) && stats_[0] > 0)  // solve()'s diagnosis: entries below about 1e-162
      throw CollectiveError(
          "nmfk: the matrix's entries are too small to factorise: their squares underflow to zero; multiply the "
          "matrix by a large constant first",
          ErrorKind::data);
    if (!(stats_[1] > 0))
      throw CollectiveError("nmfk: the matrix is all zeros: there is nothing to factorise", ErrorKind::data);
    if (!std::isfinite(stats_[1]))  // before any job: every perturbed copy would fail alike
      throw CollectiveError(
          "nmfk: the sum of the squared entries overflows double precision (entries of about 1e154 and more cannot "
          "be squared): rescale the matrix, e.g. divide it by its largest entry",
          ErrorKind::numerical);
    // A Poisson draw with mean 0.37 is an integer, mostly 0: on data that are not counts (normalised expression,
    // spectra) the copies are not perturbations of A but a different, sparser matrix, and nothing fails to say so.
    if (options_.perturbation == Perturbation::poisson && stats_[3] > 0) {
      std::ostringstream text;
      text << "--perturbation poisson resamples count data, but " << static_cast<long long>(stats_[3]) << " of the "
           << static_cast<long long>(stats_[2])
           << " non-zero entries of A are not whole numbers; each copy replaces them by Poisson draws (integers), "
              "which is not a small perturbation of such data: use --perturbation uniform for data that are not "
              "counts";
      result_.warnings.push_back(text.str());
      notice("warning: " + text.str());  // now, not after a sweep that may run for hours
    }
  }

  // Checkpoints: world rank 0 reads what is finished; everyone learns which jobs remain.
  std::vector<Job> load_checkpoints() {
    std::vector<Job> jobs;
    for (index_t k : ks_)
      for (int p = 0; p < P_; ++p) jobs.push_back({k, p});
    std::vector<unsigned char> finished = read_checkpoints(jobs);
    world_.broadcast(finished.data(), finished.size(), dist::Scalar::u8, 0);
    std::vector<Job> remaining;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      if (!finished[i]) remaining.push_back(jobs[i]);
    result_.rows = m_;
    result_.cols = n_;
    result_.jobs_total = static_cast<int>(jobs.size());
    result_.jobs_loaded = static_cast<int>(jobs.size() - remaining.size());
    result_.jobs_run = static_cast<int>(remaining.size());
    result_.processes = world_.size();
    result_.groups = options_.groups;
    result_.group_grid = shape_.str();
    if (result_.jobs_loaded > 0)
      notice("resuming from " + store_.directory() + ": " + std::to_string(result_.jobs_loaded) + " of " +
             std::to_string(result_.jobs_total) + " jobs already finished, " + std::to_string(result_.jobs_run) +
             " to run");
    return remaining;
  }

  // On world rank 0: which jobs have a usable file (their records kept); an error there is every rank's.
  std::vector<unsigned char> read_checkpoints(const std::vector<Job>& jobs) {
    std::vector<unsigned char> finished(jobs.size(), 0);
    ErrorKind kind = ErrorKind::general;
    std::string error;
    if (rank_ == 0) {
      try {
        notice(store_.open(make_fingerprint<T>(options_, m_, n_, stats_[2], stats_[0], stats_[1], content_hash_),
                           options_.restart));
        for (std::size_t i = 0; i < jobs.size(); ++i) {
          std::string problem;
          auto record = store_.load(jobs[i].k, jobs[i].p, m_, n_, &problem);
          notice(problem);
          if (!record) continue;
          if (!options_.h_silhouettes) record->H = DenseMatrix<double>();
          records_.emplace(std::make_pair(jobs[i].k, jobs[i].p), std::move(*record));
          finished[i] = 1;
        }
      } catch (const Error& e) {
        error = e.what();
        kind = e.kind();
      }
    }
    dist::throw_root_error(world_, 0, std::move(error), kind);  // rank 0's error becomes every rank's
    // The groups' roots save job files under rank 0's manifest (only rank 0 knows the file's size, a part of it).
    auto identity = static_cast<std::int64_t>(store_.identity());
    world_.broadcast(&identity, 1, dist::Scalar::i64, 0);
    store_.adopt_identity(static_cast<std::uint64_t>(identity));
    return finished;
  }

  // 2. The remaining jobs, largest k first, dealt to the groups; returns this rank's payload of records.
  std::vector<double> run_jobs(const std::vector<Job>& remaining) {
    const std::vector<std::vector<Job>> plan = schedule_jobs(remaining, options_.groups);
    const std::vector<Job>& mine = plan[to_size(group_.index)];
    std::vector<double> payload;
    PayloadWriter out(payload);
    int done = 0;
    auto finish = [&](const Job& job, const std::optional<JobRecord>& record) {
      ++done;
      if (!record) return;
      store_.save(*record);
      if (options_.progress)
        options_.progress({job.k, job.p, group_.index, false, record->rel_error, record->iterations, record->seconds,
                           done, static_cast<int>(mine.size())});
      job_fields(out, *record, m_, n_, options_.h_silhouettes);
    };
    // The jobs ask cancel_, which also hears of other groups' stops; a stop ends this group's jobs, and the
    // processes agree on it once all have left theirs (cancel_.agree()).
    NmfkOptions hooked = options_;
    if (options_.factor.cancel) hooked.factor.cancel = [this] { return cancel_(); };
    const int workers = side_by_side_workers(mine.size());
    if (workers <= 1) {
      try {
        for (const Job& job : mine) finish(job, run_job(group_, job.k, job.p, hooked));
      } catch (const Cancelled& e) {
        cancel_.stopped(e.what());
      }
      return payload;
    }
    // Records reach the payload in the order the jobs finish; the reader keys them by (k, p). One lock per call:
    // a named `omp critical` is one lock for the whole process, so a callback sleeping in one NMFk call stalled
    // every other call's jobs (0.02 s -> 7.8 s), and a callback that ran NMFk itself deadlocked.
    util::ParallelFailure failure;  // the first exception, rethrown once every thread is done
    std::mutex finishing, polling;  // the user's cancel hook is called by one thread at a time
#pragma omp parallel num_threads(workers)
    {
      omp_set_num_threads(1);  // each job on this thread alone; nested regions and BLAS stay serial
      // The thread's copy of the options inside failure.run as well: a std::bad_alloc in this copy (its strings)
      // had left the region, std::terminate.
      std::optional<NmfkOptions> job_options;
      failure.run([&] {
        job_options.emplace(hooked);
        if (options_.factor.cancel) {
          job_options->factor.cancel = [&polling, &hooked] {
            const std::lock_guard<std::mutex> lock(polling);
            return hooked.factor.cancel();
          };
        }
      });
#pragma omp for schedule(dynamic, 1)
      for (std::size_t i = 0; i < mine.size(); ++i) {
        if (!job_options) continue;  // its copy failed: the failure is kept, the other threads stop
        failure.run([&] {
          dist::SingleCommunicator self;
          const dist::Grid grid(self, {1, 1});
          const auto record = run_job(group_.block, grid, group_.layout, mine[i].k, mine[i].p, *job_options);
          const std::lock_guard<std::mutex> lock(finishing);
          finish(mine[i], record);
        });
      }
    }
    try {
      failure.rethrow();
    } catch (const Cancelled& e) {
      cancel_.stopped(e.what());
    }
    return payload;
  }

  // NMFk's jobs are small, independent factorisations that thread poorly (a fork and join per kernel), so a
  // one-process group on the host runs them side by side, one thread each. A device backend, or a block so
  // large that a perturbed copy per thread would strain memory, keeps one job at a time on all threads.
  [[nodiscard]] int side_by_side_workers(std::size_t jobs) const {
    if (group_.comm->size() != 1 || options_.factor.backend == BackendKind::cuda) return 1;
    const MatrixBlock<T>& b = group_.block;
    const double bytes = b.sparse ? static_cast<double>(b.csr.values().size()) * (sizeof(T) + sizeof(col_index_t))
                                  : static_cast<double>(b.dense.storage().size()) * sizeof(T);
    const int threads = omp_get_max_threads();
    if (bytes * threads > kSideBySideBytes) return 1;
    return static_cast<int>(std::min<std::size_t>(to_size(threads), jobs));
  }
  static constexpr double kSideBySideBytes = 1024.0 * 1024 * 1024;

  void collect_job_records(const std::vector<double>& payload) {
    for (const auto& from : gather_payloads(world_, payload)) {
      PayloadReader in(from);
      PayloadFieldReader fields(in);
      while (!in.done()) {
        JobRecord r;
        job_fields(fields, r, m_, n_, options_.h_silhouettes);
        records_.emplace(std::make_pair(r.k, r.p), std::move(r));
      }
    }
  }

  // 3. Clustering and silhouettes on world rank 0; the centroids (columns summing to 1) go to every rank.
  void cluster_all() {
    auto host = backend::make_kernels<double>(BackendKind::cpu);
    for (std::size_t ki = 0; ki < ks_.size(); ++ki) result_.ranks.push_back(cluster_rank(*host, ki));
    records_.clear();
  }

  NmfkRank<T> cluster_rank(backend::Kernels<double>& host, std::size_t ki) {
    const auto cluster_start = Clock::now();
    const index_t k = ks_[ki];
    NmfkRank<T> r;
    r.k = k;
    const int best = summarise_perturbations(r);
    const std::vector<int> used = accept_perturbations(r, best);
    const int used_count = static_cast<int>(used.size());
    int seed = 0;
    DenseMatrix<double> vectors = stacked_w_columns(k, used, best, seed);
    normalise_rows(vectors);
    const Clustering c = cluster_columns(host, vectors, k, used_count, seed, options_.max_cluster_iterations);
    const Silhouettes s = cosine_silhouettes(host, vectors, c.labels, k);
    r.silhouettes = s.per_cluster;
    r.min_silhouette = s.min;
    r.mean_silhouette = s.mean;
    r.cluster_iterations = c.iterations;
    r.cluster_converged = c.converged;
    if (options_.h_silhouettes) add_h_silhouettes(host, r, used, c.labels);
    DenseMatrix<double>& w = centroids_[ki];
    for (index_t l = 0; l < k; ++l) {
      double sum = 0;
      for (index_t i = 0; i < m_; ++i) sum += c.centroids(i, l);
      for (index_t i = 0; i < m_; ++i) w(i, l) = sum > 0 ? c.centroids(i, l) / sum : 0.0;
    }
    r.seconds += seconds_since(cluster_start);
    return r;
  }

  // Records each perturbation's error, iterations and time; returns the best one.
  int summarise_perturbations(NmfkRank<T>& r) const {
    int best = 0;
    for (int p = 0; p < P_; ++p) {
      const JobRecord& job = records_.at({r.k, p});
      r.perturbation_errors.push_back(job.rel_error);
      r.perturbation_iterations.push_back(job.iterations);
      r.seconds += job.seconds;
      if (job.rel_error < r.perturbation_errors[to_size(best)]) best = p;
    }
    return best;
  }

  // Factorisations stuck far above the best fit (a poor local minimum) are left out of the clustering. A fit
  // within kExactFit of A is never stuck: on exact low-rank data (epsilon 0) the errors are rounding, 6e-9 to
  // 2.5e-8 at one k, and the relative rule alone left out half of them at random (a 100x80 rank-4 matrix chose
  // k = 5 from the two fits it kept, whose clusters then agreed by chance).
  std::vector<int> accept_perturbations(NmfkRank<T>& r, int best) const {
    const double limit = std::max(options_.accept_factor * r.perturbation_errors[to_size(best)], kExactFit);
    std::vector<int> used;
    for (int p = 0; p < P_; ++p) {
      if (r.perturbation_errors[to_size(p)] <= limit)
        used.push_back(p);
      else
        r.rejected_perturbations.push_back(p);
    }
    return used;
  }

  // W's columns of the used perturbations as rows, perturbation by perturbation; seed: the best one's place.
  DenseMatrix<double> stacked_w_columns(index_t k, const std::vector<int>& used, int best, int& seed) const {
    const int used_count = static_cast<int>(used.size());
    DenseMatrix<double> vectors(k * used_count, m_);
    for (int u = 0; u < used_count; ++u) {
      const JobRecord& job = records_.at({k, used[to_size(u)]});
      if (used[to_size(u)] == best) seed = u;
      for (index_t l = 0; l < k; ++l)
        for (index_t i = 0; i < m_; ++i) vectors(u * k + l, i) = job.W(i, l);
    }
    return vectors;
  }

  // The same silhouettes for H's rows, under W's clustering.
  void add_h_silhouettes(backend::Kernels<double>& host, NmfkRank<T>& r, const std::vector<int>& used,
                         const std::vector<int>& labels) const {
    const index_t k = r.k;
    const int used_count = static_cast<int>(used.size());
    DenseMatrix<double> rows(k * used_count, n_);
    for (int u = 0; u < used_count; ++u) {
      const JobRecord& job = records_.at({k, used[to_size(u)]});
      for (index_t l = 0; l < k; ++l)
        for (index_t j = 0; j < n_; ++j) rows(u * k + l, j) = job.H(l, j);
    }
    const Silhouettes hs = cosine_silhouettes(host, rows, labels, k);
    r.h_silhouettes = hs.per_cluster;
    r.h_min_silhouette = hs.min;
    r.h_mean_silhouette = hs.mean;
  }

  // 4. One regression per k on the groups; returns this rank's payload of records.
  std::vector<double> run_regressions() {
    std::vector<Job> regressions;
    regressions.reserve(ks_.size());
    for (index_t k : ks_) regressions.push_back({k, 0});
    const auto regression_plan = schedule_jobs(regressions, options_.groups);
    std::vector<double> payload;
    PayloadWriter out(payload);
    for (const Job& job : regression_plan[to_size(group_.index)]) {
      std::optional<RegressionRecord> rec = regress(group_, centroids_[index_of(job.k)], options_.factor.backend);
      if (rec) regression_fields(out, std::as_const(*rec), n_);
    }
    return payload;
  }

  // 5. Selection on world rank 0, shared with every rank.
  void select(const std::vector<std::vector<double>>& payloads) {
    long long chosen[4] = {-1, -1, -1, 0};
    if (rank_ == 0) {
      read_regressions(payloads);
      select_on_root(chosen);
    }
    world_.broadcast(chosen, 4, dist::Scalar::i64, 0);
    if (rank_ != 0) {
      NmfkSelection& s = result_.selection;
      s.decided_by = options_.rule;
      if (chosen[0] >= 0) s.selected_k = chosen[0];
      if (chosen[1] >= 0) s.silhouette_k = chosen[1];
      if (chosen[2] >= 0) s.wilcoxon_k = chosen[2];
      s.best_candidate = chosen[3];
    }
  }

  void read_regressions(const std::vector<std::vector<double>>& payloads) {
    for (const auto& from : payloads) {
      PayloadReader in(from);
      PayloadFieldReader fields(in);
      while (!in.done()) {
        RegressionRecord rec;
        regression_fields(fields, rec, n_);
        const std::size_t ki = index_of(rec.k);
        NmfkRank<T>& r = result_.ranks[ki];
        r.rel_error = rec.rel_error;
        r.seconds += rec.seconds;
        r.column_errors = std::move(rec.column_errors);
        r.H = to_precision<T>(rec.H);
        r.W = to_precision<T>(centroids_[ki]);
      }
    }
  }

  void select_on_root(long long chosen[4]) {
    const SelectionCriteria criteria{options_.sil_threshold, options_.err_threshold, options_.rule,
                                     options_.wilcoxon_alpha};
    std::vector<RankFigures> figures;
    for (auto& r : result_.ranks) {
      figures.push_back({r.k, r.min_silhouette, r.rel_error, r.column_errors});
      r.accepted = accepted(figures.back(), criteria);
    }
    result_.selection = select_rank(figures, criteria);
    const NmfkSelection& s = result_.selection;
    chosen[0] = s.selected_k ? *s.selected_k : -1;
    chosen[1] = s.silhouette_k ? *s.silhouette_k : -1;
    chosen[2] = s.wilcoxon_k ? *s.wilcoxon_k : -1;
    chosen[3] = s.best_candidate;
  }

  const Clock::time_point start_;
  const index_t m_, n_;
  const BlockProvider<T>& provider_;
  const NmfkOptions& options_;
  dist::Communicator& world_;
  const std::vector<index_t> ks_;
  const int rank_, P_;
  GroupContext<T> group_;
  dist::GridShape shape_;
  double stats_[4] = {0, 0, 0, 0};  // sum, squared norm, non-zeros, entries that are not whole numbers
  std::uint64_t content_hash_ = 0;  // of the whole matrix (content_hash.hpp), group 0's, as every rank knows it
  CheckpointStore store_;
  SweepCancel cancel_;  // after world_ and options_, which it is made from
  std::map<std::pair<index_t, int>, JobRecord> records_;
  std::vector<DenseMatrix<double>> centroids_;
  NmfkResult<T> result_;
};

}  // namespace
}  // namespace rank_search

template <class T>
NmfkResult<T> nmfk(index_t m, index_t n, const BlockProvider<T>& provider, const NmfkOptions& options,
                   dist::Communicator& world) {
  return rank_search::Sweep<T>(m, n, provider, options, world).run();
}

template NmfkResult<float> nmfk<float>(index_t, index_t, const BlockProvider<float>&, const NmfkOptions&,
                                       dist::Communicator&);
template NmfkResult<double> nmfk<double>(index_t, index_t, const BlockProvider<double>&, const NmfkOptions&,
                                         dist::Communicator&);

}  // namespace dnmf
