// See skinny_products.hpp: the run-time choice of instruction set, and the packing of the k-wide operand.
#include "backend/cpu/skinny_products.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "dnmf/error.hpp"

namespace dnmf::backend::cpu {
namespace {

enum class Isa { blas, avx2, avx512 };

Isa choose() {
  const char* forced = std::getenv("DNMF_SKINNY");
  const std::string want = forced != nullptr ? forced : "";
  if (want == "blas") return Isa::blas;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f");
  if (want == "avx2") return avx2 ? Isa::avx2 : Isa::blas;
  if (avx512) return Isa::avx512;
  if (avx2) return Isa::avx2;
#endif
  return Isa::blas;
}

Isa isa() {
  static const Isa chosen = choose();
  return chosen;
}

template <class T>
index_t lanes() {
  return static_cast<index_t>((isa() == Isa::avx512 ? 64 : 32) / sizeof(T));
}

// The operand as the kernels read it: columns of `padded` entries, k real ones then zeros. Returns `src` itself
// when it already has that shape.
template <class T>
const T* packed(index_t k, index_t cols, const T* src, index_t ld, index_t padded, std::vector<T>& buffer) {
  if (ld == padded) return src;  // k is a multiple of the lanes and the columns are adjacent
  buffer.assign(static_cast<std::size_t>(padded * cols), T(0));
  for (index_t j = 0; j < cols; ++j) std::memcpy(buffer.data() + j * padded, src + j * ld, sizeof(T) * k);
  return buffer.data();
}

// Columns of the k-wide operand packed per call of a kernel, a multiple of `unit`: the packed copy is at most
// kPackBytes (the planner's per-thread scratch covers it), not a copy of the whole factor. Packed whole, a
// 1500007 x 1 block at k = 1 held four W-sized copies (f64, AVX2: k padded to 4 lanes) per call and peaked at
// 1.9x its memory budget.
constexpr std::size_t kPackBytes = std::size_t{1} << 20;

template <class T>
index_t pack_columns(index_t padded, index_t unit) {
  const auto fit = static_cast<index_t>(kPackBytes / (sizeof(T) * static_cast<std::size_t>(padded)));
  return std::max<index_t>(unit, fit / unit * unit);
}

std::atomic<bool> blas_forced{false};

}  // namespace

bool fetch_ahead_pays() {
  static const bool pays = [] {
    const char* forced = std::getenv("DNMF_FETCH_AHEAD");
    if (forced != nullptr && *forced != '\0') return std::strcmp(forced, "0") != 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") != 0;
#else
    return false;
#endif
  }();
  return pays;
}

namespace {
std::atomic<index_t> column_ahead_forced{-1};

index_t column_ahead_chosen(bool is_double) {
  static const index_t forced = [] {
    const char* text = std::getenv("DNMF_COLUMN_AHEAD");
    return text != nullptr && *text != '\0' ? std::max<index_t>(0, std::atol(text)) : index_t{-1};
  }();
  if (forced >= 0) return forced;
  return is_double && !fetch_ahead_pays() ? index_t{4096} : index_t{0};
}
}  // namespace

template <class T>
index_t column_ahead_bytes() {
  const index_t forced = column_ahead_forced.load(std::memory_order_relaxed);
  return forced >= 0 ? forced : column_ahead_chosen(std::is_same_v<T, double>);
}
template index_t column_ahead_bytes<float>();
template index_t column_ahead_bytes<double>();

void skinny_set_column_ahead(index_t bytes) { column_ahead_forced.store(bytes, std::memory_order_relaxed); }

const char* skinny_isa() {
  switch (isa()) {
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    default:
      return "blas";
  }
}

bool skinny_takes(index_t k) {
  return isa() != Isa::blas && !blas_forced.load(std::memory_order_relaxed) && k >= 1 && k <= kSkinnyMaxRank;
}

template <class T>
bool skinny_pays(index_t k) {
  return skinny_takes(k) && k <= 4 * lanes<T>();
}
template bool skinny_pays<float>(index_t);
template bool skinny_pays<double>(index_t);

template <class T>
index_t skinny_block_columns(index_t k) {
  if (!skinny_pays<T>(k)) return 1;
  return kAccumulators / ((k + lanes<T>() - 1) / lanes<T>());
}
template index_t skinny_block_columns<float>(index_t);
template index_t skinny_block_columns<double>(index_t);

void skinny_use_blas(bool use_blas) { blas_forced.store(use_blas, std::memory_order_relaxed); }

template <class T>
void skinny_ya(index_t k, index_t m, index_t n, const T* y, index_t ldy, const T* a, index_t lda, T beta, T* c,
               index_t ldc) {
  if (!skinny_takes(k)) throw UsageError("skinny_ya: rank " + std::to_string(k) + " is not taken");
  if (n == 0) return;
  if (m == 0) {
    for (index_t j = 0; j < n; ++j)
      for (index_t l = 0; l < k; ++l) c[l + j * ldc] = beta == T(0) ? T(0) : beta * c[l + j * ldc];
    return;
  }
  std::vector<T> buffer;  // per call: a thread_local one would outlive OpenMP's pool threads (a leak to LSan)
  if constexpr (std::is_same_v<T, float>) {
    if (2 * k <= lanes<T>() && m >= 2) {  // two rows per vector (skinny_kernels_impl.hpp, ya_pairs_block)
      const index_t vl = lanes<T>(), pairs = m / 2;
      const index_t chunk = pack_columns<T>(vl, 1);
      buffer.resize(static_cast<std::size_t>(std::min(pairs, chunk) * vl));
      for (index_t q0 = 0; q0 < pairs; q0 += chunk) {
        const index_t q1 = std::min(pairs, q0 + chunk);
        std::fill(buffer.begin(), buffer.end(), T(0));
        for (index_t q = q0; q < q1; ++q)
          for (index_t r = 0; r < 2; ++r)
            for (index_t l = 0; l < k; ++l)
              buffer[static_cast<std::size_t>((q - q0) * vl + 2 * l + r)] = y[l + (2 * q + r) * ldy];
        const T part_beta = q0 == 0 ? beta : T(1);  // later pieces add to the first's sums
        if (isa() == Isa::avx512)
          avx512::ya_pairs(k, q1 - q0, n, buffer.data(), a + 2 * q0, lda, part_beta, c, ldc);
        else
          avx2::ya_pairs(k, q1 - q0, n, buffer.data(), a + 2 * q0, lda, part_beta, c, ldc);
      }
      if (m % 2 != 0)  // the last row, added after the pairs
        for (index_t j = 0; j < n; ++j)
          for (index_t l = 0; l < k; ++l) c[l + j * ldc] += y[l + (m - 1) * ldy] * a[m - 1 + j * lda];
      return;
    }
  }
  const index_t padded = (k + lanes<T>() - 1) / lanes<T>() * lanes<T>();
  // Pieces of whole row blocks: where k takes several panels each piece's sums are the kernel's own (the same
  // bits as one call); with one panel a long column is summed per piece, then the pieces in order.
  const index_t chunk = ldy == padded ? m : pack_columns<T>(padded, kRowBlock);
  const index_t ahead = column_ahead_bytes<T>();
  for (index_t i0 = 0; i0 < m; i0 += chunk) {
    const index_t rows = std::min(m, i0 + chunk) - i0;
    const T* p = packed(k, rows, y + i0 * ldy, ldy, padded, buffer);
    const T part_beta = i0 == 0 ? beta : T(1);
    if (isa() == Isa::avx512)
      avx512::ya(k, rows, n, p, padded, a + i0, lda, part_beta, c, ldc, ahead);
    else
      avx2::ya(k, rows, n, p, padded, a + i0, lda, part_beta, c, ldc, ahead);
  }
}

template <class T>
void skinny_xat(index_t k, index_t m, index_t n, const T* x, index_t ldx, const T* a, index_t lda, T beta, T* d,
                index_t ldd, Ahead ahead) {
  if (!skinny_takes(k)) throw UsageError("skinny_xat: rank " + std::to_string(k) + " is not taken");
  if (m == 0) return;
  if (n == 0) {
    for (index_t i = 0; i < m; ++i)
      for (index_t l = 0; l < k; ++l) d[l + i * ldd] = beta == T(0) ? T(0) : beta * d[l + i * ldd];
    return;
  }
  const index_t padded = (k + lanes<T>() - 1) / lanes<T>() * lanes<T>();
  // Pieces of whole column blocks, whose sums the kernel adds block by block anyway: the same bits as one call.
  const index_t chunk = ldx == padded ? n : pack_columns<T>(padded, kColBlock);
  std::vector<T> buffer;
  for (index_t j0 = 0; j0 < n; j0 += chunk) {
    const index_t cols = std::min(n, j0 + chunk) - j0;
    const T* p = packed(k, cols, x + j0 * ldx, ldx, padded, buffer);
    const T part_beta = j0 == 0 ? beta : T(1);
    if (isa() == Isa::avx512)
      avx512::xat(k, m, cols, p, padded, a + j0 * lda, lda, part_beta, d, ldd, ahead);
    else
      avx2::xat(k, m, cols, p, padded, a + j0 * lda, lda, part_beta, d, ldd, ahead);
    ahead = Ahead{};  // requested during the first piece
  }
}

template <class T>
index_t skinny_panel_rows() {
  return kTransposedVectors * lanes<T>();
}
template index_t skinny_panel_rows<float>();
template index_t skinny_panel_rows<double>();

template <class T>
void skinny_xat_transposed(index_t k, index_t m, index_t n, const T* x, index_t ldx, const T* a, index_t lda, T* dt,
                           bool overwrite, Ahead ahead) {
  if (!skinny_pays<T>(k)) throw UsageError("skinny_xat_transposed: rank " + std::to_string(k) + " is not taken");
  if (m == 0) return;
  if (n == 0) {
    if (overwrite) std::fill(dt, dt + skinny_panel_size<T>(k, m), T(0));
    return;
  }
  if (isa() == Isa::avx512)
    avx512::xat_transposed(k, m, n, x, ldx, a, lda, dt, overwrite, ahead);
  else
    avx2::xat_transposed(k, m, n, x, ldx, a, lda, dt, overwrite, ahead);
}

template void skinny_ya<float>(index_t, index_t, index_t, const float*, index_t, const float*, index_t, float, float*,
                               index_t);
template void skinny_ya<double>(index_t, index_t, index_t, const double*, index_t, const double*, index_t, double,
                                double*, index_t);
template void skinny_xat<float>(index_t, index_t, index_t, const float*, index_t, const float*, index_t, float, float*,
                                index_t, Ahead);
template void skinny_xat<double>(index_t, index_t, index_t, const double*, index_t, const double*, index_t, double,
                                 double*, index_t, Ahead);

template void skinny_xat_transposed<float>(index_t, index_t, index_t, const float*, index_t, const float*, index_t,
                                           float*, bool, Ahead);
template void skinny_xat_transposed<double>(index_t, index_t, index_t, const double*, index_t, const double*, index_t,
                                            double*, bool, Ahead);

}  // namespace dnmf::backend::cpu
