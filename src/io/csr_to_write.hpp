// dnmf internal: the structure check the writers run on a CSR view before they write it.
#pragma once

#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/matrix.hpp"
#include "dnmf/source.hpp"

namespace dnmf::io::detail {

/// Throws DataError naming `path` unless `a` is a CSR matrix its readers accept (indptr never decreasing; column
/// indices in range, increasing within a row): a bad view sent the Matrix Market writer outside its arrays and
/// gave .dcsr, .mtx and HDF5 files their own readers refuse. A view of a larger CSR's rows (indptr starting past
/// 0) is checked as its rebased copy.
template <class T>
void check_csr_to_write(const std::string& path, const CsrView<T>& a) {
  const std::string where = path + ": sparse CSR matrix: ";
  if (a.rows > 0 && a.indptr == nullptr) throw DataError(where + "no indptr array");
  const index_t base = a.rows > 0 ? a.indptr[0] : 0;
  if (base < 0) throw DataError(where + "indptr[0] is " + std::to_string(base));
  std::vector<index_t> rebased(to_size(a.rows > 0 ? a.rows + 1 : 1), 0);
  for (index_t i = 0; i <= a.rows && a.rows > 0; ++i) rebased[to_size(i)] = a.indptr[i] - base;
  try {
    dnmf::detail::check_compressed("CSR", a.rows, a.cols, rebased.data(),
                                   a.indices != nullptr ? a.indices + base : nullptr, rebased.back());
  } catch (const DataError& e) {
    throw DataError(path + ": " + e.what());
  }
  dnmf::detail::check_storage(path.c_str(), a.values, rebased.back(), "values");
}

}  // namespace dnmf::io::detail
