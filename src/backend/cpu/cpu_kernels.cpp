#include "backend/cpu/cpu_kernels.hpp"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/blas.hpp"
#include "backend/cpu/serial_blas.hpp"
#include "backend/cpu/skinny_products.hpp"
#include "backend/tiles.hpp"
#include "backend/update_rules.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/entry_scan.hpp"
#include "util/ordered_sums.hpp"
#include "util/parallel_loops.hpp"

namespace dnmf::backend {
namespace {

using cpu::SerialBlas;

int as_int(index_t v) { return static_cast<int>(v); }
int ld_of(index_t ld) { return static_cast<int>(std::max<index_t>(ld, 1)); }

// Below this many element operations a loop runs on one thread: waking the team costs more than the work,
// and on a loaded machine waiting threads spin on cores the others need (small NMFk problems suffer most).
bool parallel_worth(index_t operations) { return operations >= 32768; }

// update()'s runs of columns: 64 for the column rules; for BPP at least 1024 (and at most max_fused_slots runs),
// so that columns with the same passive set (many in early iterations) still share its factorisation in a run.
constexpr index_t kRuleRunColumns = 64;
constexpr index_t kBppRunColumns = 1024;

template <class T>
void scale_columns(View<T> out, T beta, index_t first, index_t last) {
  for (index_t c = first; c < last; ++c) {
    T* col = out.data + c * out.ld;
    if (beta == T(0)) {
      std::fill(col, col + out.rows, T(0));
    } else if (beta != T(1)) {
      for (index_t l = 0; l < out.rows; ++l) col[l] *= beta;
    }
  }
}

// The CSR kernels hold a run of up to kHeld vectors of one k-column in registers over a whole row of A (32-byte
// GCC/Clang vector types: AVX2 registers on the x86-64-v3 baseline, plain code elsewhere). Summed through memory
// instead, each stored entry waits for the previous one's store of the same k values (~10 cycles a entry).
template <class T>
struct VecOf;
template <>
struct VecOf<double> {
  using type = double __attribute__((vector_size(32)));
};
template <>
struct VecOf<float> {
  using type = float __attribute__((vector_size(32)));
};
template <class T>
using Vec = typename VecOf<T>::type;
template <class T>
constexpr index_t kLanes = 32 / static_cast<index_t>(sizeof(T));
constexpr int kHeld = 4;

template <class T>
[[gnu::always_inline]] inline Vec<T> load_vec(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <class T>
[[gnu::always_inline]] inline void store_vec(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof v);
}

// Calls f(std::integral_constant<int, NV>{}) with NV = min(kHeld, vectors): the kernels' run length as a
// compile-time constant, so that their accumulators are registers.
template <class F>
void with_held(index_t vectors, F&& f) {
  switch (std::min<index_t>(kHeld, vectors)) {
    case 1:
      f(std::integral_constant<int, 1>{});
      break;
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    default:
      f(std::integral_constant<int, kHeld>{});
      break;
  }
}

// Row i's gather for the NV vectors of y's columns from l0: each lane summed over the row's entries in order,
// as the plain loop sums them.
template <class T, int NV>
void gather_run(const CsrView<T>& s, CView<T> y, index_t i, index_t l0, T beta, T* out) {
  Vec<T> acc[NV] = {};
  for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p) {
    const T v = s.values[p];
    const T* yc = y.data + static_cast<index_t>(s.indices[p]) * y.ld + l0;
    for (int r = 0; r < NV; ++r) acc[r] += v * load_vec(yc + r * kLanes<T>);
  }
  for (int r = 0; r < NV; ++r) {
    T* o = out + l0 + r * kLanes<T>;
    store_vec(o, beta == T(0) ? acc[r] : beta * load_vec(o) + acc[r]);
  }
}

// out[:, i] = beta·out[:, i] + Σ_p a_ip·Y[:, col_p] for rows [first, last): a gather, no write conflicts.
template <class T>
void csr_gather(const CsrView<T>& s, CView<T> y, View<T> out, T beta, index_t first, index_t last) {
  const index_t k = y.rows, full = k / kLanes<T>;
  for (index_t i = first; i < last; ++i) {
    T* oc = out.data + i * out.ld;
    for (index_t v = 0; v < full; v += kHeld) {
      const index_t l0 = v * kLanes<T>;
      with_held(full - v, [&](auto held) { gather_run<T, decltype(held)::value>(s, y, i, l0, beta, oc); });
    }
    for (index_t l = full * kLanes<T>; l < k; ++l) {  // the columns past the last full vector
      T acc = T(0);
      for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p)
        acc += s.values[p] * y.data[static_cast<index_t>(s.indices[p]) * y.ld + l];
      oc[l] = beta == T(0) ? acc : beta * oc[l] + acc;
    }
  }
}

// Row i's scatter for the NV vectors of Y[:, i] from l0, held in registers over the row's entries.
template <class T, int NV>
void scatter_run(const CsrView<T>& s, const T* yc, index_t i, index_t l0, T* out, index_t ldo) {
  Vec<T> yv[NV];
  for (int r = 0; r < NV; ++r) yv[r] = load_vec(yc + l0 + r * kLanes<T>);
  for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p) {
    const T v = s.values[p];
    T* oc = out + static_cast<index_t>(s.indices[p]) * ldo + l0;
    for (int r = 0; r < NV; ++r) store_vec(oc + r * kLanes<T>, load_vec(oc + r * kLanes<T>) + v * yv[r]);
  }
}

// out[:, col_p] += a_ip·Y[:, i] for rows [first, last): a scatter, so each thread owns its `out`.
template <class T>
void csr_scatter(const CsrView<T>& s, CView<T> y, T* out, index_t ldo, index_t first, index_t last) {
  const index_t k = y.rows, full = k / kLanes<T>;
  for (index_t i = first; i < last; ++i) {
    const T* yc = y.data + i * y.ld;
    for (index_t v = 0; v < full; v += kHeld) {
      const index_t l0 = v * kLanes<T>;
      with_held(full - v, [&](auto held) { scatter_run<T, decltype(held)::value>(s, yc, i, l0, out, ldo); });
    }
    for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p) {
      const T v = s.values[p];
      T* oc = out + static_cast<index_t>(s.indices[p]) * ldo;
      for (index_t l = full * kLanes<T>; l < k; ++l) oc[l] += v * yc[l];
    }
  }
}

// KL on CSR rows [first, last): forms r = a / (Wt[:, i]·H[:, j]) at the stored entries and either gathers
// r·H[:, j] into out[:, i] (Side::W) or scatters r·Wt[:, i] into out[:, j] (Side::H, private `out`).
template <class T>
KlSums csr_kl(const CsrView<T>& s, Side side, CView<T> wt, CView<T> h, T* out, index_t ldo, T beta, index_t first,
              index_t last) {
  const index_t k = wt.rows;
  KlSums sums;
  std::vector<T> acc(to_size(k));
  // Float32: the stored entries' m in double for the model term (KlSums::model_exact says why), as w_i · Σ_j h_j per
  // row: k additions per stored entry and one dot per row, where a dot per entry cost 15% of the iteration.
  constexpr bool kExactModel = std::is_same_v<T, float>;
  std::vector<double> h_sum(kExactModel ? to_size(k) : 0);
  for (index_t i = first; i < last; ++i) {
    const T* wc = wt.data + i * wt.ld;
    std::fill(acc.begin(), acc.end(), T(0));
    if constexpr (kExactModel) std::fill(h_sum.begin(), h_sum.end(), 0.0);
    for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p) {
      const index_t j = s.indices[p];
      const T* hc = h.data + j * h.ld;
      T m = 0;
#pragma omp simd reduction(+ : m)
      for (index_t l = 0; l < k; ++l) m += wc[l] * hc[l];
      const double a = static_cast<double>(s.values[p]);
      const double md = static_cast<double>(m);
      sums.a_times_m += a * md;
      if (a > 0) sums.a_log_a_over_m += a * std::log(a / std::max(md, kl_model_floor));
      if constexpr (kExactModel) {
        sums.model_sum += md;
#pragma omp simd
        for (index_t l = 0; l < k; ++l) h_sum[to_size(l)] += static_cast<double>(hc[l]);
      }
      const T r = static_cast<T>(kl_ratio(a, md));
      if (side == Side::W) {
#pragma omp simd
        for (index_t l = 0; l < k; ++l) acc[to_size(l)] += r * hc[l];
      } else {
        T* oc = out + j * ldo;
#pragma omp simd
        for (index_t l = 0; l < k; ++l) oc[l] += r * wc[l];
      }
    }
    if (side == Side::W) {
      T* oc = out + i * ldo;
      for (index_t l = 0; l < k; ++l) oc[l] = (beta == T(0) ? T(0) : beta * oc[l]) + acc[to_size(l)];
    }
    if constexpr (kExactModel)
      for (index_t l = 0; l < k; ++l) sums.model_exact += static_cast<double>(wc[l]) * h_sum[to_size(l)];
  }
  if constexpr (kExactModel) {
    sums.model_entries = static_cast<double>(s.indptr[last] - s.indptr[first]);
    sums.model_exact_entries = sums.model_entries;
  }
  return sums;
}

// KL on dense columns [first, last) of A: M = Wtᵀ H_tile in `scratch` (m x width), R = A ⊘ M in place, then
// out = beta·out + Wt·R (Side::H; out is the tile's k x width block) or out += H_tile·Rᵀ (Side::W; out is
// k x m, scaled by the caller beforehand).
template <class T>
KlSums dense_kl(const DenseView<const T>& d, Side side, CView<T> wt, CView<T> h, View<T> out, T beta, index_t first,
                index_t last, T* scratch) {
  KlSums sums;
  const index_t m = d.rows;
  const index_t width = last - first;
  const index_t k = wt.rows;
  if (width == 0) return sums;
  const index_t lds = std::max<index_t>(m, 1);
  if (m > 0 && k > 0) {
    blas::gemm(true, false, as_int(m), as_int(width), as_int(k), T(1), wt.data, ld_of(wt.ld), h.data + first * h.ld,
               ld_of(h.ld), T(0), scratch, as_int(lds));
  } else {
    std::fill(scratch, scratch + m * width, T(0));
  }
  for (index_t c = 0; c < width; ++c) {
    const T* ac = d.data + (first + c) * d.ld;
    T* mc = scratch + c * lds;
    for (index_t i = 0; i < m; ++i) {
      const double a = static_cast<double>(ac[i]);
      const double md = static_cast<double>(mc[i]);
      sums.a_times_m += a * md;
      sums.model_sum += md;
      if (a > 0) sums.a_log_a_over_m += a * std::log(a / std::max(md, kl_model_floor));
      mc[i] = static_cast<T>(kl_ratio(a, md));
    }
  }
  sums.model_entries = static_cast<double>(m) * static_cast<double>(width);
  if (side == Side::H) {
    if (m > 0) {
      blas::gemm(false, false, as_int(k), as_int(width), as_int(m), T(1), wt.data, ld_of(wt.ld), scratch, as_int(lds),
                 beta, out.data, ld_of(out.ld));
    } else {
      scale_columns(out, beta, 0, width);
    }
  } else if (m > 0) {
    blas::gemm(false, true, as_int(k), as_int(m), as_int(width), T(1), h.data + first * h.ld, ld_of(h.ld), scratch,
               as_int(lds), T(1), out.data, ld_of(out.ld));
  }
  return sums;
}

// Sums slots 1.. (k x cols buffers) into dst, which is slot 0's accumulator, in slot order.
template <class T>
void reduce_into(View<T> dst, const std::vector<std::vector<T>>& privates) {
  if (privates.empty()) return;
  util::for_each_index(dst.cols, parallel_worth(dst.size() * static_cast<index_t>(privates.size())), [&](index_t c) {
    for (const auto& priv : privates) {
      const T* src = priv.data() + c * dst.rows;
      T* out = dst.data + c * dst.ld;
      for (index_t l = 0; l < dst.rows; ++l) out[l] += src[l];
    }
  });
}

// The slots' private accumulators, kept per calling thread between calls: freed and allocated again every
// pass, they were mapped and faulted in afresh each time (perf: a sixth of a CLI MU iteration on a 4000 x 3000
// Fortran-order matrix went to page faults under the zeroing memset). Per thread, so that NMFk's side-by-side
// jobs never share one.
template <class T>
std::vector<std::vector<T>>& slot_buffers(index_t count) {
  thread_local std::vector<std::vector<T>> buffers;
  buffers.resize(to_size(count));
  return buffers;
}

// The fused pass's transposed accumulators (skinny_xat_transposed's panels of P rows): dst (k x cols) = Σ_s slot
// s's, slot 0's first, in slot order: the same additions in the same order as reduce_into's with slot 0 = dst.
// Each panel is summed over the slots contiguously in a buffer, then written transposed once.
template <class T>
void reduce_panels(View<T> dst, const std::vector<std::vector<T>>& slots) {
  const index_t cols = dst.cols, k = dst.rows, p = cpu::skinny_panel_rows<T>();
  const index_t panels = (cols + p - 1) / p;
  util::for_each_index_with(
      panels, parallel_worth(dst.size() * static_cast<index_t>(slots.size())),
      [&] { return std::vector<T>(to_size(k * p)); },
      [&](index_t c, std::vector<T>& sum) {
        const index_t offset = c * p * k;
        std::copy(slots.front().data() + offset, slots.front().data() + offset + p * k, sum.begin());
        for (std::size_t s = 1; s < slots.size(); ++s) {
          const T* src = slots[s].data() + offset;
          for (index_t e = 0; e < p * k; ++e) sum[to_size(e)] += src[e];
        }
        const index_t first = c * p;
        const index_t width = std::min(cols, first + p) - first;
        for (index_t i = 0; i < width; ++i)
          for (index_t l = 0; l < k; ++l) dst(l, first + i) = sum[to_size(l * p + i)];
      });
}

// Slot `slot`'s accumulator: dst itself for slot 0, else its zeroed k x cols buffer.
template <class T>
View<T> slot_accumulator(View<T> dst, std::vector<std::vector<T>>& privates, index_t slot) {
  if (slot == 0) return dst;
  auto& priv = privates[to_size(slot - 1)];
  priv.assign(to_size(dst.rows * dst.cols), T(0));
  return View<T>{priv.data(), dst.rows, dst.cols, std::max<index_t>(dst.rows, 1)};
}

// Σ v and Σ v² over x[0, n), in double: eight running sums each (entry i goes to sum i mod 8, the tail to the
// first), added pairwise. One running sum waits on the previous addition for every entry (4 cycles), which made
// the statistics of a dense 4000x3000 cost more than an iteration. The third value is 1 when every entry is
// finite and >= 0, else 0: the input check is made here, on a run the sums have just brought into cache (a
// pass of its own over an in-memory A took as long as these sums).
template <class T>
std::array<double, 3> sum_and_squares(const T* x, index_t n) {
  constexpr index_t kWays = 8;  // the pairwise sum below adds eight
  double s[kWays] = {}, q[kWays] = {};
  index_t i = 0;
  for (; i + kWays <= n; i += kWays) {
#pragma omp simd
    for (index_t t = 0; t < kWays; ++t) {
      const auto v = static_cast<double>(x[i + t]);
      s[t] += v;
      q[t] += v * v;
    }
  }
  for (; i < n; ++i) {
    const auto v = static_cast<double>(x[i]);
    s[0] += v;
    q[0] += v * v;
  }
  const auto pairwise = [](const double* p) {
    return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
  };
  // The check as a pass of its own over the same run, still in cache: folded into the loop above as `good &=`,
  // g++ left the whole loop scalar.
  return {pairwise(s), pairwise(q), io::all_acceptable(x, n) ? 1.0 : 0.0};
}

template <class T>
void mirror_upper(View<T> g) {
  for (index_t q = 0; q < g.cols; ++q)
    for (index_t p = q + 1; p < g.rows; ++p) g(p, q) = g(q, p);
}

// out (k x n) = beta·out + Y·A for a dense A (m x n, lda): the skinny kernels where they pay, else BLAS. Serial.
template <class T>
void dense_ya(index_t k, index_t m, index_t n, CView<T> y, const T* a, index_t lda, T beta, T* out, index_t ldo) {
  if (cpu::skinny_pays<T>(k)) {
    cpu::skinny_ya(k, m, n, y.data, y.ld, a, lda, beta, out, ldo);
  } else {
    blas::gemm(false, false, as_int(k), as_int(n), as_int(m), T(1), y.data, ld_of(y.ld), a, ld_of(lda), beta, out,
               ld_of(ldo));
  }
}

// out (k x m) = beta·out + X·Aᵀ for a dense A (m x n, lda). Serial.
template <class T>
void dense_xat(index_t k, index_t m, index_t n, CView<T> x, const T* a, index_t lda, T beta, T* out, index_t ldo,
               cpu::Ahead ahead = {}) {
  if (cpu::skinny_pays<T>(k)) {
    cpu::skinny_xat(k, m, n, x.data, x.ld, a, lda, beta, out, ldo, ahead);
  } else {
    blas::gemm(false, true, as_int(k), as_int(m), as_int(n), T(1), x.data, ld_of(x.ld), a, ld_of(lda), beta, out,
               ld_of(ldo));
  }
}

// Rows of a CSR kernel's chunks: nnz-balanced, a fixed number of them (not one per thread), so that the
// chunks, and with them the order of every sum, are the same for any thread count.
template <class T>
std::vector<index_t> csr_chunks(const CsrView<T>& s) {
  const double per_chunk = static_cast<double>(s.nnz() + s.rows) / 64.0 + 1.0;
  return tile_bounds<T>(MatrixRef<T>{s}, Side::W, std::max(per_chunk, 256.0));
}

// Accumulating kernels (a scatter into a k x cols block, the fused pass's other side) give each of at most
// kSlots consecutive runs of their tiles a buffer of its own, fill it tile by tile in order and sum the buffers
// in slot order. The slots depend on the problem only, never on the thread count, so results are the same
// bits for 1 or N threads (per-thread buffers, or tiles dealt to whichever thread is free, change the order
// of the additions with the thread count and from run to run). kSlots bounds the parallelism: 16 runs keep
// 2..8 threads balanced within ~15%.
constexpr index_t kSlots = CpuKernels<double>::max_fused_slots;

// Whether a dense pass over `rows` rows of A sums Qᵀ += H_j·A_jᵀ transposed, rows of A on the lanes: where the
// skinny kernels run. Every slot, the first too, then has a panel buffer of its own (cpu_accumulator_buffers).
template <class T>
bool sums_transposed(index_t rows, index_t k) {
  return rows > 0 && cpu::skinny_pays<T>(k);
}

// Slots for `tiles` tiles whose accumulator holds `acc_bytes`, for a pass of `work` element operations: at most
// 256 MiB of extra buffers, and few enough that zeroing and summing the buffers (about 3 sequential operations
// per accumulator entry and slot) stays under a tenth of the pass's own work. A sparse scatter into a wide
// accumulator (20000x10000 with 1e6 non-zeros, k = 16: ~100 operations per entry) so gets 2 slots instead of
// 16, whose 15 buffers of k x n cost more than the scatter itself (measured: sparse iteration +57%). A power of
// two, so that 2, 4 or 8 threads share the slots evenly. Two slots need less: their one extra buffer costs 3
// sequential operations per entry against a pass whose operations are mostly scattered (a k-vector gathered or
// scattered per stored entry costs several sequential ones per element), so 2 slots come at 8 operations per
// accumulator entry. Without that, a text-like 10000x5000 (1.6e5 non-zeros, k = 16: 2 slots at 32) ran its whole
// fused pass on one thread: 2 threads no faster than 1 (measured 3.3 against 4.1 ms/iteration once it had 2).
index_t slot_count(index_t tiles, double acc_bytes, double work, std::size_t element_bytes) {
  const double cap = 256.0 * 1024 * 1024 / std::max(acc_bytes, 1.0) + 1.0;
  const double acc_elements = std::max(acc_bytes / static_cast<double>(element_bytes), 1.0);
  const double worth = work / (32.0 * acc_elements);
  index_t by_work = parallel_worth(static_cast<index_t>(std::min(work, 1e18))) && work >= 8.0 * acc_elements ? 2 : 1;
  while (by_work * 2 <= kSlots && static_cast<double>(by_work * 2) <= worth) by_work *= 2;
  return std::max<index_t>(1, std::min<index_t>({tiles, kSlots, by_work, static_cast<index_t>(std::min(cap, 1e9))}));
}

// <X, N> over a k x cols tile, in double and in a fixed order: per row l a running sum over the columns (k
// independent chains the compiler vectorises), then the rows' sums in order. One running sum over every entry
// was a chain of dependent additions: ~4 cycles per entry, 2-3% of a float32 MU iteration for each such sum.
template <class T>
double tile_dot(CView<T> x, CView<T> numer) {
  const index_t k = x.rows;
  constexpr index_t kHeldRows = 64;
  double total = 0;
  for (index_t l0 = 0; l0 < k; l0 += kHeldRows) {
    const index_t rows = std::min(kHeldRows, k - l0);
    std::array<double, kHeldRows> acc{};
    for (index_t col = 0; col < x.cols; ++col) {
      const T* xc = x.data + col * x.ld + l0;
      const T* nc = numer.data + col * numer.ld + l0;
#pragma omp simd
      for (index_t l = 0; l < rows; ++l) acc[to_size(l)] += static_cast<double>(xc[l]) * static_cast<double>(nc[l]);
    }
    for (index_t l = 0; l < rows; ++l) total += acc[to_size(l)];
  }
  return total;
}

// First tile of slot `slot` of `slots` over `tiles` tiles.
index_t slot_begin(index_t slot, index_t slots, index_t tiles) { return slot * tiles / slots; }

// Dense tiles of whole kernel blocks, cut so that every slot holds the same number of blocks (to one): 50 tiles
// of 60 columns in 16 slots gave slots of 3 and 4 tiles, and one thread waited for the other at the end of every
// pass (perf: libgomp's wait took ~8% of a 2-thread f32 MU iteration). Returns the tile bounds; first_tile[s]
// is slot s's first tile, first_tile[slots] the tile count.
std::vector<index_t> slot_tiles(index_t extent, index_t block, index_t width, index_t slots,
                                std::vector<index_t>& first_tile) {
  const index_t blocks = (extent + block - 1) / block;
  std::vector<index_t> bounds{0};
  first_tile.assign(1, 0);
  for (index_t slot = 0; slot < slots; ++slot) {
    const index_t begin = bounds.back();
    const index_t end = std::min(extent, (slot + 1) * blocks / slots * block);
    const index_t span_blocks = (end - begin + block - 1) / block;
    const index_t pieces = std::clamp<index_t>((end - begin) / width, 1, std::max<index_t>(span_blocks, 1));
    for (index_t p = 1; p < pieces; ++p) bounds.push_back(begin + p * span_blocks / pieces * block);
    if (end > begin) bounds.push_back(end);
    first_tile.push_back(static_cast<index_t>(bounds.size()) - 1);
  }
  return bounds;
}

}  // namespace

template <class T>
int CpuKernels<T>::concurrency() const {
  return omp_get_max_threads();
}

// A tile of A is read by the tile's WᵀA and again by its AHᵀ right after; between them the tile should stay in
// L2. 1 MiB was measured best on cores with 1 MiB of L2 or more (Zen 5); on a Zen 3 (512 KiB) tiles of 512 KiB
// took the dense 4000x3000 iteration 3-12% faster than 1 MiB (mu, hals, bpp, f64 and f32, both storage orders;
// 256 KiB was slower: the AHᵀ accumulator, m x k, is then read and written twice as often).
template <class T>
double CpuKernels<T>::default_tile_bytes() {
  static const double bytes = [] {
    const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? std::clamp(static_cast<double>(l2), 512.0 * 1024, 1024.0 * 1024) : 1024.0 * 1024;
  }();
  return bytes;
}

// On a cache line (CacheAlignedAllocator says why), zeroed.
template <class T>
T* CpuKernels<T>::allocate(std::size_t count) {
  const std::size_t n = std::max<std::size_t>(count, 1);
  T* p = CacheAlignedAllocator<T>{}.allocate(n);
  std::fill_n(p, n, T(0));
  return p;
}
template <class T>
void CpuKernels<T>::deallocate(T* ptr) noexcept {
  CacheAlignedAllocator<T>{}.deallocate(ptr, 0);
}
template <class T>
void CpuKernels<T>::copy_to_backend(const T* host, T* dst, std::size_t count) {
  if (count > 0) std::memcpy(dst, host, count * sizeof(T));
}
template <class T>
void CpuKernels<T>::copy_to_host(const T* src, T* host, std::size_t count) {
  if (count > 0) std::memcpy(host, src, count * sizeof(T));
}

template <class T>
void CpuKernels<T>::multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) {
  const index_t k = y.rows;
  if (k == 0 || out.cols == 0) return;
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    const index_t inner = side == Side::H ? d->rows : d->cols;
    if (inner == 0) {
      scale_columns(out, beta, 0, out.cols);
      return;
    }
    // Fixed blocks of A's columns (WᵀA) or rows (HAᵀ), each a serial product: no sum crosses a block, so
    // the result is the same for any thread count (OpenBLAS's own threading of one call may round differently).
    const index_t extent = side == Side::H ? d->cols : d->rows;
    const index_t block = std::max<index_t>(64, static_cast<index_t>(tile_bytes_ / sizeof(T)) / inner);
    const index_t blocks = (extent + block - 1) / block;
    util::for_each_index_dynamic_with(
        blocks, blocks > 1 && parallel_worth(k * d->rows * d->cols), [] { return SerialBlas{}; },
        [&](index_t b, const SerialBlas&) {
          const index_t first = b * block;
          const index_t width = std::min(extent, first + block) - first;
          if (side == Side::H) {
            dense_ya(k, d->rows, width, y, d->data + first * d->ld, d->ld, beta, out.data + first * out.ld, out.ld);
          } else {
            dense_xat(k, width, d->cols, y, d->data + first, d->ld, beta, out.data + first * out.ld, out.ld);
          }
        });
    return;
  }
  const auto& s = std::get<CsrView<T>>(a);
  const auto chunks = csr_chunks(s);
  const auto n_chunks = static_cast<index_t>(chunks.size()) - 1;
  if (side == Side::W) {
    util::for_each_index_dynamic(n_chunks, parallel_worth(k * s.nnz()),
                                 [&](index_t c) { csr_gather(s, y, out, beta, chunks[c], chunks[c + 1]); });
    return;
  }
  scale_columns(out, beta, 0, out.cols);
  const index_t slots = slot_count(n_chunks, static_cast<double>(k * out.cols) * sizeof(T),
                                   static_cast<double>(k) * static_cast<double>(s.nnz()), sizeof(T));
  std::vector<std::vector<T>>& privates = slot_buffers<T>(slots - 1);
  util::for_each_index_dynamic(slots, slots > 1 && parallel_worth(k * s.nnz()), [&](index_t slot) {
    const View<T> acc = slot_accumulator(out, privates, slot);
    for (index_t c = slot_begin(slot, slots, n_chunks); c < slot_begin(slot + 1, slots, n_chunks); ++c)
      csr_scatter(s, y, acc.data, acc.ld, chunks[c], chunks[c + 1]);
  });
  reduce_into(out, privates);
}

template <class T>
KlSums CpuKernels<T>::kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) {
  const CView<T> wt = side == Side::H ? y : x;
  const CView<T> h = side == Side::H ? x : y;
  const index_t k = y.rows;
  KlSums total;
  if (k == 0) return total;
  const bool scatter = (side == Side::H && is_sparse(a)) || (side == Side::W && !is_sparse(a));
  if (scatter) scale_columns(out, beta, 0, out.cols);
  const auto* d = std::get_if<DenseView<const T>>(&a);
  // Dense: column tiles of A; sparse: row chunks. Either way a fixed list, cut into fixed slots.
  const auto bounds = d ? tile_bounds(a, Side::H, 256.0 * 1024 / sizeof(T)) : csr_chunks(std::get<CsrView<T>>(a));
  const auto n_tiles = static_cast<index_t>(bounds.size()) - 1;
  index_t widest = 0;
  for (index_t t = 0; t < n_tiles; ++t) widest = std::max(widest, bounds[t + 1] - bounds[t]);
  const index_t work = k * (d ? d->rows * d->cols : std::get<CsrView<T>>(a).nnz());
  const index_t slots = slot_count(n_tiles, scatter ? static_cast<double>(k * out.cols) * sizeof(T) : 0.0,
                                   static_cast<double>(work), sizeof(T));
  std::vector<std::vector<T>>& privates = slot_buffers<T>(scatter ? slots - 1 : 0);
  std::vector<KlSums> partial(to_size(slots));
  struct KlScratch {
    SerialBlas serial;
    std::vector<T> scratch;
  };
  const auto kl_scratch = [&] {
    return KlScratch{{}, std::vector<T>(d ? to_size(std::max<index_t>(d->rows, 1) * widest) : 0)};
  };
  util::for_each_index_dynamic_with(
      slots, slots > 1 && parallel_worth(work), kl_scratch, [&](index_t slot, KlScratch& own) {
        std::vector<T>& scratch = own.scratch;
        const View<T> acc = scatter ? slot_accumulator(out, privates, slot) : out;
        for (index_t tile = slot_begin(slot, slots, n_tiles); tile < slot_begin(slot + 1, slots, n_tiles); ++tile) {
          const index_t first = bounds[tile];
          const index_t last = bounds[tile + 1];
          if (d) {
            partial[to_size(slot)] += dense_kl(*d, side, wt, h, side == Side::H ? acc.columns(first, last) : acc, beta,
                                               first, last, scratch.data());
          } else {
            partial[to_size(slot)] += csr_kl(std::get<CsrView<T>>(a), side, wt, h, acc.data, acc.ld, beta, first, last);
          }
        }
      });
  if (scatter) reduce_into(out, privates);
  for (const auto& p : partial) total += p;
  return total;
}

template <class T>
MatrixStats CpuKernels<T>::stats(const MatrixRef<T>& a) {
  // The third sum counts the pieces with a bad entry: added in any order, it is exact.
  std::array<double, 3> sums{};
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    sums =
        util::ordered_sums<3>(d->cols, parallel_worth(d->rows * d->cols), [&](index_t j, std::array<double, 3>& acc) {
          const auto column = sum_and_squares(d->data + j * d->ld, d->rows);
          acc[0] += column[0];
          acc[1] += column[1];
          acc[2] += 1.0 - column[2];
        });
  } else {
    const auto& s = std::get<CsrView<T>>(a);
    const index_t first = s.rows > 0 ? s.indptr[0] : 0;
    const index_t nnz = s.nnz();
    // Stored values per call of sum_and_squares: a fixed cut, the same for any threads.
    constexpr index_t kPiece = 4096;
    sums = util::ordered_sums<3>(
        (nnz + kPiece - 1) / kPiece, parallel_worth(nnz), [&](index_t p, std::array<double, 3>& acc) {
          const index_t begin = p * kPiece;
          const auto piece = sum_and_squares(s.values + first + begin, std::min(kPiece, nnz - begin));
          acc[0] += piece[0];
          acc[1] += piece[1];
          acc[2] += 1.0 - piece[2];
        });
  }
  return {sums[0], sums[1], true, sums[2] == 0};
}

template <class T>
void CpuKernels<T>::gram(CView<T> x, View<T> g, T beta) {
  const index_t k = x.rows;
  if (k == 0) return;
  if (x.cols == 0) {
    scale_columns(g, beta, 0, g.cols);
    return;
  }
  // One serial call either way: one rounding for any thread count. The skinny kernel takes X·Xᵀ as X·Aᵀ with
  // A = X (k rows): 2-3x OpenBLAS's dsyrk at k = 16 over 10000-20000 columns (dsyrk packs and blocks for large
  // sides), which made the Gram matrices of a one-iteration sparse fit cost as much as its start.
  if (cpu::skinny_pays<T>(k)) {
    cpu::skinny_xat(k, k, x.cols, x.data, x.ld, x.data, x.ld, beta, g.data, g.ld);
  } else {
    const SerialBlas serial;  // k x k from k x cols: small work
    blas::syrk(as_int(k), as_int(x.cols), T(1), x.data, ld_of(x.ld), beta, g.data, ld_of(g.ld));
  }
  mirror_upper(g);
}

// Fixed runs of columns, each converted to double and summed by one serial dsyrk into a Gram of its own, the
// runs' Grams then added in order: the same bits for any thread count.
template <class T>
bool CpuKernels<T>::gram_f64(CView<T> x, double* g) {
  const index_t k = x.rows;
  std::fill(g, g + k * k, 0.0);
  if (k == 0 || x.cols == 0) return true;
  constexpr index_t kRun = 2048;
  const index_t runs = (x.cols + kRun - 1) / kRun;
  std::vector<double> partial(to_size(runs * k * k));
  struct RunScratch {
    SerialBlas serial;
    std::vector<double> wide;
  };
  util::for_each_index_dynamic_with(
      runs, runs > 1 && parallel_worth(k * k * x.cols),
      [&] {
        return RunScratch{{}, std::vector<double>(to_size(k * std::min(kRun, x.cols)))};
      },
      [&](index_t r, RunScratch& own) {
        const index_t first = r * kRun;
        const index_t cols = std::min(x.cols, first + kRun) - first;
        for (index_t c = 0; c < cols; ++c)
          for (index_t l = 0; l < k; ++l) own.wide[to_size(l + c * k)] = static_cast<double>(x(l, first + c));
        blas::syrk(as_int(k), as_int(cols), 1.0, own.wide.data(), as_int(k), 0.0, partial.data() + r * k * k,
                   as_int(k));
      });
  for (index_t r = 0; r < runs; ++r)
    for (index_t q = 0; q < k; ++q)
      for (index_t p = 0; p <= q; ++p) g[p + q * k] += partial[to_size(r * k * k + p + q * k)];
  for (index_t q = 0; q < k; ++q)
    for (index_t p = q + 1; p < k; ++p) g[p + q * k] = g[q + p * k];
  return true;
}

template <class T>
void CpuKernels<T>::fill(View<T> x, T value) {
  util::for_each_index(x.cols, parallel_worth(x.size()),
                       [&](index_t c) { std::fill(x.data + c * x.ld, x.data + c * x.ld + x.rows, value); });
}

// The generic host loop, column by column on the threads: entry by entry, so the split changes no result (the
// text-like benchmark's factors: ~5e5 values a step).
template <class T>
void CpuKernels<T>::extrapolate(View<T> x_hat, CView<T> x, View<T> x_prev, T beta) {
  // Ranges of whole columns per task and the element loop vectorised (the three blocks are distinct): a call per
  // column, 2k flops each, had been 5% of an extrapolated sparse HALS run. The arithmetic is the base class's.
  constexpr index_t kColumnsPerTask = 256;
  const index_t tasks = (x.cols + kColumnsPerTask - 1) / kColumnsPerTask;
  util::for_each_index(tasks, parallel_worth(x.size()), [&](index_t task) {
    const index_t last = std::min(x.cols, (task + 1) * kColumnsPerTask);
    for (index_t c = task * kColumnsPerTask; c < last; ++c) {
      T* __restrict hat = x_hat.data + c * x_hat.ld;
      const T* __restrict now = x.data + c * x.ld;
      T* __restrict prev = x_prev.data + c * x_prev.ld;
      for (index_t l = 0; l < x.rows; ++l) {
        const T v = now[l];
        hat[l] = v + beta * (v - prev[l]);
        prev[l] = v;
      }
    }
  });
}

template <class T>
double CpuKernels<T>::dot(CView<T> x, CView<T> y) {
  return util::ordered_sums<1>(x.cols, parallel_worth(x.size()), [&](index_t c, std::array<double, 1>& acc) {
    for (index_t l = 0; l < x.rows; ++l) acc[0] += static_cast<double>(x(l, c)) * static_cast<double>(y(l, c));
  })[0];
}

template <class T>
void CpuKernels<T>::row_sums(CView<T> x, T* out) {
  std::vector<double> acc(to_size(x.rows), 0.0);
  for (index_t c = 0; c < x.cols; ++c)
    for (index_t l = 0; l < x.rows; ++l) acc[to_size(l)] += static_cast<double>(x(l, c));
  for (index_t l = 0; l < x.rows; ++l) out[l] = static_cast<T>(acc[to_size(l)]);
}

template <class T>
int CpuKernels<T>::update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) {
  // Fixed runs of columns, each updated on one thread; the runs follow from the column count alone, so results
  // do not depend on the thread count. BPP's runs are one NNLS call each: one call over all columns kept the
  // second thread waiting on its serial bookkeeping (a 20000-column call: 18% of a sparse BPP run's samples in
  // libgomp's wait); a column's bits depend on the columns it is grouped with, never on threads.
  const index_t run = rule.algorithm == Algorithm::bpp
                          ? std::max(kBppRunColumns, (x.cols + max_fused_slots - 1) / max_fused_slots)
                          : kRuleRunColumns;
  const index_t runs = (x.cols + run - 1) / run;
  std::vector<int> hits(to_size(runs), 0);
  util::for_each_index_dynamic(runs, runs > 1 && parallel_worth(x.size() * x.rows), [&](index_t r) {
    hits[to_size(r)] = update_columns(rule, x, numer, g, y_row_sums, r * run, std::min(x.cols, (r + 1) * run));
  });
  int total = 0;
  for (const int h : hits) total += h;
  return total;
}

namespace {

// The tiles of a fused pass along `side` and the slots they are cut into: first_tile[s] is slot s's first tile,
// first_tile[slots] the tile count; `work` is the pass's element operations (the decision to go parallel).
struct FusedPlan {
  std::vector<index_t> bounds, first_tile;
  index_t slots = 1, work = 0, widest = 0;
};

template <class T>
FusedPlan plan_fused(const MatrixRef<T>& a, Side side, index_t k, index_t other_cols, double tile_bytes) {
  const bool dense = !is_sparse(a);
  const index_t m_rows = dense ? std::get<DenseView<const T>>(a).rows : 0;
  double tile_work = dense ? tile_bytes / sizeof(T) : tile_bytes / (sizeof(T) + sizeof(col_index_t));
  if (dense) {
    // Whole kernel blocks per tile: a 1 MiB tile of 4000 rows has 32 columns, and its last 2 went through a
    // 2-column block at half the rate (k = 16, f64, AVX-512: blocks of 6).
    const index_t rows = std::max<index_t>(m_rows, 1);
    const index_t block = cpu::skinny_block_columns<T>(k);
    const auto width = static_cast<index_t>(tile_work / static_cast<double>(rows));
    const index_t whole_blocks = width / block * block;
    if (width > block) tile_work = (static_cast<double>(whole_blocks) + 0.5) * static_cast<double>(rows);
  }
  // A sparse row costs ~4k flops per stored entry (gather and scatter) and ~k² or more for its factor column's
  // update: k entries' worth. Counting rows as one entry left the slot with the many short rows of a power-law
  // matrix twice the work of the other (text-like 10000x5000: 2 threads slower than 1).
  FusedPlan plan;
  plan.bounds = tile_bounds(a, side, tile_work, dense ? 1.0 : static_cast<double>(std::max<index_t>(k, 1)));
  plan.work = k * (dense ? m_rows * extent_of(a, side) : std::get<CsrView<T>>(a).nnz());
  plan.slots = slot_count(static_cast<index_t>(plan.bounds.size()) - 1, static_cast<double>(k * other_cols) * sizeof(T),
                          static_cast<double>(plan.work), sizeof(T));
  if (dense && plan.slots > 1) {
    plan.bounds = slot_tiles(extent_of(a, side), cpu::skinny_block_columns<T>(k), std::max<index_t>(plan.bounds[1], 1),
                             plan.slots, plan.first_tile);
  } else {
    for (index_t slot = 0; slot <= plan.slots; ++slot)
      plan.first_tile.push_back(slot_begin(slot, plan.slots, static_cast<index_t>(plan.bounds.size()) - 1));
  }
  for (std::size_t t = 1; t < plan.bounds.size(); ++t)
    plan.widest = std::max(plan.widest, plan.bounds[t] - plan.bounds[t - 1]);
  return plan;
}

}  // namespace

template <class T>
index_t CpuKernels<T>::dense_fused_pass(const DenseView<const T>& d, CView<T> y, View<T> x, View<T> other_numer,
                                        bool accumulate, const TileUpdate& update) {
  const index_t k = x.rows;
  const index_t m_rows = d.rows;
  const FusedPlan plan = plan_fused<T>(MatrixRef<T>{d}, Side::H, k, other_numer.cols, tile_bytes_);
  const std::vector<index_t>& bounds = plan.bounds;
  const std::vector<index_t>& first_tile = plan.first_tile;
  // Transposed, each slot's cols x k buffer is summed into other_numer at the end.
  const bool transposed = sums_transposed<T>(m_rows, k);
  std::vector<std::vector<T>>& privates = slot_buffers<T>(transposed ? plan.slots : plan.slots - 1);
  if (!accumulate) fill(other_numer, T(0));
  const bool fetch_ahead = sizeof(T) == 8 && k >= 16 && cpu::fetch_ahead_pays();
  // A transposed slot's first tile stores its product instead of adding it (no zeroing pass), except where slot 0
  // starts from what other_numer holds.
  const auto starts_fresh = [&](index_t slot) { return !(slot == 0 && accumulate); };
  const auto accumulator = [&](index_t slot) {
    if (!transposed) return slot_accumulator(other_numer, privates, slot);
    auto& buffer = privates[to_size(slot)];
    buffer.resize(to_size(cpu::skinny_panel_size<T>(k, other_numer.cols)));
    if (!starts_fresh(slot) || first_tile[to_size(slot)] == first_tile[to_size(slot + 1)]) {
      std::fill(buffer.begin(), buffer.end(), T(0));
      if (!starts_fresh(slot))
        for (index_t i = 0; i < other_numer.cols; ++i)
          for (index_t l = 0; l < k; ++l) buffer[to_size(cpu::skinny_panel_entry<T>(i, l, k))] = other_numer(l, i);
    }
    return View<T>{buffer.data(), k, other_numer.cols, k};  // panel layout: only .data is read
  };
  struct SlotScratch {
    SerialBlas serial;
    std::vector<T> numer_buf;
  };
  util::for_each_index_dynamic_with(
      plan.slots, plan.slots > 1 && parallel_worth(plan.work),
      [&] {
        return SlotScratch{{}, std::vector<T>(to_size(std::max<index_t>(k * plan.widest, 1)))};
      },
      [&](index_t slot, SlotScratch& own) {
        const View<T> acc = accumulator(slot);
        for (index_t tile = first_tile[to_size(slot)]; tile < first_tile[to_size(slot + 1)]; ++tile) {
          const index_t first = bounds[tile];
          const index_t last = bounds[tile + 1];
          const index_t width = last - first;
          View<T> x_tile = x.columns(first, last);
          View<T> numer{own.numer_buf.data(), k, width, std::max<index_t>(k, 1)};
          // numerator of the tile: Wt·A_j, then H_j's update, then Qᵀ += H_j·A_jᵀ while A_j is still in cache.
          if (m_rows > 0) {
            dense_ya(k, m_rows, width, y, d.data + first * d.ld, d.ld, T(0), numer.data, numer.ld);
          } else {
            std::fill(own.numer_buf.begin(), own.numer_buf.end(), T(0));
          }
          update(slot, first, last, CView<T>(numer));
          if (m_rows == 0) continue;
          // The slot's next tile, fetched while this product works on the tile in cache, where that was measured
          // to pay (docs/benchmarks.md, session 10): f64 with k >= 16, whose WᵀA reading from memory ran at 62-75
          // GFLOP/s against ~100 in cache (one Zen 5 core), and whose AHᵀ is long enough to hide the fetch. f32
          // (WᵀA 174 against 198) and k = 8 were 3-7% slower with it. On AMD only: on Intel it cost 20-30%
          // (cpu::fetch_ahead_pays says why).
          cpu::Ahead ahead;
          if (fetch_ahead && tile + 1 < first_tile[to_size(slot + 1)]) {
            const T* next = d.data + last * d.ld;
            ahead = {reinterpret_cast<const char*>(next),
                     static_cast<index_t>(sizeof(T)) * ((bounds[tile + 2] - last - 1) * d.ld + m_rows)};
          }
          if (transposed)
            cpu::skinny_xat_transposed(k, m_rows, width, x_tile.data, x_tile.ld, d.data + first * d.ld, d.ld, acc.data,
                                       tile == first_tile[to_size(slot)] && starts_fresh(slot), ahead);
          else
            dense_xat(k, m_rows, width, CView<T>(x_tile), d.data + first * d.ld, d.ld, T(1), acc.data, acc.ld, ahead);
        }
      });
  if (transposed)
    reduce_panels(other_numer, privates);
  else
    reduce_into(other_numer, privates);
  return plan.slots;
}

template <class T>
FusedSums CpuKernels<T>::fused_pass(const MatrixRef<T>& a, Side side, const UpdateRule& rule, View<T> x, CView<T> y,
                                    CView<T> gy, const T* y_row_sums, View<T> other_numer, View<T> gx,
                                    bool accumulate) {
  const bool dense = !is_sparse(a);
  if (dense != (side == Side::H)) {
    return Kernels<T>::fused_pass(a, side, rule, x, y, gy, y_row_sums, other_numer, gx, accumulate);
  }
  const bool kl = rule.algorithm == Algorithm::kl;
  const index_t k = x.rows;
  std::vector<FusedSums> partial(to_size(kSlots));
  for (FusedSums& p : partial) p.cross_before = 0;
  std::vector<std::vector<T>> gram_slots(to_size(kSlots), std::vector<T>(to_size(k * k), T(0)));
  // Before a tile's update: its share of <X, numer> at the old X.
  const auto tile_sum_before = [&](index_t slot, View<T> x_tile, CView<T> numer) {
    if (!kl) partial[to_size(slot)].cross_before += tile_dot(CView<T>(x_tile), numer);
  };
  // After a tile's update: its share of <X, numer> and of X·Xᵀ, in its slot's sums.
  const auto tile_sums = [&](index_t slot, View<T> x_tile, CView<T> numer) {
    partial[to_size(slot)].cross += tile_dot(CView<T>(x_tile), numer);
    if (k > 0)
      blas::syrk(as_int(k), as_int(x_tile.cols), T(1), x_tile.data, ld_of(x_tile.ld), T(1),
                 gram_slots[to_size(slot)].data(), ld_of(k));
  };
  index_t slots = 0;
  if (dense && !kl) {
    slots = dense_fused_pass(std::get<DenseView<const T>>(a), y, x, other_numer, accumulate,
                             [&](index_t slot, index_t first, index_t last, CView<T> numer) {
                               const View<T> x_tile = x.columns(first, last);
                               tile_sum_before(slot, x_tile, numer);
                               partial[to_size(slot)].nnls_cap_hits +=
                                   update_columns(rule, x_tile, numer, gy, y_row_sums, 0, last - first);
                               tile_sums(slot, x_tile, numer);
                             });
  } else {
    const index_t m_rows = dense ? std::get<DenseView<const T>>(a).rows : 0;
    const FusedPlan plan = plan_fused<T>(a, side, k, other_numer.cols, tile_bytes_);
    slots = plan.slots;
    std::vector<std::vector<T>>& privates = slot_buffers<T>(slots - 1);
    if (!accumulate) fill(other_numer, T(0));
    struct SlotScratch {
      SerialBlas serial;
      std::vector<T> numer_buf, kl_scratch;
    };
    const auto slot_scratch = [&] {
      return SlotScratch{{},
                         std::vector<T>(to_size(std::max<index_t>(k * plan.widest, 1))),
                         std::vector<T>(dense ? to_size(std::max<index_t>(m_rows, 1) * plan.widest) : 0)};
    };
    util::for_each_index_dynamic_with(
        slots, slots > 1 && parallel_worth(plan.work), slot_scratch, [&](index_t slot, SlotScratch& own) {
          FusedSums& mine = partial[to_size(slot)];
          const View<T> acc = slot_accumulator(other_numer, privates, slot);
          for (index_t tile = plan.first_tile[to_size(slot)]; tile < plan.first_tile[to_size(slot + 1)]; ++tile) {
            const index_t first = plan.bounds[tile];
            const index_t last = plan.bounds[tile + 1];
            const index_t width = last - first;
            View<T> x_tile = x.columns(first, last);
            View<T> numer{own.numer_buf.data(), k, width, std::max<index_t>(k, 1)};
            if (dense) {
              // KL (the other dense passes are dense_fused_pass): the ratio numerator of the tile, its update, then
              // the other side's ratio product while A_j is still in cache.
              const auto& d = std::get<DenseView<const T>>(a);
              mine.kl_numer += dense_kl(d, Side::H, y, CView<T>(x), numer, T(0), first, last, own.kl_scratch.data());
              mine.nnls_cap_hits += update_columns(rule, x_tile, CView<T>(numer), gy, y_row_sums, 0, width);
              mine.kl_accum += dense_kl(d, Side::W, y, CView<T>(x), acc, T(1), first, last, own.kl_scratch.data());
            } else {
              const auto& s = std::get<CsrView<T>>(a);
              // numerator of the row tile: H·A_iᵀ (gather), then Wt_i's update, then P += Wt_i·A_i (scatter).
              const CsrView<T> rows = s.row_range(first, last);
              if (kl) {
                mine.kl_numer += csr_kl(rows, Side::W, CView<T>(x_tile), y, numer.data, numer.ld, T(0), 0, width);
              } else {
                csr_gather(rows, y, numer, T(0), 0, width);
              }
              tile_sum_before(slot, x_tile, CView<T>(numer));
              mine.nnls_cap_hits += update_columns(rule, x_tile, CView<T>(numer), gy, y_row_sums, 0, width);
              if (other_numer.cols == 0) {
                // An update pass: no other side's numerator (GatheringOperand gathers it over A's transpose).
              } else if (kl) {
                mine.kl_accum += csr_kl(rows, Side::H, CView<T>(x_tile), y, acc.data, acc.ld, T(1), 0, width);
              } else {
                csr_scatter(rows, CView<T>(x_tile), acc.data, acc.ld, 0, width);
              }
            }
            tile_sums(slot, x_tile, CView<T>(numer));
          }
        });
    reduce_into(other_numer, privates);
  }
  if (!accumulate) fill(gx, T(0));
  for (index_t slot = 0; slot < slots; ++slot) {
    const std::vector<T>& gs = gram_slots[to_size(slot)];
    for (index_t q = 0; q < k; ++q)
      for (index_t p = 0; p <= q; ++p) gx(p, q) += gs[to_size(p + q * k)];
  }
  mirror_upper(gx);
  FusedSums total;
  total.cross_before = kl ? std::numeric_limits<double>::quiet_NaN() : 0.0;
  for (index_t slot = 0; slot < slots; ++slot) {
    const FusedSums& p = partial[to_size(slot)];
    total.cross += p.cross;
    total.cross_before += p.cross_before;
    total.kl_numer += p.kl_numer;
    total.kl_accum += p.kl_accum;
    total.nnls_cap_hits += p.nnls_cap_hits;
  }
  return total;
}

index_t cpu_accumulator_slots(double acc_bytes, double work, std::size_t element_bytes) {
  return slot_count(kSlots, acc_bytes, work, element_bytes);  // fewer tiles than kSlots only lowers it
}

index_t cpu_accumulator_buffers(bool dense, index_t k, double acc_bytes, double work, std::size_t element_bytes) {
  const index_t slots = cpu_accumulator_slots(acc_bytes, work, element_bytes);
  const index_t rows = dense ? 1 : 0;  // any rows: the rule depends on k and the precision only
  const bool transposed =
      element_bytes == sizeof(float) ? sums_transposed<float>(rows, k) : sums_transposed<double>(rows, k);
  return transposed ? slots : slots - 1;
}

template class CpuKernels<float>;
template class CpuKernels<double>;

}  // namespace dnmf::backend
