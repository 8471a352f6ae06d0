// The HALS and MU-Frobenius column rules in 8-wide double lanes (hals.hpp, mu_frobenius.hpp), built with
// -mavx512f and called only where the CPU has AVX-512F: one instruction serves eight columns where the
// baseline's serves four, and for k = 8, 16, 24 (and 32 for HALS) the per-column k-vector (HALS's G·x, MU's
// denominators) stays in registers, 32 of which hold it where AVX2's 16 do not. Same bits as the 4-wide kernels.
#include <type_traits>

#include "solvers/hals.hpp"
#include "solvers/mu_frobenius.hpp"

namespace dnmf::solvers::avx512 {
namespace {

/// Eight doubles in one AVX-512 register (internal linkage: its instantiations are this file's alone).
using Wide = double __attribute__((vector_size(64)));

/// Calls f(std::integral_constant<index_t, k>{}) for k = 8, 16, 24 or 32 up to Largest and returns true; false
/// (f not called) for any other k. Only the k up to Largest are instantiated.
template <index_t Largest, class F>
bool with_fixed_k(index_t k, F&& f) {
  bool called = false;
  const auto take = [&](auto fixed) {
    if constexpr (decltype(fixed)::value <= Largest) {
      if (k == decltype(fixed)::value) {
        f(fixed);
        called = true;
      }
    }
  };
  take(std::integral_constant<index_t, 8>{});
  take(std::integral_constant<index_t, 16>{});
  take(std::integral_constant<index_t, 24>{});
  take(std::integral_constant<index_t, 32>{});
  return called;
}

}  // namespace

/// The fixed-k kernels where they apply (G·x in registers), else the generic one in 8-wide lanes.
template <class T>
void hals_update_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer, backend::CView<T> g,
                      index_t first, index_t last) {
  const bool fixed = with_fixed_k<32>(
      x.rows, [&](auto k) { hals_detail::update_fixed<T, Wide, decltype(k)::value>(rule, x, numer, g, first, last); });
  if (!fixed) hals_detail::update<T, Wide>(rule, x, numer, g, first, last);
}

/// k = 8, 16 or 24 (mu_frobenius_wide_for; the caller checks it).
template <class T>
void mu_frobenius_update_wide(const backend::UpdateRule& rule, backend::View<T> x, backend::CView<T> numer,
                              backend::CView<T> g, index_t first, index_t last) {
  (void)with_fixed_k<24>(
      x.rows, [&](auto k) { mu_detail::update_fixed<T, Wide, decltype(k)::value>(rule, x, numer, g, first, last); });
}

template void hals_update_wide(const backend::UpdateRule&, backend::View<double>, backend::CView<double>,
                               backend::CView<double>, index_t, index_t);
template void hals_update_wide(const backend::UpdateRule&, backend::View<float>, backend::CView<float>,
                               backend::CView<float>, index_t, index_t);
template void mu_frobenius_update_wide(const backend::UpdateRule&, backend::View<double>, backend::CView<double>,
                                       backend::CView<double>, index_t, index_t);
template void mu_frobenius_update_wide(const backend::UpdateRule&, backend::View<float>, backend::CView<float>,
                                       backend::CView<float>, index_t, index_t);

}  // namespace dnmf::solvers::avx512
