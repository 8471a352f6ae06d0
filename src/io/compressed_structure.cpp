// The structure check of in-memory compressed sources (include/dnmf/source.hpp). In io, below api: the CSR
// writers check their views with it too.

#include <algorithm>
#include <limits>
#include <string>

#include "dnmf/error.hpp"
#include "dnmf/source.hpp"

namespace dnmf::detail {

namespace {

// True when every line's indices are in [0, inner) and strictly increasing. One branch-free pass over all the
// indices counts the places where an index does not exceed its predecessor; a good matrix has such places only
// where a line starts, and those are counted over the lines. Per line, the loop of a text matrix's few dozen
// entries ran at scalar speed in its prologue and tail (0.5 ms of a 14 ms one-iteration fit from Python on 1e6
// entries); a bad matrix is scanned again below for the message.
bool well_ordered(index_t outer, index_t inner, const index_t* indptr, const col_index_t* indices) {
  const index_t first = indptr[0], last = indptr[outer];
  if (last == first) return true;
  index_t descents = 0;
  col_index_t low = indices[first], high = indices[first];
  for (index_t p = first + 1; p < last; ++p) {
    descents += indices[p] <= indices[p - 1] ? 1 : 0;
    low = std::min(low, indices[p]);
    high = std::max(high, indices[p]);
  }
  if (low < 0 || static_cast<index_t>(high) >= inner) return false;
  index_t at_line_starts = 0;
  for (index_t i = 1; i < outer; ++i) {
    const index_t p = indptr[i];  // counted once, by the non-empty line that starts there
    if (p > first && p < indptr[i + 1]) at_line_starts += indices[p] <= indices[p - 1] ? 1 : 0;
  }
  return descents == at_line_starts;
}

}  // namespace

void check_compressed(const char* what, index_t outer, index_t inner, const index_t* indptr, const col_index_t* indices,
                      index_t stored) {
  const std::string where = std::string("sparse ") + what + " matrix: ";
  const char* line = std::string(what) == "CSC" ? "column " : "row ";
  if (outer < 0 || inner < 0)
    throw DataError(where + "negative shape " + std::to_string(outer) + "x" + std::to_string(inner));
  // The indices are 32-bit (col_index_t): a wider matrix cannot be indexed, and its k x inner factor was
  // allocated (or tried) before anything said so.
  if (inner > std::numeric_limits<col_index_t>::max())
    throw DataError(where + std::to_string(inner) + (std::string(what) == "CSC" ? " rows" : " columns") +
                    " do not fit the 32-bit indices (at most " +
                    std::to_string(std::numeric_limits<col_index_t>::max()) + "); split the matrix");
  if (outer == 0) return;
  if (indptr == nullptr) throw DataError(where + "no indptr array");
  if (indptr[0] != 0) throw DataError(where + "indptr[0] is " + std::to_string(indptr[0]) + ", not 0");
  for (index_t i = 0; i < outer; ++i)
    if (indptr[i + 1] < indptr[i])
      throw DataError(where + "indptr decreases at " + line + std::to_string(i) + " (from " +
                      std::to_string(indptr[i]) + " to " + std::to_string(indptr[i + 1]) + ")");
  if (indptr[outer] != stored)
    throw DataError(where + "indptr ends at " + std::to_string(indptr[outer]) + " but there are " +
                    std::to_string(stored) + " stored entries");
  if (stored > 0 && indices == nullptr) throw DataError(where + "no indices array");
  if (well_ordered(outer, inner, indptr, indices)) return;
  for (index_t i = 0; i < outer; ++i)
    for (index_t p = indptr[i]; p < indptr[i + 1]; ++p) {
      if (indices[p] < 0 || indices[p] >= inner)
        throw DataError(where + "index " + std::to_string(indices[p]) + " in " + line + std::to_string(i) +
                        " is out of range 0.." + std::to_string(inner - 1));
      if (p > indptr[i] && indices[p] <= indices[p - 1])
        throw DataError(where + "indices of " + line + std::to_string(i) + " are not sorted and unique (" +
                        std::to_string(indices[p - 1]) + " then " + std::to_string(indices[p]) + ")");
    }
}

}  // namespace dnmf::detail
