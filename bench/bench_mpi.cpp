// The distributed iteration on P processes (run it under mpirun -np P; bare, it is P = 1): seconds per
// iteration of MU on the foundation benchmark's workloads (bench_iteration: dense 4000x3000 and sparse
// 20000x10000 at density 0.005, k = 16), the bytes each rank sends per iteration against DESIGN §4's model,
// and the pieces the scaling model (bench/scaling_model.py) is built from: each rank's rate on its two
// products with A, the time of one iteration's collectives replayed alone, and the communicator's latency
// and bandwidth. With --baseline (the JSON of a 1-process run) it adds the parallel efficiency T1 / (P·TP).
//   mpirun -np P bench_mpi [--quick] [--iters N] [--hyper-iters N] [--reps R] [--threads T] [--grid auto|PRxPC]
//                          [--workloads dense,sparse,hyper] [--baseline one.json] [--json out.json]
// "hyper" is a 1e6 x 1e6 matrix at density 1e-6 (one non-zero per row on average), the class of the scaling
// model's sparse case: there the factor-sized work, not the non-zeros, sets the time.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/kernels.hpp"
#include "backend/operand.hpp"
#include "dist/communicator.hpp"
#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/planted.hpp"
#include "solvers/solve.hpp"
#include "solvers/update_rule.hpp"

namespace {

using dnmf::index_t;
using dnmf::dist::Communicator;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The whole matrix, as every rank builds it from the same seed (the benchmark measures the iteration, not
// the reading; src/io's per-rank readers are measured elsewhere).
struct Whole {
  dnmf::DenseMatrix<double> dense;
  dnmf::CsrMatrix<double> csr;
  bool sparse = false;
  [[nodiscard]] index_t rows() const { return sparse ? csr.rows() : dense.rows(); }
  [[nodiscard]] index_t cols() const { return sparse ? csr.cols() : dense.cols(); }
  [[nodiscard]] double nnz() const {
    return sparse ? static_cast<double>(csr.nnz()) : static_cast<double>(dense.rows()) * dense.cols();
  }
};

// Uniformly scattered non-zeros, `density` of m x n, values in [0.05, 1.05): the hypersparse case, which the
// planted generator (a product of sparse factors) does not reach at this size.
Whole scattered(index_t m, index_t n, double density, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<index_t> row(0, m - 1), col(0, n - 1);
  std::uniform_real_distribution<double> value(0.05, 1.05);
  const auto count = static_cast<std::size_t>(density * static_cast<double>(m) * static_cast<double>(n));
  std::vector<std::pair<index_t, index_t>> at(count);
  for (auto& p : at) p = {row(rng), col(rng)};
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  std::vector<index_t> indptr(dnmf::to_size(m) + 1, 0);
  std::vector<dnmf::col_index_t> indices;
  std::vector<double> values;
  for (const auto& [i, j] : at) {
    ++indptr[dnmf::to_size(i) + 1];
    indices.push_back(static_cast<dnmf::col_index_t>(j));
    values.push_back(value(rng));
  }
  for (std::size_t i = 0; i < dnmf::to_size(m); ++i) indptr[i + 1] += indptr[i];
  Whole w;
  w.sparse = true;
  w.csr = dnmf::CsrMatrix<double>(m, n, std::move(indptr), std::move(indices), std::move(values));
  return w;
}

Whole planted(const dnmf::PlantedOptions& po) {
  auto p = dnmf::make_planted<double>(po);
  Whole w;
  w.sparse = p.sparse;
  w.dense = std::move(p.dense);
  w.csr = std::move(p.csr);
  return w;
}

// A_ij of this rank with local indices.
Whole cut_block(const Whole& a, const dnmf::dist::Layout& l) {
  Whole b;
  b.sparse = a.sparse;
  if (!a.sparse) {
    b.dense = dnmf::DenseMatrix<double>(l.a_rows.size(), l.a_cols.size());
    for (index_t j = 0; j < b.dense.cols(); ++j)
      for (index_t i = 0; i < b.dense.rows(); ++i) b.dense(i, j) = a.dense(l.a_rows.first + i, l.a_cols.first + j);
    return b;
  }
  std::vector<index_t> indptr{0};
  std::vector<dnmf::col_index_t> indices;
  std::vector<double> values;
  const auto& ip = a.csr.indptr();
  for (index_t i = l.a_rows.first; i < l.a_rows.last; ++i) {
    for (index_t p = ip[dnmf::to_size(i)]; p < ip[dnmf::to_size(i) + 1]; ++p) {
      const index_t j = a.csr.indices()[dnmf::to_size(p)];
      if (j < l.a_cols.first || j >= l.a_cols.last) continue;
      indices.push_back(static_cast<dnmf::col_index_t>(j - l.a_cols.first));
      values.push_back(a.csr.values()[dnmf::to_size(p)]);
    }
    indptr.push_back(static_cast<index_t>(values.size()));
  }
  b.csr = dnmf::CsrMatrix<double>(l.a_rows.size(), l.a_cols.size(), std::move(indptr), std::move(indices),
                                  std::move(values));
  return b;
}

dnmf::MatrixRef<double> ref_of(const Whole& w) {
  return w.sparse ? dnmf::MatrixRef<double>{w.csr.view()} : dnmf::MatrixRef<double>{w.dense.view()};
}

// Best over `reps` of the slowest rank's time of f (ranks start together).
double timed(Communicator& world, int reps, const std::function<void()>& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    world.barrier();
    const auto t0 = Clock::now();
    f();
    best = std::min(best, world.max(seconds_since(t0)));
  }
  return best;
}

std::vector<std::size_t> piece_counts(const std::vector<index_t>& sizes, index_t k) {
  std::vector<std::size_t> c;
  for (index_t s : sizes) c.push_back(dnmf::to_size(s * k));
  return c;
}

struct Network {
  double latency_s = 0;      // one 8-byte allreduce over the world
  double bandwidth_Bps = 0;  // bytes a rank sends per second in a large allgather
};

// The communicator's own figures on this machine (shared memory between the ranks here).
Network measure_network(Communicator& world, int reps) {
  Network net;
  if (world.size() == 1) return net;
  const int calls = 200;
  double x = 1;
  net.latency_s = timed(world, reps,
                        [&] {
                          for (int c = 0; c < calls; ++c) x = world.sum(x) / world.size();
                        }) /
                  calls;
  const std::size_t piece = std::size_t{1} << 20;  // 8 MiB of doubles per rank
  std::vector<double> mine(piece, 1.0), all(piece * dnmf::to_size(world.size()));
  const std::vector<std::size_t> counts(dnmf::to_size(world.size()), piece);
  const double t =
      timed(world, reps, [&] { world.allgather(mine.data(), all.data(), counts, dnmf::dist::Scalar::f64); });
  const double sent = static_cast<double>(world.size() - 1) / world.size() * 8.0 * static_cast<double>(all.size());
  net.bandwidth_Bps = sent / t;
  return net;
}

struct Row {
  std::string workload;
  index_t m = 0, n = 0, k = 0;
  double nnz = 0;
  int processes = 1;
  std::string grid;
  bool fused = false;
  int iterations = 0;
  double seconds_per_iteration = 0;   // best rep; the slowest rank
  double best_iteration_seconds = 0;  // the fastest single iteration of all reps (slowest rank of it)
  double products_seconds = 0;        // WtA + AHt on the local block, slowest rank
  double product_gflops_min = 0;      // per rank, 4·nnz_local·k / products time, slowest rank
  double local_nnz_max = 0;
  double comm_replay_seconds = 0;     // one iteration's collectives alone, slowest rank
  double empty_products_seconds = 0;  // the products on an empty CSR block of the same shape: the block-sized part
  double piece_seconds = 0;           // MU update + Gram of both factor pieces: the piece-sized part
  index_t block_rows = 0, block_cols = 0, piece_rows = 0, piece_cols = 0;  // the largest over ranks
  double bytes_mean = 0, bytes_max = 0, bytes_model = 0;                   // all bytes of the run / iterations
  double steady_bytes_mean = 0, steady_bytes_max = 0;                      // per iteration, the setup taken out
  double efficiency = 0;                                                   // with a baseline
  double rel_error = 0;
};

Row run_workload(Communicator& world, const std::string& name, const Whole& whole, index_t k, int iters, int reps,
                 const std::string& grid_text) {
  const index_t m = whole.rows(), n = whole.cols();
  const int p = world.size();
  const dnmf::dist::GridShape shape =
      grid_text == "auto" ? dnmf::dist::choose_grid(p, m, n, k) : dnmf::dist::parse_grid(grid_text);
  dnmf::dist::Grid grid(world, shape);
  const dnmf::dist::Layout layout = dnmf::dist::make_layout(grid, m, n);
  const Whole block = cut_block(whole, layout);
  const dnmf::MatrixRef<double> a = ref_of(block);
  auto kernels = dnmf::backend::make_kernels<double>(dnmf::BackendKind::cpu);
  auto host = dnmf::backend::make_kernels<double>(dnmf::BackendKind::cpu);
  Row row;
  row.workload = name;
  row.m = m;
  row.n = n;
  row.k = k;
  row.nnz = whole.nnz();
  row.processes = p;
  row.grid = shape.str();
  row.local_nnz_max = world.max(block.nnz());

  // The two products on the local block, every rank at once (they share the machine as in the iteration).
  {
    dnmf::DenseMatrix<double> wt(k, layout.a_rows.size(), 0.5), h(k, layout.a_cols.size(), 0.5);
    dnmf::DenseMatrix<double> pp(k, layout.a_cols.size()), qt(k, layout.a_rows.size());
    double local_best = 1e300;
    row.products_seconds = timed(world, 3 * reps, [&] {
      const auto t0 = Clock::now();
      kernels->multiply(a, dnmf::backend::Side::H, wt.view(), pp.view(), 0.0);
      kernels->multiply(a, dnmf::backend::Side::W, h.view(), qt.view(), 0.0);
      local_best = std::min(local_best, seconds_since(t0));
    });
    const double rate = 4.0 * block.nnz() * static_cast<double>(k) / std::max(local_best, 1e-12) / 1e9;
    row.product_gflops_min = -world.max(-rate);
  }

  // The parts of the arithmetic that do not scale with the non-zeros, for the scaling model: what the two
  // products cost on a block of the same shape without entries (zeroing and writing the k x block outputs),
  // and the MU updates and Gram matrices of this rank's factor pieces.
  {
    const dnmf::CsrMatrix<double> empty(layout.a_rows.size(), layout.a_cols.size(),
                                        std::vector<index_t>(dnmf::to_size(layout.a_rows.size()) + 1, 0), {}, {});
    const dnmf::MatrixRef<double> e{empty.view()};
    dnmf::DenseMatrix<double> wt(k, layout.a_rows.size(), 0.5), h(k, layout.a_cols.size(), 0.5);
    dnmf::DenseMatrix<double> pp(k, layout.a_cols.size()), qt(k, layout.a_rows.size());
    row.empty_products_seconds = timed(world, 3 * reps, [&] {
      kernels->multiply(e, dnmf::backend::Side::H, wt.view(), pp.view(), 0.0);
      kernels->multiply(e, dnmf::backend::Side::W, h.view(), qt.view(), 0.0);
    });
    dnmf::DenseMatrix<double> wp(k, layout.w_rows.size(), 0.5), wn(k, layout.w_rows.size(), 0.5);
    dnmf::DenseMatrix<double> hp(k, layout.h_cols.size(), 0.5), hn(k, layout.h_cols.size(), 0.5);
    dnmf::DenseMatrix<double> g(k, k, 0.01), gx(k, k);
    const dnmf::backend::UpdateRule rule = dnmf::solvers::update_rule(dnmf::Algorithm::mu, 1e-16, 0, 0);
    row.piece_seconds = timed(world, 3 * reps, [&] {
      (void)kernels->update(rule, hp.view(), hn.view(), g.view(), nullptr);
      kernels->gram(hp.view(), gx.view(), 0.0);
      (void)kernels->update(rule, wp.view(), wn.view(), g.view(), nullptr);
      kernels->gram(wp.view(), gx.view(), 0.0);
    });
    row.block_rows = static_cast<index_t>(world.max(static_cast<double>(layout.a_rows.size())));
    row.block_cols = static_cast<index_t>(world.max(static_cast<double>(layout.a_cols.size())));
    row.piece_rows = static_cast<index_t>(world.max(static_cast<double>(layout.w_rows.size())));
    row.piece_cols = static_cast<index_t>(world.max(static_cast<double>(layout.h_cols.size())));
  }

  // The collectives of one MU iteration on this grid, without the arithmetic: allgather of W's block row,
  // reduce-scatter of P, allgather of H's block column, reduce-scatter of Q, two k x k allreduces, the
  // scalar sums and the stop flag.
  {
    const auto wc = piece_counts(layout.w_piece_sizes, k), hc = piece_counts(layout.h_piece_sizes, k);
    std::vector<double> wt(dnmf::to_size(k * layout.w_rows.size()) + 1),
        wt_full(dnmf::to_size(k * layout.a_rows.size()) + 1);
    std::vector<double> h(dnmf::to_size(k * layout.h_cols.size()) + 1),
        h_full(dnmf::to_size(k * layout.a_cols.size()) + 1);
    std::vector<double> gram(dnmf::to_size(k * k));
    const int replays = 5;
    row.comm_replay_seconds =
        timed(world, reps,
              [&] {
                for (int r = 0; r < replays; ++r) {
                  if (grid.row_comm().size() > 1) {
                    grid.row_comm().allgather(wt.data(), wt_full.data(), wc, dnmf::dist::Scalar::f64);
                    grid.row_comm().reduce_scatter_sum(wt_full.data(), wt.data(), wc, dnmf::dist::Scalar::f64);
                  }
                  if (grid.col_comm().size() > 1) {
                    grid.col_comm().allgather(h.data(), h_full.data(), hc, dnmf::dist::Scalar::f64);
                    grid.col_comm().reduce_scatter_sum(h_full.data(), h.data(), hc, dnmf::dist::Scalar::f64);
                  }
                  if (p > 1) {
                    world.allreduce_sum(gram.data(), gram.size());
                    world.allreduce_sum(gram.data(), gram.size());
                    (void)world.sum(1.0);
                    (void)world.sum<std::int64_t>(0);
                    (void)world.sum<std::int64_t>(0);
                    unsigned char flag = 0;
                    world.broadcast(&flag, 1, dnmf::dist::Scalar::u8, 0);
                  }
                }
              }) /
        replays;
  }

  // The iteration itself.
  dnmf::FactorOptions o;
  o.rank = k;
  o.algorithm = dnmf::Algorithm::mu;
  o.max_iterations = iters;
  o.tol = 0;
  o.seed = 1;
  dnmf::backend::ResidentOperand<double> operand(*kernels, kernels->make_resident(a));
  const dnmf::MatrixRef<double>* whole_ref = p == 1 ? &a : nullptr;
  double best = 1e300, best_total_bytes = 0;
  // Each iteration's duration on every rank (the progress callback reports the time since the loop began);
  // an iteration lasts as long as its slowest rank. The fastest such iteration is the figure least touched
  // by other jobs on a shared machine.
  std::vector<double> ends;
  o.progress = [&](const dnmf::IterationInfo& info) { ends.push_back(info.seconds); };
  row.best_iteration_seconds = 1e300;
  for (int r = 0; r < reps; ++r) {
    world.barrier();
    ends.clear();
    auto s = dnmf::solvers::solve(*kernels, *host, operand, whole_ref, grid, layout, o);
    std::vector<double> durations(ends.size());
    for (std::size_t t = 0; t < ends.size(); ++t) durations[t] = ends[t] - (t > 0 ? ends[t - 1] : 0.0);
    world.allreduce_max(durations.data(), durations.size(), dnmf::dist::Scalar::f64);
    for (double d : durations) row.best_iteration_seconds = std::min(row.best_iteration_seconds, d);
    const double per_iter = world.max(s.result.seconds / s.result.iterations);
    if (per_iter < best) {
      best = per_iter;
      row.iterations = s.result.iterations;
      row.fused = s.result.fused;
      row.rel_error = s.result.rel_error;
      best_total_bytes = s.iteration_traffic.bytes_sent;
      const double bytes = s.iteration_traffic.bytes_sent / s.result.iterations;
      row.bytes_mean = world.sum(bytes) / p;
      row.bytes_max = world.max(bytes);
    }
  }
  row.seconds_per_iteration = best;
  o.progress = nullptr;
  row.bytes_model = dnmf::dist::words_per_rank(shape, m, n, k) * sizeof(double);
  // The steady state the model describes: the traffic of `iters` iterations less that of one, per extra
  // iteration, so the one-off setup (the first Gram matrices; on the fused W-side path the first product
  // and its reduce-scatter) cancels out of it.
  row.steady_bytes_mean = row.bytes_mean;
  row.steady_bytes_max = row.bytes_max;
  if (iters > 1) {
    o.max_iterations = 1;
    auto one = dnmf::solvers::solve(*kernels, *host, operand, whole_ref, grid, layout, o);
    const double steady = (best_total_bytes - one.iteration_traffic.bytes_sent) / (iters - 1);
    row.steady_bytes_mean = world.sum(steady) / p;
    row.steady_bytes_max = world.max(steady);
  }
  return row;
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int run(int argc, char** argv) {
  Communicator& world = dnmf::dist::world();
  bool quick = false;
  int iters = 20, reps = 3, threads = 1, hyper_iters = 6;
  std::string grid = "auto", json_path, baseline_path, workloads = "dense,sparse";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw dnmf::Error("bench_mpi: " + arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--quick")
      quick = true;
    else if (arg == "--iters")
      iters = std::stoi(value());
    else if (arg == "--hyper-iters")
      hyper_iters = std::stoi(value());
    else if (arg == "--reps")
      reps = std::stoi(value());
    else if (arg == "--threads")
      threads = std::stoi(value());
    else if (arg == "--grid")
      grid = value();
    else if (arg == "--workloads")
      workloads = value();
    else if (arg == "--baseline")
      baseline_path = value();
    else if (arg == "--json")
      json_path = value();
    else
      throw dnmf::Error(
          "usage: bench_mpi [--quick] [--iters N] [--reps R] [--threads T] [--grid auto|PRxPC] "
          "[--workloads dense,sparse,hyper] [--baseline one.json] [--json FILE]");
  }
  omp_set_num_threads(threads);
  if (quick) iters = std::min(iters, 5);
  const index_t scale = quick ? 4 : 1;
  const index_t k = 16;
  const bool root = world.rank() == 0;

  const Network net = measure_network(world, reps);
  std::vector<Row> rows;
  for (const std::string& w : split_list(workloads)) {
    Whole whole;
    std::string name;
    if (w == "dense") {
      whole =
          planted({.rows = 4000 / scale, .cols = 3000 / scale, .rank = 10, .density = 1.0, .noise = 0.01, .seed = 1});
      name = "dense f64 " + std::to_string(4000 / scale) + "x" + std::to_string(3000 / scale);
    } else if (w == "sparse") {
      whole = planted(
          {.rows = 20000 / scale, .cols = 10000 / scale, .rank = 10, .density = 0.005, .noise = 0.01, .seed = 1});
      name = "sparse f64 " + std::to_string(20000 / scale) + "x" + std::to_string(10000 / scale);
    } else if (w == "hyper") {
      const index_t side = 1000000 / scale;
      whole = scattered(side, side, 1e-6 * static_cast<double>(scale), 1);
      name = "hyper f64 " + std::to_string(side) + "x" + std::to_string(side);
    } else {
      throw dnmf::Error("bench_mpi: unknown workload '" + w + "' (dense, sparse, hyper)");
    }
    rows.push_back(
        run_workload(world, name, whole, k, w == "hyper" ? std::min(iters, hyper_iters) : iters, reps, grid));
    if (root) std::fprintf(stderr, "  %s done\n", name.c_str());
  }

  if (!baseline_path.empty()) {
    std::ifstream in(baseline_path);
    if (!in) throw dnmf::Error("bench_mpi: cannot read the baseline " + baseline_path);
    const nlohmann::json base = nlohmann::json::parse(in);
    for (Row& r : rows)
      for (const auto& b : base["rows"])
        if (b["workload"] == r.workload && b["processes"] == 1)
          r.efficiency = b["seconds_per_iteration"].get<double>() / (r.processes * r.seconds_per_iteration);
  }
  if (!root) return 0;

  std::printf("\nprocesses=%d  threads/rank=%d  k=%d  MU, %d iterations, best of %d\n", world.size(), threads,
              static_cast<int>(k), iters, reps);
  if (world.size() > 1)
    std::printf("communicator: latency %.2f us (8-byte allreduce), bandwidth %.2f GB/s per rank (allgather)\n",
                net.latency_s * 1e6, net.bandwidth_Bps / 1e9);
  std::printf("%-26s %5s %5s %9s %9s %9s %10s %9s %12s %12s %6s %5s\n", "workload", "grid", "fused", "s/iter",
              "best it", "products", "GFLOP/s/rk", "comm", "bytes/rank", "model", "ratio", "eff");
  nlohmann::json out = {{"processes", world.size()},
                        {"threads_per_rank", threads},
                        {"k", k},
                        {"iterations", iters},
                        {"reps", reps},
                        {"latency_s", net.latency_s},
                        {"bandwidth_bytes_per_s", net.bandwidth_Bps},
                        {"rows", nlohmann::json::array()}};
  for (const Row& r : rows) {
    const double ratio = r.bytes_model > 0 ? r.steady_bytes_mean / r.bytes_model : 1.0;
    std::printf("%-26s %5s %5s %9.5f %9.5f %9.5f %10.2f %9.5f %12.0f %12.0f %6.3f %5s\n", r.workload.c_str(),
                r.grid.c_str(), r.fused ? "yes" : "no", r.seconds_per_iteration, r.best_iteration_seconds,
                r.products_seconds, r.product_gflops_min, r.comm_replay_seconds, r.steady_bytes_mean, r.bytes_model,
                ratio,
                r.efficiency > 0 ? (std::to_string(static_cast<int>(100 * r.efficiency + 0.5)) + "%").c_str() : "-");
    out["rows"].push_back(
        {{"workload", r.workload},
         {"m", r.m},
         {"n", r.n},
         {"nnz", r.nnz},
         {"k", r.k},
         {"processes", r.processes},
         {"grid", r.grid},
         {"fused", r.fused},
         {"iterations", r.iterations},
         {"seconds_per_iteration", r.seconds_per_iteration},
         {"best_iteration_seconds", r.best_iteration_seconds},
         {"products_seconds", r.products_seconds},
         {"product_gflops_per_rank_min", r.product_gflops_min},
         {"local_nnz_max", r.local_nnz_max},
         {"comm_replay_seconds", r.comm_replay_seconds},
         {"empty_products_seconds", r.empty_products_seconds},
         {"piece_seconds", r.piece_seconds},
         {"block_rows_max", r.block_rows},
         {"block_cols_max", r.block_cols},
         {"piece_rows_max", r.piece_rows},
         {"piece_cols_max", r.piece_cols},
         {"bytes_per_rank_per_iteration_mean", r.bytes_mean},
         {"bytes_per_rank_per_iteration_max", r.bytes_max},
         {"steady_bytes_per_rank_per_iteration_mean", r.steady_bytes_mean},
         {"steady_bytes_per_rank_per_iteration_max", r.steady_bytes_max},
         {"bytes_model", r.bytes_model},
         {"bytes_ratio_mean_to_model", ratio},
         {"bytes_ratio_max_to_model", r.bytes_model > 0 ? r.steady_bytes_max / r.bytes_model : 1.0},
         {"amortised_bytes_ratio_mean_to_model", r.bytes_model > 0 ? r.bytes_mean / r.bytes_model : 1.0},
         {"parallel_efficiency", r.efficiency > 0 ? nlohmann::json(r.efficiency) : nlohmann::json()},
         {"rel_error", r.rel_error}});
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(2) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_mpi: error: %s\n", e.what());
    // Under mpirun one failing rank must not leave the others waiting in a collective.
    dnmf::dist::world().abort(1);
  }
}
