// The two products of an NMF iteration whose short side is the rank k (issue 14): C = Y·A (the numerator WᵀA of
// H's update, Y = Wᵀ) and D = X·Aᵀ (AHᵀ for W's), for k <= kSkinnyMaxRank. General BLAS runs them at a third of
// its square-GEMM rate (its blocking is made for three large sides); these kernels keep k in vector registers
// (skinny_kernels_impl.hpp). Chosen at run time: AVX-512 where the CPU has it, else AVX2 (the library's baseline);
// DNMF_SKINNY=blas sends every product to BLAS instead, DNMF_SKINNY=avx2 keeps AVX2 on an AVX-512 CPU.
// Serial: callers parallelise over blocks of A, so the order of every sum is independent of the thread count.
#pragma once

#include "dnmf/index.hpp"

namespace dnmf::backend::cpu {

/// The largest k the kernels take; above it BLAS's own blocking is the better one.
constexpr index_t kSkinnyMaxRank = 64;

/// Which kernels run: "avx512", "avx2" or "blas" (decided once per process).
const char* skinny_isa();

/// True when the kernels take products of rank k (k <= kSkinnyMaxRank and not turned off).
bool skinny_takes(index_t k);

/// True when the kernels are the faster choice for rank k in precision T: k fits one accumulator panel (4 vectors:
/// 16 doubles or 32 floats with AVX2, twice that with AVX-512), so A is read once. Measured on AVX2 (Zen 3,
/// docs/benchmarks.md): 1.1-1.6x OpenBLAS 0.3.21 for WᵀA and 0.95-1.3x for AHᵀ up to there, slower beyond.
template <class T>
bool skinny_pays(index_t k);

/// Accumulator registers of the kernels' blocks: RV vectors of k by NC columns (or rows of A), RV·NC of them.
constexpr int kAccumulators = 12;

/// Rows of A per block of the YA product when k takes several panels: the block of A is read once per panel, and
/// stays in cache between them. With one panel (every k that skinny_pays) the columns run whole: the hardware
/// prefetcher then follows NC long streams instead of short pieces (AVX-512, k = 16, A 4000x3000 from memory:
/// 55 GFLOP/s with 256-row blocks, 75 whole, on one Zen 5 core).
constexpr index_t kRowBlock = 1024;
/// Columns of A per block of the XAᵀ product: the lines of A it touches (one per column) stay in L1 across the
/// row blocks.
constexpr index_t kColBlock = 192;

/// Columns of A in one full block of the WᵀA kernel at rank k (1 where the kernels do not pay): callers that cut
/// A into tiles make the widths a multiple of it, so that no tile ends in a narrower block, which runs fewer
/// independent chains of multiply-adds at a time.
template <class T>
index_t skinny_block_columns(index_t k);

/// For benchmarks comparing both in one run: true sends every product to BLAS until called with false.
void skinny_use_blas(bool use_blas);

/// C (k x n, ldc) = beta·C + Y (k x m, ldy) · A (m x n, column-major, lda). beta == 0 overwrites C.
template <class T>
void skinny_ya(index_t k, index_t m, index_t n, const T* y, index_t ldy, const T* a, index_t lda, T beta, T* c,
               index_t ldc);

/// Bytes the caller reads next (the fused pass's next tile of A). skinny_xat, whose A is already in cache there,
/// requests them a share at a time while it computes, so that their fetch from memory overlaps its arithmetic
/// instead of stalling the next product. Nothing by default.
struct Ahead {
  const char* data = nullptr;
  index_t bytes = 0;
};

/// True where requesting the fused pass's next tile during AHᵀ (Ahead) was measured to pay: AMD CPUs (Zen 5: f64
/// k = 16 +3..+10%). On Intel (Emerald Rapids) the requests stalled the kernel: each software prefetch holds one of
/// the core's few line-fill buffers until its line arrives, and a burst of ~130 lines per block of rows stopped
/// the arithmetic behind it (perf: 38% of AHᵀ's samples on the prefetch instruction; f64 MU 9.0 -> 7.0 ms per
/// iteration without them, A in L3 or in memory alike). DNMF_FETCH_AHEAD=1 or 0 overrides (decided once).
bool fetch_ahead_pays();

/// Bytes per cache line, the unit in which Ahead is requested.
constexpr index_t kLineBytes = 64;

/// How far ahead of its reads (bytes, 0: not at all) skinny_ya requests each column of A it streams, for precision
/// T. 4 KiB in float64 on CPUs where the fused pass does not request its next tile (fetch_ahead_pays false: Intel):
/// the hardware prefetcher starts over at every 4 KiB page of each of the block's NC column streams, and WᵀA, the
/// product that reads A from memory, ran at 60% of its rate on A in L2 (Emerald Rapids, 4000×3000 f64 k = 16, MU
/// 7.4–8.1 ms per iteration without, 6.5–6.9 with; AVX2 kernels 9.6–10.3 against 8.9–9.2; C order 6.7 against 6.3;
/// docs/benchmarks.md, session of 2026-12-07 22:00). Float32's kernel asks half the bytes per multiply-add and ran
/// 5–12% slower with the requests; on AMD the fused pass's Ahead already brings the tile. DNMF_COLUMN_AHEAD=<bytes>
/// overrides (decided once); the sums are the same either way. Only rows the call reads are requested (a stripe's
/// or grid block's neighbouring rows are not), which measured the same as requesting past them.
template <class T>
index_t column_ahead_bytes();

/// For tests and benchmarks comparing both in one run: bytes >= 0 replaces column_ahead_bytes's choice for both
/// precisions until called with a negative value, which restores it.
void skinny_set_column_ahead(index_t bytes);

/// D (k x m, ldd) = beta·D + X (k x n, ldx) · Aᵀ, A (m x n, column-major, lda). beta == 0 overwrites D.
template <class T>
void skinny_xat(index_t k, index_t m, index_t n, const T* x, index_t ldx, const T* a, index_t lda, T beta, T* d,
                index_t ldd, Ahead ahead = {});

/// Vectors of rows of A per block of skinny_xat_transposed, and per panel of its output.
constexpr int kTransposedVectors = 3;

/// Rows per panel of skinny_xat_transposed's output for precision T: kTransposedVectors vectors of lanes.
template <class T>
index_t skinny_panel_rows();

/// Entries of skinny_xat_transposed's output for m rows of rank k: m rounded up to whole panels, times k.
template <class T>
index_t skinny_panel_size(index_t k, index_t m) {
  const index_t p = skinny_panel_rows<T>();
  return (m + p - 1) / p * p * k;
}

/// Where entry (i, l) of skinny_xat_transposed's output for rank k lies: panels of P rows, each panel's k
/// columns of P entries adjacent.
template <class T>
index_t skinny_panel_entry(index_t i, index_t l, index_t k) {
  const index_t p = skinny_panel_rows<T>();
  return i / p * p * k + l * p + i % p;
}

/// Dt = (overwrite ? 0 : Dt) + A (m x n, column-major, lda) · Xᵀ, X (k x n, ldx): skinny_xat's product written
/// transposed, with rows of A on the vector lanes (the faster form where k fills few vectors: one broadcast of X
/// feeds several vectors of A). Dt is in panels of P = skinny_panel_rows<T>() rows, entry (i, l) at
/// (i / P)·P·k + l·P + i % P (skinny_panel_size entries). Every entry gets the bits skinny_xat with beta = 1
/// (beta = 0 for overwrite) gives its transpose. X needs no padding. For k where skinny_pays.
template <class T>
void skinny_xat_transposed(index_t k, index_t m, index_t n, const T* x, index_t ldx, const T* a, index_t lda, T* dt,
                           bool overwrite, Ahead ahead = {});

// One set of entry points per instruction set (skinny_avx2.cpp, skinny_avx512.cpp). The k-wide operand comes
// packed: column stride a multiple of the set's lanes, rows k..stride zero.
#define DNMF_SKINNY_DECLARE(isa)                                                                                     \
  namespace isa {                                                                                                    \
  void ya(index_t k, index_t m, index_t n, const double* p, index_t ldp, const double* a, index_t lda, double beta,  \
          double* c, index_t ldc, index_t ahead_bytes);                                                              \
  void ya(index_t k, index_t m, index_t n, const float* p, index_t ldp, const float* a, index_t lda, float beta,     \
          float* c, index_t ldc, index_t ahead_bytes);                                                               \
  void xat(index_t k, index_t m, index_t n, const double* x, index_t ldx, const double* a, index_t lda, double beta, \
           double* d, index_t ldd, Ahead ahead);                                                                     \
  void xat(index_t k, index_t m, index_t n, const float* x, index_t ldx, const float* a, index_t lda, float beta,    \
           float* d, index_t ldd, Ahead ahead);                                                                      \
  void ya_pairs(index_t k, index_t pairs, index_t n, const float* p2, const float* a, index_t lda, float beta,       \
                float* c, index_t ldc);                                                                              \
  void xat_transposed(index_t k, index_t m, index_t n, const double* x, index_t ldx, const double* a, index_t lda,   \
                      double* dt, bool overwrite, Ahead ahead);                                                      \
  void xat_transposed(index_t k, index_t m, index_t n, const float* x, index_t ldx, const float* a, index_t lda,     \
                      float* dt, bool overwrite, Ahead ahead);                                                       \
  }
DNMF_SKINNY_DECLARE(avx2)
DNMF_SKINNY_DECLARE(avx512)
#undef DNMF_SKINNY_DECLARE

}  // namespace dnmf::backend::cpu
