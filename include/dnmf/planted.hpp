// dnmf: matrices with a planted non-negative factorisation, for demos, tests and benchmarks.
#pragma once

#include <cstdint>

#include "dnmf/matrix.hpp"

namespace dnmf {

/// What to plant. Dense when density is 1, else CSR with about `density` of the entries stored; a density
/// outside (0, 1] is a UsageError.
struct PlantedOptions {
  index_t rows = 0;
  index_t cols = 0;
  index_t rank = 0;
  double density = 1.0;  ///< fraction of non-zero entries of A (sparse output below 1)
  double noise = 0.0;  ///< relative multiplicative noise: a = (WH)·(1 + noise·ξ), ξ of unit variance, clipped at 0
  std::uint64_t seed = 1;
};

/// A = W·H (+ noise) with W (rows x rank) and H (rank x cols) non-negative and partly zero, which makes the
/// factorisation essentially unique, so a solver's W can be compared with the truth.
template <class T>
struct Planted {
  bool sparse = false;
  DenseMatrix<T> dense;  ///< A when !sparse
  CsrMatrix<T> csr;      ///< A when sparse
  DenseMatrix<T> W;
  DenseMatrix<T> H;
  [[nodiscard]] MatrixRef<T> matrix() const { return sparse ? MatrixRef<T>{csr.view()} : MatrixRef<T>{dense.view()}; }
};

/// Builds the planted problem; deterministic for a given seed. Throws dnmf::Error for bad sizes, std::bad_alloc
/// before allocating when the problem would not fit in this machine's physical memory.
template <class T>
Planted<T> make_planted(const PlantedOptions& options);

}  // namespace dnmf
