// dnmf internal: a Matrix Market file's entry lines as given, for the statistics `dnmf info` shows.
#pragma once

#include <string>

#include "dnmf/matrix.hpp"

namespace dnmf::io {

/// Every entry line of the Matrix Market file `path` as its own stored entry (a symmetric file's off-diagonal
/// lines twice, as both triangles), each row sorted by column with duplicate positions side by side, not summed.
/// `dnmf factor` checks each line's value before duplicates are summed; counting from these entries lets
/// `dnmf info` report the same negatives. Errors as read_mtx.
template <class T>
CsrMatrix<T> read_mtx_lines(const std::string& path);

}  // namespace dnmf::io
