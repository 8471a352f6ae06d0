// The extrapolation step of the alternating iteration, written once for every backend: it is O(k·d) per
// iteration beside the O(k·d·other) products, so a host loop (and on a device, two copies) costs little.
#include <vector>

#include "backend/kernels.hpp"
#include "dnmf/index.hpp"

namespace dnmf::backend {
namespace {

// Packs a k x d view's columns into `out` (k·d values, no padding) through the backend's copies.
template <class T>
void to_host(Kernels<T>& kernels, CView<T> v, std::vector<T>& out) {
  out.resize(to_size(v.rows * v.cols));
  for (index_t c = 0; c < v.cols; ++c)
    kernels.copy_to_host(v.data + c * v.ld, out.data() + to_size(c * v.rows), to_size(v.rows));
}

template <class T>
void to_backend(Kernels<T>& kernels, const std::vector<T>& in, View<T> v) {
  for (index_t c = 0; c < v.cols; ++c)
    kernels.copy_to_backend(in.data() + to_size(c * v.rows), v.data + c * v.ld, to_size(v.rows));
}

}  // namespace

template <class T>
void Kernels<T>::extrapolate(View<T> x_hat, CView<T> x, View<T> x_prev, T beta) {
  if (host_memory()) {
    for (index_t c = 0; c < x.cols; ++c)
      for (index_t l = 0; l < x.rows; ++l) {
        const T now = x(l, c);
        x_hat(l, c) = now + beta * (now - x_prev(l, c));
        x_prev(l, c) = now;
      }
    return;
  }
  std::vector<T> now, prev;
  to_host(*this, x, now);
  to_host(*this, CView<T>(x_prev), prev);
  for (std::size_t i = 0; i < now.size(); ++i) {
    const T v = now[i];
    now[i] = v + beta * (v - prev[i]);
    prev[i] = v;
  }
  to_backend(*this, now, x_hat);
  to_backend(*this, prev, x_prev);
}

template <class T>
void Kernels<T>::copy(CView<T> src, View<T> dst) {
  if (host_memory()) {
    for (index_t c = 0; c < src.cols; ++c)
      for (index_t l = 0; l < src.rows; ++l) dst(l, c) = src(l, c);
    return;
  }
  std::vector<T> values;
  if (src.ld == src.rows && dst.ld == dst.rows) {  // one transfer each way (the iteration's blocks), not per column
    values.resize(to_size(src.rows * src.cols));
    copy_to_host(src.data, values.data(), values.size());
    copy_to_backend(values.data(), dst.data, values.size());
    return;
  }
  to_host(*this, src, values);
  to_backend(*this, values, dst);
}

template void Kernels<float>::copy(CView<float>, View<float>);
template void Kernels<double>::copy(CView<double>, View<double>);
template void Kernels<float>::extrapolate(View<float>, CView<float>, View<float>, float);
template void Kernels<double>::extrapolate(View<double>, CView<double>, View<double>, double);

}  // namespace dnmf::backend
