// nnls_bpp for callers that solve many small problems one after another (the masked BPP solves one k x k system
// per column): the same solver and answers, with its arrays kept between calls so that a call allocates nothing
// once they have grown to the problem's size. At k = 16 the allocations of a fresh call cost about as much as
// its pivoting.
#pragma once

#include <memory>

#include "dnmf/matrix.hpp"
#include "dnmf/nnls.hpp"

namespace dnmf {

/// The arrays one nnls_bpp call works in, kept for the next call. One per thread: a call uses them alone.
class NnlsBuffers {
 public:
  NnlsBuffers();
  ~NnlsBuffers();
  NnlsBuffers(NnlsBuffers&&) noexcept;
  NnlsBuffers& operator=(NnlsBuffers&&) noexcept;
  NnlsBuffers(const NnlsBuffers&) = delete;
  NnlsBuffers& operator=(const NnlsBuffers&) = delete;

  /// The arrays themselves (defined in nnls_bpp.cpp).
  struct Parts;

 private:
  template <class T>
  friend NnlsStats nnls_bpp(DenseView<const T>, DenseView<const T>, DenseView<T>, const NnlsOptions&, NnlsBuffers&);
  std::unique_ptr<Parts> parts_;
};

/// nnls_bpp (dnmf/nnls.hpp) working in `buffers`: the same result as a call without them.
template <class T>
NnlsStats nnls_bpp(DenseView<const T> G, DenseView<const T> B, DenseView<T> X, const NnlsOptions& options,
                   NnlsBuffers& buffers);

extern template NnlsStats nnls_bpp<float>(DenseView<const float>, DenseView<const float>, DenseView<float>,
                                          const NnlsOptions&, NnlsBuffers&);
extern template NnlsStats nnls_bpp<double>(DenseView<const double>, DenseView<const double>, DenseView<double>,
                                           const NnlsOptions&, NnlsBuffers&);

}  // namespace dnmf
