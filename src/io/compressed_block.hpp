// dnmf internal: one process's CSR block of a matrix stored compressed by rows (CSR) or by columns (CSC, the CSR
// of Aᵀ), as HDF5 groups and scipy's .npz files hold it. The readers walk the block's major lines (rows of CSR,
// columns of CSC) and hand every entry over; this keeps the block's entries, checks each one, and turns a CSC
// block into CSR at the end. Shared so that both readers say the same thing about the same fault.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "dist/grid.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "dnmf/matrix.hpp"
#include "io/csr_build.hpp"

namespace dnmf::io::detail {

/// How a compressed matrix is stored, with the words messages use for its lines.
struct Compression {
  bool by_columns = false;  ///< CSC: indptr runs over columns, indices are row indices
  [[nodiscard]] const char* major() const { return by_columns ? "column" : "row"; }
  [[nodiscard]] const char* minor() const { return by_columns ? "row" : "column"; }
};

/// Checks a whole indptr of `lines` + 1 offsets: starts at 0, never decreases, ends at `stored`.
inline void check_indptr(const std::string& where, Compression c, const std::vector<std::int64_t>& indptr,
                         std::int64_t stored) {
  const std::size_t lines = indptr.size() - 1;
  if (indptr.front() != 0 || indptr.back() != stored) {
    throw DataError(where + ": 'indptr' runs from " + std::to_string(indptr.front()) + " to " +
                    std::to_string(indptr.back()) + "; expected 0 to " + std::to_string(stored) +
                    " (the length of 'data')");
  }
  for (std::size_t i = 0; i < lines; ++i) {
    if (indptr[i + 1] < indptr[i]) {
      throw DataError(where + ": 'indptr' decreases at " + c.major() + " " + std::to_string(i) + " (from " +
                      std::to_string(indptr[i]) + " to " + std::to_string(indptr[i + 1]) + ")");
    }
  }
}

template <class T>
class CompressedBlock {
 public:
  /// The block rows x cols of a rows_total x cols_total matrix stored as `c` says; `where` starts messages.
  /// `check_entries` false keeps negative, NaN and infinite values as stored (a masked run checks the observed
  /// ones itself, and NaN may mean missing).
  CompressedBlock(std::string where, Compression c, dist::Range rows, dist::Range cols, index_t rows_total,
                  index_t cols_total, bool check_entries = true)
      : where_(std::move(where)),
        c_(c),
        check_entries_(check_entries),
        major_(c.by_columns ? cols : rows),
        minor_(c.by_columns ? rows : cols),
        minor_total_(c.by_columns ? rows_total : cols_total) {
    // Indices are 32-bit within a block: the minor extent while collecting, and the major one after a transpose.
    const auto too_large = [&](index_t extent, const char* what) {
      if (extent > std::numeric_limits<col_index_t>::max()) {
        throw DataError(where_ + ": a block of " + std::to_string(extent) + " " + what +
                        " is too large for 32-bit indices; use more processes");
      }
    };
    too_large(cols.size(), "columns");
    if (c.by_columns) too_large(rows.size(), "rows");
    indptr_.assign(to_size(major_.size()) + 1, 0);
  }

  /// Room for `entries` entries of the block, so that adding them allocates once.
  void reserve(std::size_t entries) {
    indices_.reserve(entries);
    values_.reserve(entries);
  }

  /// Entry number `entry` of the file, in major line `line` (global; lines arrive in increasing order), at minor
  /// index `minor` (global) with `value`.
  void add(index_t line, std::int64_t entry, std::int64_t minor, T value) {
    while (current_ < line - major_.first) indptr_[to_size(++current_)] = static_cast<index_t>(indices_.size());
    if (minor < 0 || minor >= minor_total_) {
      throw DataError(where_ + ": " + c_.minor() + " index " + std::to_string(minor) + " of " + c_.major() + " " +
                      std::to_string(line) + " (entry " + std::to_string(entry) + ") is out of range 0.." +
                      std::to_string(minor_total_ - 1));
    }
    if (minor < minor_.first || minor >= minor_.last) return;
    if (check_entries_ && !acceptable_entry(value)) {
      const index_t row = c_.by_columns ? minor : line, col = c_.by_columns ? line : minor;
      throw DataError(where_ + ": " + describe_bad_entry(row, col, value));
    }
    indices_.push_back(static_cast<col_index_t>(minor - minor_.first));
    values_.push_back(value);
  }

  /// The block as CSR, columns sorted and duplicates summed within each row.
  CsrMatrix<T> finish() && {
    const index_t lines = major_.size();
    while (current_ < lines) indptr_[to_size(++current_)] = static_cast<index_t>(indices_.size());
    MergeOverflow overflow;
    sort_and_merge_rows(lines, indptr_, indices_, values_, &overflow);
    if (check_entries_ && overflow.count > 0) {  // unchecked: the caller checks the entries it reads
      const index_t line = major_.first + overflow.row, minor = minor_.first + overflow.col;
      throw DataError(where_ + ": " +
                      describe_overflowed_sum<T>(c_.by_columns ? minor : line, c_.by_columns ? line : minor, 0));
    }
    CsrMatrix<T> block(lines, minor_.size(), std::move(indptr_), std::move(indices_), std::move(values_));
    return c_.by_columns ? transpose(block) : block;
  }

 private:
  std::string where_;
  Compression c_;
  bool check_entries_;
  dist::Range major_, minor_;
  index_t minor_total_;
  index_t current_ = 0;  // local major line whose entries are being added
  std::vector<index_t> indptr_;
  std::vector<col_index_t> indices_;
  std::vector<T> values_;
};

}  // namespace dnmf::io::detail
