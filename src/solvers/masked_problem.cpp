// See masked_problem.hpp.

#include "solvers/masked_problem.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "solvers/masked_block.hpp"
#include "solvers/masked_checks.hpp"

namespace dnmf::solvers {
namespace {

std::string shape_text(index_t rows, index_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

/// Rows and columns of the stored matrix in A's orientation.
template <class T>
std::pair<index_t, index_t> shape_of(const StoredMatrix<T>& s) {
  const index_t r = rows_of(*s.matrix), c = cols_of(*s.matrix);
  return s.transposed ? std::pair{c, r} : std::pair{r, c};
}

}  // namespace

template <class T>
MaskedProblem<T> build_masked_problem(const StoredMatrix<T>& a, const StoredMatrix<T>& mask,
                                      const MissingValues& missing, bool to_fit) {
  const auto [m, n] = shape_of(a);
  if (mask.matrix != nullptr) {
    const auto [mr, mc] = shape_of(mask);
    if (mr != m || mc != n)
      throw DataError(mask.name + ": the mask is " + shape_text(mr, mc) + " but " + a.name + " is " + shape_text(m, n) +
                      " (a mask must have A's shape)");
  }
  if (missing.unstored == Unstored::missing && !is_sparse(*a.matrix))
    throw UsageError(a.name +
                     ": --unstored missing applies to a sparse matrix; this one is dense (use --mask or "
                     "--missing nan)");
  // The whole matrix as the one block of a 1 x 1 grid: the same checks, messages and choices.
  MaskedBlock<T> whole = build_masked_block(a, mask, missing, {0, m}, {0, n});
  MaskedProblem<T>& p = whole.problem;
  if (to_fit) require_observed(p.observed, p.weighted_squared_norm, p.weighted_sum, p.weight_sum, a.name);
  choose_gram_lists(whole);
  for (MaskedHalf<T>* h : {&p.h_half, &p.w_half}) {
    const std::vector<unsigned char> seen = observed_columns(*h);
    h->unobserved.assign(seen.size(), 0);
    for (std::size_t j = 0; j < seen.size(); ++j) h->unobserved[j] = seen[j] != 0 ? 0 : 1;
  }
  p.unobserved_cols = std::count(p.h_half.unobserved.begin(), p.h_half.unobserved.end(), 1);
  p.unobserved_rows = std::count(p.w_half.unobserved.begin(), p.w_half.unobserved.end(), 1);
  return std::move(p);
}

template MaskedProblem<float> build_masked_problem<float>(const StoredMatrix<float>&, const StoredMatrix<float>&,
                                                          const MissingValues&, bool);
template MaskedProblem<double> build_masked_problem<double>(const StoredMatrix<double>&, const StoredMatrix<double>&,
                                                            const MissingValues&, bool);

}  // namespace dnmf::solvers
