#include "backend/reference/reference_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/update_rules.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend {
namespace {

// Visits the stored entries of A as (row, column, value); for a dense A that is every entry.
template <class T, class F>
void for_each_entry(const MatrixRef<T>& a, F&& f) {
  if (const auto* d = std::get_if<DenseView<const T>>(&a)) {
    for (index_t j = 0; j < d->cols; ++j)
      for (index_t i = 0; i < d->rows; ++i) f(i, j, (*d)(i, j));
    return;
  }
  const auto& s = std::get<CsrView<T>>(a);
  for (index_t i = 0; i < s.rows; ++i)
    for (index_t p = s.indptr[i]; p < s.indptr[i + 1]; ++p) f(i, static_cast<index_t>(s.indices[p]), s.values[p]);
}

// (A, side) -> element (i, j) of A contributes a_ij * Y[:, j_or_i] to out[:, i_or_j].
template <class T>
void accumulate(std::vector<double>& acc, index_t k, Side side, CView<T> y, index_t i, index_t j, double v) {
  const index_t dst = side == Side::H ? j : i;
  const index_t src = side == Side::H ? i : j;
  for (index_t l = 0; l < k; ++l) acc[to_size(l + dst * k)] += v * static_cast<double>(y(l, src));
}

template <class T>
void store(const std::vector<double>& acc, View<T> out, T beta) {
  for (index_t c = 0; c < out.cols; ++c)
    for (index_t l = 0; l < out.rows; ++l) {
      const double prior = beta == T(0) ? 0.0 : static_cast<double>(beta) * static_cast<double>(out(l, c));
      out(l, c) = static_cast<T>(acc[to_size(l + c * out.rows)] + prior);
    }
}

}  // namespace

template <class T>
T* ReferenceKernels<T>::allocate(std::size_t count) {
  return new T[std::max<std::size_t>(count, 1)]();
}
template <class T>
void ReferenceKernels<T>::deallocate(T* ptr) noexcept {
  delete[] ptr;
}
template <class T>
void ReferenceKernels<T>::copy_to_backend(const T* host, T* dst, std::size_t count) {
  if (count > 0) std::memcpy(dst, host, count * sizeof(T));
}
template <class T>
void ReferenceKernels<T>::copy_to_host(const T* src, T* host, std::size_t count) {
  if (count > 0) std::memcpy(host, src, count * sizeof(T));
}

template <class T>
void ReferenceKernels<T>::multiply(const MatrixRef<T>& a, Side side, CView<T> y, View<T> out, T beta) {
  std::vector<double> acc(to_size(out.rows * out.cols), 0.0);
  for_each_entry(a,
                 [&](index_t i, index_t j, T v) { accumulate(acc, out.rows, side, y, i, j, static_cast<double>(v)); });
  store(acc, out, beta);
}

template <class T>
KlSums ReferenceKernels<T>::kl_multiply(const MatrixRef<T>& a, Side side, CView<T> y, CView<T> x, View<T> out, T beta) {
  const CView<T> wt = side == Side::H ? y : x;
  const CView<T> h = side == Side::H ? x : y;
  std::vector<double> acc(to_size(out.rows * out.cols), 0.0);
  KlSums sums;
  for_each_entry(a, [&](index_t i, index_t j, T v) {
    double m = 0;
    for (index_t l = 0; l < wt.rows; ++l) m += static_cast<double>(wt(l, i)) * static_cast<double>(h(l, j));
    const double av = static_cast<double>(v);
    const double ratio = kl_ratio(av, m);
    sums.a_times_m += av * m;
    if (av > 0) sums.a_log_a_over_m += av * std::log(av / std::max(m, kl_model_floor));
    accumulate(acc, out.rows, side, y, i, j, ratio);
  });
  store(acc, out, beta);
  return sums;
}

template <class T>
MatrixStats ReferenceKernels<T>::stats(const MatrixRef<T>& a) {
  MatrixStats s;
  for_each_entry(a, [&](index_t, index_t, T v) {
    s.sum += static_cast<double>(v);
    s.squared_norm += static_cast<double>(v) * static_cast<double>(v);
  });
  return s;
}

template <class T>
void ReferenceKernels<T>::gram(CView<T> x, View<T> g, T beta) {
  for (index_t p = 0; p < x.rows; ++p)
    for (index_t q = 0; q < x.rows; ++q) {
      double s = beta == T(0) ? 0.0 : static_cast<double>(beta) * static_cast<double>(g(p, q));
      for (index_t c = 0; c < x.cols; ++c) s += static_cast<double>(x(p, c)) * static_cast<double>(x(q, c));
      g(p, q) = static_cast<T>(s);
    }
}

template <class T>
bool ReferenceKernels<T>::gram_f64(CView<T> x, double* g) {
  for (index_t p = 0; p < x.rows; ++p)
    for (index_t q = 0; q < x.rows; ++q) {
      double s = 0;
      for (index_t c = 0; c < x.cols; ++c) s += static_cast<double>(x(p, c)) * static_cast<double>(x(q, c));
      g[p + q * x.rows] = s;
    }
  return true;
}

template <class T>
void ReferenceKernels<T>::fill(View<T> x, T value) {
  for (index_t c = 0; c < x.cols; ++c)
    for (index_t l = 0; l < x.rows; ++l) x(l, c) = value;
}

template <class T>
double ReferenceKernels<T>::dot(CView<T> x, CView<T> y) {
  double s = 0;
  for (index_t c = 0; c < x.cols; ++c)
    for (index_t l = 0; l < x.rows; ++l) s += static_cast<double>(x(l, c)) * static_cast<double>(y(l, c));
  return s;
}

template <class T>
void ReferenceKernels<T>::row_sums(CView<T> x, T* out) {
  for (index_t l = 0; l < x.rows; ++l) {
    double s = 0;
    for (index_t c = 0; c < x.cols; ++c) s += static_cast<double>(x(l, c));
    out[l] = static_cast<T>(s);
  }
}

template <class T>
int ReferenceKernels<T>::update(const UpdateRule& rule, View<T> x, CView<T> numer, CView<T> g, const T* y_row_sums) {
  return update_columns(rule, x, numer, g, y_row_sums, 0, x.cols);
}

template class ReferenceKernels<float>;
template class ReferenceKernels<double>;

}  // namespace dnmf::backend
