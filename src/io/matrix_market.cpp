// Matrix Market coordinate files read whole (the header and entry parsing is mtx_parse's, shared with the
// collective reader) into CSR (counting sort by row, then csr_build's row canonicalisation), and a writer.
// Format reference: "The Matrix Market Exchange Formats: Initial Design" (NIST, 1996).

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/csr_build.hpp"
#include "io/csr_to_write.hpp"
#include "io/input_file.hpp"
#include "io/mtx_lines.hpp"
#include "io/mtx_parse.hpp"

namespace dnmf::io {
namespace {

using detail::InputFile;

// Bytes read per refill; a line longer than this simply grows the buffer.
constexpr std::size_t kChunkBytes = std::size_t{16} << 20;

[[noreturn]] void fail_at(const std::string& path, index_t line, const std::string& problem) {
  throw DataError(path + ":" + std::to_string(line) + ": " + problem);
}

template <class T>
struct Triplets {
  std::vector<index_t> rows;  // 0-based
  std::vector<col_index_t> cols;
  std::vector<T> values;

  void push(index_t row, index_t col, T value) {
    rows.push_back(row);
    cols.push_back(static_cast<col_index_t>(col));
    values.push_back(value);
  }
};

/// Every entry line after the header, parsed and checked, with the file's line number in each error.
template <class T>
Triplets<T> read_entries(const InputFile& file, const mtx::Header& header) {
  const std::string& path = file.path();
  Triplets<T> entries;
  // Trust the announced count for reserving only as far as the file could hold that many lines.
  const std::uint64_t plausible =
      std::min<std::uint64_t>(static_cast<std::uint64_t>(header.entries), file.size() / 4 + 1);
  const std::uint64_t expected = header.symmetric ? 2 * plausible : plausible;
  entries.rows.reserve(expected);
  entries.cols.reserve(expected);
  entries.values.reserve(expected);

  mtx::RangeLines lines(file, header.data_offset, header.data_offset, file.size(), kChunkBytes);
  index_t number = header.size_line;
  index_t seen = 0;
  std::string_view line;
  while (lines.next(line)) {
    ++number;
    if (!mtx::is_content(line)) continue;
    if (seen == header.entries) {
      fail_at(path, number,
              "more entries than the " + std::to_string(header.entries) + " announced on line " +
                  std::to_string(header.size_line));
    }
    index_t row = 0;
    index_t col = 0;
    T value{};
    if (const std::string problem = mtx::parse_entry(line, header, row, col, value); !problem.empty()) {
      fail_at(path, number, problem);
    }
    entries.push(row, col, value);
    if (header.symmetric && row != col) entries.push(col, row, value);  // only one triangle is stored
    ++seen;
  }
  if (seen < header.entries) {
    fail_at(path, number + 1,
            "truncated: the file ends after " + std::to_string(seen) + " of the " + std::to_string(header.entries) +
                " entries announced on line " + std::to_string(header.size_line));
  }
  return entries;
}

template <class T>
CsrMatrix<T> build_csr(index_t rows, index_t cols, Triplets<T> entries, bool sum_duplicates,
                       detail::MergeOverflow* overflow) {
  const std::size_t count = entries.values.size();
  std::vector<index_t> indptr(to_size(rows) + 1, 0);
  for (const index_t row : entries.rows) ++indptr[row + 1];
  for (index_t i = 0; i < rows; ++i) indptr[i + 1] += indptr[i];

  // Counting sort by row keeps file order within each row.
  std::vector<col_index_t> indices(count);
  std::vector<T> values(count);
  std::vector<index_t> next(indptr.begin(), indptr.end() - 1);
  for (std::size_t k = 0; k < count; ++k) {
    const index_t position = next[entries.rows[k]]++;
    indices[position] = entries.cols[k];
    values[position] = entries.values[k];
  }
  entries = {};
  next = {};

  if (sum_duplicates) {
    detail::sort_and_merge_rows(rows, indptr, indices, values, overflow);
  } else {
    detail::sort_rows(rows, indptr, indices, values);
  }
  return CsrMatrix<T>(rows, cols, std::move(indptr), std::move(indices), std::move(values));
}

// ---------------------------------------------------------------------------------------------
// Writing.

template <class T>
void append_value(std::string& out, T value) {
  // 17 / 9 significant digits round-trip double / float exactly (same as printf's %.17g / %.9g).
  constexpr int kDigits = sizeof(T) == 8 ? 17 : 9;
  char text[64];
  const auto result = std::to_chars(text, text + sizeof(text), value, std::chars_format::general, kDigits);
  out.append(text, result.ptr);
}

void append_integer(std::string& out, std::int64_t value) {
  char text[24];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  out.append(text, result.ptr);
}

template <class T>
CsrMatrix<T> read_csr(const std::string& path, bool sum_duplicates) {
  const InputFile file(path);
  const mtx::Header header = mtx::read_header(file);
  const auto out_of_memory = [&] {
    return Error(path + ": out of memory while reading a " + std::to_string(header.rows) + "x" +
                 std::to_string(header.cols) + " matrix with " + std::to_string(header.entries) + " entries");
  };
  try {
    detail::MergeOverflow overflow;
    CsrMatrix<T> csr = build_csr(header.rows, header.cols, read_entries<T>(file, header), sum_duplicates, &overflow);
    if (overflow.count > 0)
      throw DataError(path + ": " + detail::describe_overflowed_sum<T>(overflow.row, overflow.col, 1));
    return csr;
  } catch (const std::bad_alloc&) {
    throw out_of_memory();
  } catch (const std::length_error&) {
    throw out_of_memory();
  }
}

}  // namespace

template <class T>
CsrMatrix<T> read_mtx(const std::string& path) {
  return read_csr<T>(path, true);
}

template <class T>
CsrMatrix<T> read_mtx_lines(const std::string& path) {
  return read_csr<T>(path, false);
}

template <class T>
void write_mtx(const std::string& path, CsrView<T> matrix) {
  detail::check_csr_to_write(path, matrix);
  write_file_atomically(path, [&](std::ostream& out) {
    constexpr std::size_t kFlushBytes = std::size_t{1} << 20;
    std::string text = "%%MatrixMarket matrix coordinate real general\n";
    text.reserve(kFlushBytes + 128);
    append_integer(text, matrix.rows);
    text += ' ';
    append_integer(text, matrix.cols);
    text += ' ';
    append_integer(text, matrix.nnz());
    text += '\n';
    for (index_t i = 0; i < matrix.rows; ++i) {
      for (index_t k = matrix.indptr[i]; k < matrix.indptr[i + 1]; ++k) {
        append_integer(text, i + 1);
        text += ' ';
        append_integer(text, index_t{matrix.indices[k]} + 1);
        text += ' ';
        append_value(text, matrix.values[k]);
        text += '\n';
      }
      if (text.size() >= kFlushBytes) {
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        text.clear();
      }
    }
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
  });
}

template CsrMatrix<float> read_mtx<float>(const std::string&);
template CsrMatrix<double> read_mtx<double>(const std::string&);
template CsrMatrix<double> read_mtx_lines<double>(const std::string&);
template void write_mtx<float>(const std::string&, CsrView<float>);
template void write_mtx<double>(const std::string&, CsrView<double>);

}  // namespace dnmf::io
