#include "solvers/alternating.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "solvers/breakdown_hint.hpp"
#include "solvers/exchange.hpp"
#include "solvers/extrapolation.hpp"
#include "solvers/thread_governor.hpp"
#include "solvers/update_rule.hpp"

namespace dnmf::solvers {
namespace {

using backend::CView;
using backend::Side;
using backend::View;

// A k x cols block in the backend's memory, released with it; or an alias of another block's storage (a
// factor piece that is its own gathered block on a grid direction of one rank).
template <class T>
class Block {
 public:
  Block(backend::Kernels<T>& kernels, index_t rows, index_t cols)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(kernels.allocate(to_size(std::max<index_t>(rows * cols, 1)))) {}
  /// The caller's `host` storage itself (rows x cols, not owned) where the kernels compute in host memory and
  /// it has elements, so that nothing is uploaded or downloaded; else a buffer of the kernels' own.
  Block(backend::Kernels<T>& kernels, index_t rows, index_t cols, T* host)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(adopts(kernels, rows, cols, host) ? host : kernels.allocate(to_size(std::max<index_t>(rows * cols, 1)))),
        owns_(!adopts(kernels, rows, cols, host)) {}
  /// The same storage as `other` when `alias`, else a new block of other's shape.
  Block(Block& other, bool alias)
      : kernels_(other.kernels_),
        rows_(other.rows_),
        cols_(other.cols_),
        data_(alias ? other.data_ : kernels_.allocate(to_size(std::max<index_t>(rows_ * cols_, 1)))),
        owns_(!alias) {}
  Block(backend::Kernels<T>& kernels, index_t rows, index_t cols, Block& alias_of, bool alias)
      : kernels_(kernels),
        rows_(rows),
        cols_(cols),
        data_(alias ? alias_of.data_ : kernels.allocate(to_size(std::max<index_t>(rows * cols, 1)))),
        owns_(!alias) {}
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  ~Block() {
    if (owns_) kernels_.deallocate(data_);
  }
  [[nodiscard]] View<T> view() const { return {data_, rows_, cols_, std::max<index_t>(rows_, 1)}; }
  [[nodiscard]] CView<T> cview() const { return view(); }
  [[nodiscard]] T* data() const { return data_; }
  [[nodiscard]] std::size_t size() const { return to_size(rows_ * cols_); }
  void upload(const T* host) {
    if (host != data_) kernels_.copy_to_backend(host, data_, size());
  }
  void download(T* host) const {
    if (host != data_) kernels_.copy_to_host(data_, host, size());
  }
  /// Exchanges storage with an owning block of the same shape (a Gram matrix and its predecessor, say).
  friend void swap(Block& x, Block& y) noexcept { std::swap(x.data_, y.data_); }

 private:
  static bool adopts(const backend::Kernels<T>& kernels, index_t rows, index_t cols, const T* host) {
    return kernels.host_memory() && host != nullptr && rows * cols > 0;
  }

  backend::Kernels<T>& kernels_;
  index_t rows_, cols_;
  T* data_;
  bool owns_ = true;
};

// l1·Σx + ½·l2·||x||² of one factor; ||x||² is the trace of its (global) Gram matrix, Σx its global sum.
template <class T>
double penalty(backend::Kernels<T>& kernels, dist::Communicator& world, const Block<T>& x, const Block<T>& gram,
               double l1, double l2) {
  if (l1 == 0 && l2 == 0) return 0;
  const index_t k = gram.view().rows;
  std::vector<T> host_gram(to_size(k * k));
  gram.download(host_gram.data());
  double trace = 0;
  for (index_t l = 0; l < k; ++l) trace += static_cast<double>(host_gram[to_size(l + l * k)]);
  double sum = 0;
  if (l1 != 0) {
    Block<T> sums(kernels, k, 1);
    kernels.row_sums(x.cview(), sums.data());
    std::vector<T> host(to_size(k));
    sums.download(host.data());
    for (T v : host) sum += static_cast<double>(v);
    sum = world.sum(sum);
  }
  return l1 * sum + 0.5 * l2 * trace;
}

std::vector<std::size_t> piece_counts(const std::vector<index_t>& sizes, index_t k) {
  std::vector<std::size_t> counts;
  counts.reserve(sizes.size());
  for (index_t s : sizes) counts.push_back(to_size(s * k));
  return counts;
}

void allreduce_kl(dist::Communicator& world, backend::KlSums& sums) {
  double v[6] = {sums.a_log_a_over_m, sums.a_times_m,   sums.model_sum,
                 sums.model_entries,  sums.model_exact, sums.model_exact_entries};
  world.allreduce_sum(v, 6);
  sums.a_log_a_over_m = v[0];
  sums.a_times_m = v[1];
  sums.model_sum = v[2];
  sums.model_entries = v[3];
  sums.model_exact = v[4];
  sums.model_exact_entries = v[5];
}

void check_block_shape(index_t m_block, index_t n_block, const dist::Layout& layout) {
  if (m_block != layout.a_rows.size() || n_block != layout.a_cols.size())
    throw Error("internal: the local block is " + std::to_string(m_block) + "x" + std::to_string(n_block) +
                ", the layout says " + std::to_string(layout.a_rows.size()) + "x" +
                std::to_string(layout.a_cols.size()));
}

// What one iteration leaves for the error and objective of the state it reports.
struct StepSums {
  double cross = 0;         // <Wt, H·Aᵀ> at the state the error is reported for (global)
  backend::KlSums kl_sums;  // KL: ratio sums at (W_{t-1}, H_t), global
  // The cross term's change over the iteration, c(W_t, H_t) - c(W_{t-1}, H_{t-1}), summed half by half as
  // <P, H_t> - <P, H_{t-1}> + <Qt, W_t> - <Qt, W_{t-1}> with each half's own numerator: its rounding cancels
  // (float32's tol test; see stop_change()). NaN where a half's numerator was not formed at the state it
  // starts from (an extrapolated H half without P) or KL.
  double cross_change = std::numeric_limits<double>::quiet_NaN();
};

struct Figures {
  double squared_error = 0;
  double objective = 0;
  double rel_error = 0;
  double decrease = std::numeric_limits<double>::quiet_NaN();  // f_{t-1} - f_t from the cross term's change
};

// The iteration's state on this rank: factor pieces, their gathered blocks, the products P = Wt·A and
// Qt = H·Aᵀ, the global Gram matrices and (KL) row sums. Each method is one step of DESIGN §3-4.
template <class T>
class Iteration {
 public:
  /// `w_split`: the ranks among which W's block row is split (the grid row); `h_split`: H's (the grid column).
  Iteration(backend::Kernels<T>& kernels, backend::Operand<T>& a, dist::Communicator& world,
            dist::Communicator& w_split, dist::Communicator& h_split, const dist::Layout& layout,
            const FactorOptions& options, const backend::MatrixStats& stats, Factors<T>& factors)
      : factors_(factors),
        kernels_(kernels),
        a_(a),
        options_(options),
        stats_(stats),
        entries_(static_cast<double>(layout.m) * static_cast<double>(layout.n)),
        k_(options.rank),
        kl_(options.algorithm == Algorithm::kl),
        extrapolate_(options.extrapolate),
        rule_h_(update_rule(options.algorithm, guard(options, stats, layout), options.penalties.l1_h,
                            options.penalties.l2_h)),
        rule_w_(update_rule(options.algorithm, guard(options, stats, layout), options.penalties.l1_w,
                            options.penalties.l2_w)),
        world_(world),
        row_comm_(w_split),
        col_comm_(h_split),
        w_whole_(row_comm_.size() == 1),
        h_whole_(col_comm_.size() == 1),
        w_counts_(piece_counts(layout.w_piece_sizes, k_)),
        h_counts_(piece_counts(layout.h_piece_sizes, k_)),
        exchange_(kernels),
        wt_(kernels, k_, layout.w_rows.size(), factors.wt.data()),  // run() iterates on them in place
        h_(kernels, k_, layout.h_cols.size(), factors.h.data()),
        wt_full_(kernels, k_, a.rows(), wt_, w_whole_),
        h_full_(kernels, k_, a.cols(), h_, h_whole_),
        p_full_(kernels, k_, a.cols()),
        qt_full_(kernels, k_, a.rows()),
        p_(kernels, k_, layout.h_cols.size(), p_full_, h_whole_),
        qt_(kernels, k_, layout.w_rows.size(), qt_full_, w_whole_),
        gw_(kernels, k_, k_),
        gh_(kernels, k_, k_),
        gw_prev_(kernels, k_, k_),
        w_sums_(kernels, k_, 1),
        w_sums_prev_(kernels, k_, 1),
        h_sums_(kernels, k_, 1) {}

  /// The iterations from the factors given to the constructor, left in them.
  FactorResult<T> run() {
    Factors<T>& factors = factors_;
    upload(factors);
    choose_pass();
    if (extrapolate_) allocate_extrapolation();
    // The W-side pass leaves P = Wt·A for the next H half; the first one comes from a plain product. KL's H
    // half reads the gathered H from the start.
    if ((fused_ && pass_side_ == Side::W) || kl_) gather_h();
    if (fused_ && pass_side_ == Side::W) form_p(wt_full_.cview());
    const auto start = std::chrono::steady_clock::now();
    double previous_objective = std::numeric_limits<double>::quiet_NaN();
    ThreadGovernor governor(kernels_.concurrency(), kernels_.name() == "cpu", iteration_flops());
    for (int it = 1; it <= options_.max_iterations; ++it) {
      governor.begin(it);
      const StepSums sums =
          (!fused_ || pass_side_ == Side::H) ? h_then_w() : w_pass_then_h(it == options_.max_iterations);
      const double gram_before = previous_gram_, penalties_before = previous_penalties_;
      Figures f = measure(sums);
      if (kl_) refresh_w_sums();
      const bool reverted = extrapolate_ && extrapolated_now_ && reverts_step(f);
      if (reverted) {
        revert_step();
        previous_gram_ = gram_before;
        previous_penalties_ = penalties_before;
        f = kept_;
        f.decrease = 0;  // the pair of the iteration before: no change
        schedule_.record_reverted();
      } else if (extrapolate_) {
        next_step_size(f);
        kept_ = f;
      }
      governor.end(it);
      record(it, f, start);
      // A reverted iteration repeats the kept pair's figures: no change, which is not convergence (with tol > 0
      // the run had stopped there, "converged", short of the plain iteration's error).
      if (should_stop(it, f, previous_objective, !reverted)) {
        result_.converged = true;
        break;
      }
      previous_objective = f.objective;
    }
    result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    result_.extrapolation_restarts = schedule_.restarts();
    wt_.download(factors.wt.data());
    h_.download(factors.h.data());
    return std::move(result_);
  }

 private:
  static double guard(const FactorOptions& options, const backend::MatrixStats& stats, const dist::Layout& layout) {
    return division_guard(options.algorithm, std::is_same_v<T, float>, stats.squared_norm,
                          static_cast<double>(layout.m) * static_cast<double>(layout.n));
  }

  void upload(const Factors<T>& factors) {
    wt_.upload(factors.wt.data());
    h_.upload(factors.h.data());
    kernels_.gram(wt_.cview(), gw_.view(), T(0));
    exchange_.allreduce(world_, gw_.data(), kk());
    kernels_.gram(h_.cview(), gh_.view(), T(0));
    exchange_.allreduce(world_, gh_.data(), kk());
    if (kl_) {
      kernels_.row_sums(wt_.cview(), w_sums_.data());
      exchange_.allreduce(world_, w_sums_.data(), ku());
      exact_row_sums(wt_, w_exact_);
    }
  }

  // The single pass needs no reduction between a tile's numerator and its update: the H side when the grid
  // has one row (pr = 1), the W side when it has one column (pc = 1).
  //
  // Every rank must take the same path, since the paths call different collectives, but each operand answers
  // for its own block: a rank whose CSR block holds no entry keeps no transpose and could fuse where the others
  // cannot (the ranks then waited on each other's collectives forever). So a path is taken only where every
  // rank's operand can take it, and a side is preferred only where every rank prefers it.
  void choose_pass() {
    double answers[] = {a_.fused_side() == Side::W ? 0.0 : 1.0, w_whole_ && a_.can_fuse(Side::W) ? 0.0 : 1.0,
                        h_whole_ && a_.can_fuse(Side::H) ? 0.0 : 1.0, a_.can_update_pass(Side::W) ? 0.0 : 1.0,
                        a_.can_update_pass(Side::H) ? 0.0 : 1.0};
    world_.allreduce_sum(answers, std::size(answers));  // per question, the ranks that answer no
    const auto everywhere = [&](int question) { return answers[question] == 0.0; };
    fused_ = options_.fused;
    pass_side_ = everywhere(0) ? Side::W : Side::H;
    auto fusable = [&](Side s) { return everywhere(s == Side::W ? 1 : 2); };
    if (fused_ && !fusable(pass_side_)) {
      if (fusable(backend::other(pass_side_))) {
        pass_side_ = backend::other(pass_side_);
      } else {
        fused_ = false;
      }
    }
    // Unfused, a half whose numerator needs no reduction over the grid takes the operand's update pass where it
    // has one (not KL, whose figures come from the products' ratio sums).
    update_pass_h_ = !fused_ && !kl_ && h_whole_ && everywhere(4);
    update_pass_w_ = !fused_ && !kl_ && w_whole_ && everywhere(3);
    result_.fused = fused_;
    result_.backend = kernels_.name();
    result_.threads = kernels_.concurrency();
  }

  // The products with A and the k² work per row and column of one iteration on this rank.
  [[nodiscard]] double iteration_flops() const {
    double entries = static_cast<double>(a_.rows()) * static_cast<double>(a_.cols());
    if (const MatrixRef<T>* r = a_.resident(); r != nullptr && a_.sparse())
      entries = static_cast<double>(std::get<CsrView<T>>(*r).nnz());
    const auto k = static_cast<double>(k_);
    return 4.0 * entries * k + 2.0 * static_cast<double>(a_.rows() + a_.cols()) * k * k;
  }

  // Unfused, or fused on the H side: H half, then W half.
  StepSums h_then_w() {
    StepSums sums;
    // The H half reads W, or Ŵ when extrapolating (gathered like W).
    const bool hat = extrapolate_w();
    if (hat) {
      gather_w(*w_hat_, *w_hat_full_);
    } else {
      gather_w(wt_, wt_full_);
    }
    const CView<T> w_read = hat ? w_hat_full_->cview() : wt_full_.cview();
    const CView<T> gw_read = hat ? g_hat_->cview() : gw_.cview();
    // An H half from Ŵ has no numerator at W_{t-1}: no cross change this iteration.
    double h_change = std::numeric_limits<double>::quiet_NaN();
    if (fused_) {
      const auto pass = fused_h_pass(w_read, gw_read);
      sums.kl_sums = pass.kl_accum;
      if (!hat) h_change = pass_change(pass);
    } else if (update_pass_h_) {
      const auto pass = a_.update_pass(Side::H, rule_h_, h_.view(), w_read, gw_read, w_sums_.data(), gh_.view());
      count_cap_hits(pass.nnls_cap_hits);
      exchange_.allreduce(world_, gh_.data(), kk());
      gather_h();
      if (!hat) h_change = pass_change(pass);
    } else {
      form_p(w_read);
      const double before = track_change() && !hat ? world_.sum(kernels_.dot(h_.cview(), p_.cview())) : 0.0;
      update_h(p_.cview(), gw_read);
      gather_h();
      if (track_change() && !hat) h_change = world_.sum(kernels_.dot(h_.cview(), p_.cview())) - before;
    }
    if (update_pass_w_) {
      swap(gw_, gw_prev_);
      const auto pass =
          a_.update_pass(Side::W, rule_w_, wt_.view(), h_full_.cview(), gh_.cview(), h_sums_.data(), gw_.view());
      count_cap_hits(pass.nnls_cap_hits);
      exchange_.allreduce(world_, gw_.data(), kk());
      sums.cross = world_.sum(pass.cross);
      sums.cross_change = h_change + pass_change(pass);
      return sums;
    }
    if (!fused_) sums.kl_sums = form_qt();
    exchange_.reduce_scatter(row_comm_, qt_full_.data(), qt_.data(), w_counts_);
    if (kl_) {
      allreduce_kl(world_, sums.kl_sums);
      sum_h_rows();
    }
    update_w(sums, h_change);
    return sums;
  }

  // W's update from its reduced numerator Qt, its Gram matrix and (not KL) the cross term of the error;
  // `h_change`: the H half's cross change, to which the W half's is added.
  void update_w(StepSums& sums, double h_change) {
    const double before = track_change() ? world_.sum(kernels_.dot(wt_.cview(), qt_.cview())) : 0.0;
    count_cap_hits(kernels_.update(rule_w_, wt_.view(), qt_.cview(), gh_.cview(), h_sums_.data()));
    swap(gw_, gw_prev_);
    kernels_.gram(wt_.cview(), gw_.view(), T(0));
    exchange_.allreduce(world_, gw_.data(), kk());
    if (!kl_) sums.cross = world_.sum(kernels_.dot(wt_.cview(), qt_.cview()));
    if (track_change()) sums.cross_change = h_change + (sums.cross - before);
  }

  // Whether the iteration tracks the cross term's change half by half: where the tol test or the extrapolation's
  // step reads it (float32, Frobenius; stop_change() says why).
  [[nodiscard]] bool track_change() const {
    return std::is_same_v<T, float> && !kl_ && (options_.tol > 0 || extrapolate_);
  }

  // A pass's cross change, world-summed (NaN where its backend did not form the sum before the update).
  double pass_change(const backend::FusedSums& pass) {
    if (!track_change()) return std::numeric_limits<double>::quiet_NaN();
    double both[2] = {pass.cross, pass.cross_before};
    world_.allreduce_sum(both, 2);
    return both[0] - both[1];
  }

  // Fused on the W side: H half from the P the previous pass left, then one pass that updates W and forms
  // the next P. The last iteration (`last`) needs no next P: its W half forms W's numerator alone, one product
  // over A where the pass computes two (a fit of one iteration had cost three products instead of two).
  StepSums w_pass_then_h(bool last) {
    // P = W_{t-1}ᵀA itself is at hand even when the step reads P̂: the H half's cross change is <P, H_t - H_{t-1}>.
    const double before = track_change() ? world_.sum(kernels_.dot(h_.cview(), p_.cview())) : 0.0;
    if (extrapolate_w()) {
      update_h(p_hat_->cview(), g_hat_->cview());
    } else {
      update_h(p_.cview(), gw_.cview());
    }
    const double h_change = track_change() ? world_.sum(kernels_.dot(h_.cview(), p_.cview())) - before
                                           : std::numeric_limits<double>::quiet_NaN();
    if (kl_) sum_h_rows();
    gather_h();
    if (last && !kl_) {  // KL's pass also forms the ratio sums its figures come from: it keeps the pass
      StepSums sums;
      form_qt();
      exchange_.reduce_scatter(row_comm_, qt_full_.data(), qt_.data(), w_counts_);
      update_w(sums, h_change);
      return sums;
    }
    swap(gw_, gw_prev_);
    auto pass = a_.fused_pass(Side::W, rule_w_, wt_.view(), h_full_.cview(), gh_.cview(), h_sums_.data(),
                              p_full_.view(), gw_.view());
    exchange_.allreduce(world_, gw_.data(), kk());
    exchange_.reduce_scatter(col_comm_, p_full_.data(), p_.data(), h_counts_);
    count_cap_hits(pass.nnls_cap_hits);
    StepSums sums;
    sums.cross = world_.sum(pass.cross);
    sums.cross_change = h_change + pass_change(pass);
    sums.kl_sums = pass.kl_numer;
    if (kl_) allreduce_kl(world_, sums.kl_sums);
    return sums;
  }

  backend::FusedSums fused_h_pass(CView<T> w_read, CView<T> gw_read) {
    auto pass =
        a_.fused_pass(Side::H, rule_h_, h_.view(), w_read, gw_read, w_sums_.data(), qt_full_.view(), gh_.view());
    count_cap_hits(pass.nnls_cap_hits);
    exchange_.allreduce(world_, gh_.data(), kk());
    return pass;
  }

  // P = Wt·A (KL: the ratio product), summed over the grid column onto this rank's columns.
  void form_p(CView<T> w_read) {
    if (kl_) {
      (void)a_.kl_multiply(Side::H, w_read, h_full_.cview(), p_full_.view(), T(0));
    } else {
      a_.multiply(Side::H, w_read, p_full_.view(), T(0));
    }
    exchange_.reduce_scatter(col_comm_, p_full_.data(), p_.data(), h_counts_);
  }

  // Qt_full = H·Aᵀ (KL: the ratio product, whose sums it returns); reduced by the caller.
  backend::KlSums form_qt() {
    if (kl_) return a_.kl_multiply(Side::W, h_full_.cview(), wt_full_.cview(), qt_full_.view(), T(0));
    a_.multiply(Side::W, h_full_.cview(), qt_full_.view(), T(0));
    return {};
  }

  void update_h(CView<T> numer, CView<T> gw_read) {
    count_cap_hits(kernels_.update(rule_h_, h_.view(), numer, gw_read, w_sums_.data()));
    kernels_.gram(h_.cview(), gh_.view(), T(0));
    exchange_.allreduce(world_, gh_.data(), kk());
  }

  void sum_h_rows() {
    kernels_.row_sums(h_.cview(), h_sums_.data());
    exchange_.allreduce(world_, h_sums_.data(), ku());
    exact_row_sums(h_, h_exact_);
  }

  // KL keeps last iteration's W sums for the figures of the state its ratio was formed at.
  void refresh_w_sums() {
    swap(w_sums_, w_sums_prev_);
    kernels_.row_sums(wt_.cview(), w_sums_.data());
    exchange_.allreduce(world_, w_sums_.data(), ku());
    exact_row_sums(wt_, w_exact_);
  }

  // The row sums of a factor piece in double, world-summed as the backend's are (KlSums::model_exact says what
  // for): float32 KL on a sparse A with host factors (exact_model_), whose sparse passes form model_exact.
  void exact_row_sums(const Block<T>& x, std::vector<double>& out) {
    if (!exact_model_) return;
    out.assign(ku(), 0.0);
    const CView<T> v = x.cview();
    for (index_t j = 0; j < v.cols; ++j)
      for (index_t l = 0; l < k_; ++l) out[to_size(l)] += static_cast<double>(v.data[l + j * v.ld]);
    world_.allreduce_sum(out.data(), ku());
  }

  // Extrapolation's buffers: Ŵ and W_prev beside W's piece, Ĝ = ŴᵀŴ, and, where a W-side pass forms P, P̂ and
  // P_prev (P is linear in W, so P̂ = P + β(P − P_prev) costs no product); else Ŵ's gathered block.
  void allocate_extrapolation() {
    const index_t w_cols = wt_.view().cols;
    w_hat_ = std::make_unique<Block<T>>(kernels_, k_, w_cols);
    w_prev_ = std::make_unique<Block<T>>(kernels_, k_, w_cols);
    h_kept_ = std::make_unique<Block<T>>(kernels_, k_, h_.view().cols);
    g_hat_ = std::make_unique<Block<T>>(kernels_, k_, k_);
    kernels_.fill(w_prev_->view(), T(0));
    if (fused_ && pass_side_ == Side::W) {
      p_hat_ = std::make_unique<Block<T>>(kernels_, k_, p_.view().cols);
      p_prev_ = std::make_unique<Block<T>>(kernels_, k_, p_.view().cols);
      kernels_.fill(p_prev_->view(), T(0));
    } else {
      w_hat_full_ = std::make_unique<Block<T>>(kernels_, k_, a_.rows(), *w_hat_, w_whole_);
    }
  }

  // Ŵ = W + β(W − W_prev) (and P̂ likewise) for this iteration's H half; W_prev (P_prev) = W (P). The first
  // iteration only records W: it returns false, and the H half reads W itself.
  bool extrapolate_w() {
    if (!extrapolate_) return false;
    const bool step = stepped_;
    const T beta = step ? static_cast<T>(schedule_.beta()) : T(0);
    kernels_.extrapolate(w_hat_->view(), wt_.cview(), w_prev_->view(), beta);
    if (p_hat_) kernels_.extrapolate(p_hat_->view(), p_.cview(), p_prev_->view(), beta);
    stepped_ = true;
    extrapolated_now_ = step;
    if (!step) return false;
    kernels_.copy(h_.cview(), h_kept_->view());  // with W_prev, the pair a reverted step goes back to
    kernels_.gram(w_hat_->cview(), g_hat_->view(), T(0));
    exchange_.allreduce(world_, g_hat_->data(), kk());
    return true;
  }

  // Whether an extrapolated step went so wrong that its pair is dropped. The schedule only shortens later steps
  // after a rise and keeps the pair, which cannot recover from a step that zeroed a factor: W·H = 0 is a fixed
  // point of the iteration (a float32 BPP fit whose identity read 0, so that β grew to 1 unchecked, ended at
  // W = H = 0 with exit 0; a helper session's finding). Dropped: a step that at least doubled a relative error
  // to 0.1 or more, or left nothing of W·H.
  // A step whose figures are not finite (float32 Grams overflowed) is dropped too: the plain step after it
  // reports the breakdown if there is one. Rank 0's verdict is every rank's: the revert calls collectives.
  bool reverts_step(const Figures& f) {
    bool revert = !std::isfinite(f.rel_error) || !std::isfinite(f.objective) ||
                  (f.rel_error > kept_.rel_error &&
                   ((f.rel_error >= 2 * kept_.rel_error && f.rel_error >= 0.1) || f.rel_error >= 1 - 1e-6));
    if (world_.size() > 1) {
      double verdict = revert ? 1.0 : 0.0;
      world_.broadcast(&verdict, 1, dist::Scalar::f64, 0);
      revert = verdict > 0;
    }
    return revert;
  }

  // Back to the pair before this iteration: W_t (in W_prev since extrapolate_w), H_t (kept there), and on the
  // W-pass path P_t (in P_prev); Grams and the gathered H from them. Ŵ then equals W next time (W_prev = W).
  void revert_step() {
    kernels_.copy(w_prev_->cview(), wt_.view());
    kernels_.copy(h_kept_->cview(), h_.view());
    if (p_prev_) kernels_.copy(p_prev_->cview(), p_.view());
    kernels_.gram(wt_.cview(), gw_.view(), T(0));
    exchange_.allreduce(world_, gw_.data(), kk());
    kernels_.gram(h_.cview(), gh_.view(), T(0));
    exchange_.allreduce(world_, gh_.data(), kk());
    gather_h();
    ++result_.extrapolation_reverts;
  }

  // β follows the objective; rank 0's β is every rank's, so that all take the same steps.
  void next_step_size(const Figures& f) {
    schedule_.record(f.objective, track_change() ? f.decrease : std::numeric_limits<double>::quiet_NaN());
    if (world_.size() > 1) {
      double beta = schedule_.beta();
      world_.broadcast(&beta, 1, dist::Scalar::f64, 0);
      schedule_.set_beta(beta);
    }
  }

  // ||A - WH||² from k x k products (DESIGN §3); KL reports it at the state its ratio was formed.
  Figures measure(const StepSums& sums) {
    Figures f;
    if (kl_) {
      f.squared_error = stats_.squared_norm - 2 * sums.kl_sums.a_times_m + kernels_.dot(gw_prev_.cview(), gh_.cview());
      const backend::KlSums& kl = sums.kl_sums;
      double model_sum = 0;
      if (kl.model_entries == entries_) {
        model_sum = kl.model_sum;
      } else if (exact_model_ && kl.model_exact_entries > 0 && kl.model_exact_entries == kl.model_entries) {
        // Sparse float32: the unstored cells' m from double sums, the stored ones' as the log term saw them.
        double all = 0;
        for (index_t l = 0; l < k_; ++l) all += w_exact_[to_size(l)] * h_exact_[to_size(l)];
        model_sum = all - kl.model_exact + kl.model_sum;
      } else {
        model_sum = kernels_.dot(w_sums_.cview(), h_sums_.cview());
      }
      f.objective = sums.kl_sums.a_log_a_over_m - stats_.sum + model_sum + kl_penalty();
    } else {
      const auto& pen = options_.penalties;
      const GramTerm g = gram_term();
      const double penalties = penalty(kernels_, world_, wt_, gw_, pen.l1_w, pen.l2_w) +
                               penalty(kernels_, world_, h_, gh_, pen.l1_h, pen.l2_h);
      f.squared_error = stats_.squared_norm - 2 * sums.cross + g.value;
      f.objective = 0.5 * std::max(f.squared_error, 0.0) + penalties;
      // f_{t-1} - f_t = Δc - ½Δg - Δpenalties, each change formed where its rounding cancels (NaN propagates).
      const double gram_change = g.in_double ? g.value - previous_gram_ : std::numeric_limits<double>::quiet_NaN();
      f.decrease = sums.cross_change - 0.5 * gram_change - (penalties - previous_penalties_);
      previous_gram_ = g.value;
      previous_penalties_ = penalties;
    }
    f.rel_error = std::sqrt(std::max(f.squared_error, 0.0) / stats_.squared_norm);
    return f;
  }

  // The penalty terms at the pair KL's figures are of (its ratio's W, the previous one, and the current H), from the
  // same world-summed row sums and Grams as the figures: the updates minimise D(A‖WH) + penalties, so the figure
  // the tol test reads includes them (it had left them out).
  double kl_penalty() {
    const Penalties& p = options_.penalties;
    if (!p.any()) return 0;
    const auto host = [&](const Block<T>& b) {
      std::vector<T> v(b.size());
      b.download(v.data());
      return v;
    };
    const std::vector<T> ws = host(w_sums_), hs = host(h_sums_), gw = host(gw_prev_), gh = host(gh_);
    double w1 = 0, h1 = 0, w2 = 0, h2 = 0;
    for (index_t l = 0; l < k_; ++l) {
      w1 += static_cast<double>(ws[to_size(l)]);
      h1 += static_cast<double>(hs[to_size(l)]);
      w2 += static_cast<double>(gw[to_size(l + l * k_)]);
      h2 += static_cast<double>(gh[to_size(l + l * k_)]);
    }
    return p.l1_w * w1 + 0.5 * p.l2_w * w2 + p.l1_h * h1 + 0.5 * p.l2_h * h2;
  }

  // <WᵀW, HHᵀ>, the identity's last term. In float32, where a figure steers the iteration (the tol test, the
  // extrapolation's step), from Grams formed in double: the float Grams put noise of about 1e-7·‖A‖² into the
  // squared error, as large as MU's change per iteration near 1% error, so the tol test stopped at random (f32
  // MU, 2000x1500 rank 8 + 1% noise, tol 1e-4: 459 iterations against f64's 735; 656 with these Grams).
  struct GramTerm {
    double value = 0;
    bool in_double = false;  // from Grams formed in double
  };
  GramTerm gram_term() {
    if (std::is_same_v<T, float> && (options_.tol > 0 || extrapolate_)) {
      std::vector<double> g(2 * kk());
      if (kernels_.gram_f64(wt_.cview(), g.data()) && kernels_.gram_f64(h_.cview(), g.data() + kk())) {
        world_.allreduce_sum(g.data(), g.size());
        double sum = 0;
        for (std::size_t q = 0; q < kk(); ++q) sum += g[q] * g[kk() + q];
        return {sum, true};
      }
    }
    return {kernels_.dot(gw_.cview(), gh_.cview()), false};
  }

  void record(int it, const Figures& f, std::chrono::steady_clock::time_point start) {
    if (!std::isfinite(f.objective) || !std::isfinite(f.rel_error))
      throw NumericalError("numerical breakdown at iteration " + std::to_string(it) + " (" +
                           to_string(options_.algorithm) + "): the objective is not finite" +
                           breakdown_hint<T>(options_.penalties));
    result_.rel_error_history.push_back(f.rel_error);
    result_.objective_history.push_back(f.objective);
    result_.iterations = it;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options_.progress) options_.progress({it, options_.max_iterations, f.rel_error, f.objective, seconds});
  }

  // Every rank must leave the loop together: rank 0's convergence test is the job's, and a cancel on any rank
  // (a signal reaches the process it is sent to) stops all. Only rank 0 was asked before: a SIGTERM sent to
  // another rank was swallowed and the job committed its results with exit 0.
  bool should_stop(int it, const Figures& f, double previous_objective, bool may_converge = true) {
    // An objective clamped at 0 (the identity's rounding) is not taken as convergence: in float32 the identity
    // clamps near a relative error of 1e-4, far above what the fit reaches, and taking it stopped fits 35-55x short
    // of their --tol (a review's finding). An exact fit therefore runs to --iters (docs/algorithms.md, Stopping).
    // The change of an extrapolated iteration is the objectives' difference (its H half has no tracked change): two
    // clamped zeros made it 0 <= tol·0, and float32 fits stopped 2-10x above the plain iteration's error.
    bool stop = may_converge && it > 1 && options_.tol > 0 && previous_objective != 0 &&
                std::abs(stop_change(f, previous_objective)) <= options_.tol * std::abs(previous_objective);
    bool cancel = options_.cancel && options_.cancel();
    if (world_.size() > 1) {
      double shared[2] = {world_.rank() == 0 && stop ? 1.0 : 0.0, cancel ? 1.0 : 0.0};
      world_.allreduce_sum(shared, 2);
      stop = shared[0] > 0;
      cancel = shared[1] > 0;
    }
    if (cancel) throw Cancelled("cancelled at iteration " + std::to_string(it));
    return stop;
  }

  // The objective's change the tol test reads. In float32 the difference of two objectives carries the cross
  // term's rounding: P = WᵀA and Qt = H·Aᵀ are float sums whose error puts noise of about 1e-8·‖A‖² into each
  // objective (docs/algorithms.md, "Stopping"), as large as the change per iteration below about 1% error, so
  // the test stopped at random (MU, 500x400 rank 8 + 0.1% noise: 808 iterations at 3.3x float64's error).
  // Each half's <numerator, X> before and after its update shares the numerator's rounding, which cancels in
  // their difference; with the Grams in double the change is then exact to float64's rounding. float64's
  // objectives carry noise of ~1e-16·‖A‖², no more than those sums: it keeps the plain difference.
  [[nodiscard]] double stop_change(const Figures& f, double previous_objective) const {
    if (track_change() && std::isfinite(f.decrease)) return f.decrease;
    return previous_objective - f.objective;
  }

  void gather_w(const Block<T>& piece, const Block<T>& full) {
    exchange_.allgather(row_comm_, piece.data(), full.data(), w_counts_);
  }
  void gather_h() { exchange_.allgather(col_comm_, h_.data(), h_full_.data(), h_counts_); }
  void count_cap_hits(std::int64_t local) { result_.nnls_cap_hits += world_.sum<std::int64_t>(local); }
  [[nodiscard]] std::size_t kk() const { return to_size(k_ * k_); }
  [[nodiscard]] std::size_t ku() const { return to_size(k_); }

  double previous_gram_ = std::numeric_limits<double>::quiet_NaN();  // the last figures' Gram term and penalties
  double previous_penalties_ = std::numeric_limits<double>::quiet_NaN();
  Factors<T>& factors_;  // the starting point, and the result (the CPU iterates in their storage)
  backend::Kernels<T>& kernels_;
  backend::Operand<T>& a_;
  const FactorOptions& options_;
  const backend::MatrixStats& stats_;
  const double entries_;  // m·n of the whole A (KlSums::model_entries covers it where a dense pass formed every m)
  const index_t k_;
  const bool kl_;
  const bool extrapolate_;
  const backend::UpdateRule rule_h_, rule_w_;
  dist::Communicator& world_;
  dist::Communicator& row_comm_;  // along which W's block row is split
  dist::Communicator& col_comm_;  // along which H's block column is split
  const bool w_whole_;            // this rank owns all of W's block row
  const bool h_whole_;            // ... all of H's block column
  const std::vector<std::size_t> w_counts_, h_counts_;
  Exchange<T> exchange_;
  Block<T> wt_, h_, wt_full_, h_full_, p_full_, qt_full_, p_, qt_, gw_, gh_, gw_prev_, w_sums_, w_sums_prev_, h_sums_;
  // float32 KL on a sparse A with host factors: the row sums again in double, following w_sums_ and h_sums_ (the
  // same on every rank: each holds a block of the same format on the same backend).
  const bool exact_model_ = kl_ && std::is_same_v<T, float> && kernels_.host_memory() && a_.sparse();
  std::vector<double> w_exact_, h_exact_;
  bool fused_ = false;
  bool update_pass_h_ = false;  // the H half in one pass (Operand::update_pass), and the W half likewise
  bool update_pass_w_ = false;
  Side pass_side_ = Side::H;
  // Extrapolation (FactorOptions::extrapolate): null unless on; p_hat_ / p_prev_ on the W-pass path only,
  // w_hat_full_ on the others.
  // h_kept_: H before an extrapolated step, for revert_step.
  std::unique_ptr<Block<T>> w_hat_, w_prev_, w_hat_full_, g_hat_, p_hat_, p_prev_, h_kept_;
  ExtrapolationSchedule schedule_;
  bool stepped_ = false;           // W_prev holds an earlier W
  bool extrapolated_now_ = false;  // this iteration's H half read Ŵ
  Figures kept_;                   // the figures of the last pair kept
  FactorResult<T> result_;
};

// The layout of the same rank for Aᵀ: rows and columns, W's rows and H's columns exchanged.
dist::Layout transposed(const dist::Layout& l) {
  return {l.n, l.m, l.a_cols, l.a_rows, l.h_cols, l.w_rows, l.h_piece_sizes, l.w_piece_sizes};
}

}  // namespace

template <class T>
FactorResult<T> iterate(backend::Kernels<T>& kernels, backend::Operand<T>& a, const dist::Grid& grid,
                        const dist::Layout& layout, const FactorOptions& options, const backend::MatrixStats& stats,
                        Factors<T>& factors, bool a_is_transpose) {
  check_block_shape(a.rows(), a.cols(), layout);
  // Aᵀ's iteration updates the caller's W first: that is the order asked for with w_first, or else the view.
  if (a_is_transpose == options.w_first) {
    Iteration<T> iteration(kernels, a, grid.world(), grid.row_comm(), grid.col_comm(), layout, options, stats, factors);
    return iteration.run();
  }
  // Through the transposed view every role swaps: Aᵀ's operand iterates as A (H first, as a column-major A
  // does), or A's as Aᵀ (the caller's W first). The same updates, in the order asked for.
  backend::TransposedOperand<T> a_view(a);
  FactorOptions caller_options = options;
  std::swap(caller_options.penalties.l1_w, caller_options.penalties.l1_h);
  std::swap(caller_options.penalties.l2_w, caller_options.penalties.l2_h);
  Factors<T> caller_factors{std::move(factors.h), std::move(factors.wt)};
  Iteration<T> iteration(kernels, a_view, grid.world(), grid.col_comm(), grid.row_comm(), transposed(layout),
                         caller_options, stats, caller_factors);
  FactorResult<T> result = iteration.run();
  factors = {std::move(caller_factors.h), std::move(caller_factors.wt)};
  return result;
}

template FactorResult<float> iterate<float>(backend::Kernels<float>&, backend::Operand<float>&, const dist::Grid&,
                                            const dist::Layout&, const FactorOptions&, const backend::MatrixStats&,
                                            Factors<float>&, bool);
template FactorResult<double> iterate<double>(backend::Kernels<double>&, backend::Operand<double>&, const dist::Grid&,
                                              const dist::Layout&, const FactorOptions&, const backend::MatrixStats&,
                                              Factors<double>&, bool);

}  // namespace dnmf::solvers
