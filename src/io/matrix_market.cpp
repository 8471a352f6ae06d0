// Matrix Market coordinate files: a streaming line parser that reports the file and line of every
// problem, a CSR builder (counting sort by row, sort within rows, duplicates summed), and a writer.
// Format reference: "The Matrix Market Exchange Formats: Initial Design" (NIST, 1996).

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "io/input_file.hpp"

namespace dnmf::io {
namespace {

using detail::InputFile;

// Bytes read per refill; a line longer than this simply grows the buffer.
constexpr std::size_t kChunkBytes = std::size_t{16} << 20;

[[noreturn]] void fail_at(const std::string& path, std::size_t line, const std::string& problem) {
  throw Error(path + ":" + std::to_string(line) + ": " + problem);
}

/// A token quoted for a message: control bytes replaced, long tokens cut.
std::string quoted(std::string_view token) {
  constexpr std::size_t kLimit = 60;
  std::string text = "'";
  for (const char c : token.substr(0, kLimit)) text += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return text + (token.size() > kLimit ? "...'" : "'");
}

/// Hands out the lines of a file one at a time, reading it in large chunks so that a multi-gigabyte
/// file never has to be in memory whole. A returned line stays valid until the next call.
class LineSource {
 public:
  explicit LineSource(const InputFile& file) : file_(file) {}

  bool next(std::string_view& line) {
    for (;;) {
      const auto newline = static_cast<const char*>(std::memchr(buffer_.data() + scan_, '\n', buffer_.size() - scan_));
      if (newline != nullptr) {
        const std::size_t end = static_cast<std::size_t>(newline - buffer_.data());
        line = std::string_view(buffer_).substr(start_, end - start_);
        start_ = scan_ = end + 1;
        break;
      }
      if (offset_ == file_.size()) {  // the last line has no newline
        if (start_ == buffer_.size()) return false;
        line = std::string_view(buffer_).substr(start_);
        start_ = scan_ = buffer_.size();
        break;
      }
      refill();
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // files written on Windows
    ++number_;
    return true;
  }

  /// 1-based number of the line last returned.
  [[nodiscard]] std::size_t number() const { return number_; }

 private:
  // Keeps the unfinished line at the front and appends the next chunk of the file after it.
  void refill() {
    buffer_.erase(0, start_);
    scan_ = buffer_.size();
    start_ = 0;
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kChunkBytes, file_.size() - offset_));
    buffer_.resize(scan_ + count);
    file_.read_exact(offset_, buffer_.data() + scan_, count);
    offset_ += count;
  }

  const InputFile& file_;
  std::string buffer_;
  std::uint64_t offset_ = 0;  // file bytes consumed into buffer_
  std::size_t start_ = 0;     // start of the next line within buffer_
  std::size_t scan_ = 0;      // where the search for its newline resumes
  std::size_t number_ = 0;
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

/// Splits the next whitespace-separated token off the front of `rest` (empty when none is left).
std::string_view next_token(std::string_view& rest) {
  std::size_t begin = 0;
  while (begin < rest.size() && is_blank(rest[begin])) ++begin;
  std::size_t end = begin;
  while (end < rest.size() && !is_blank(rest[end])) ++end;
  const std::string_view token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return token;
}

/// The fast path for well-formed lines: parses the next token of `rest` as N in one pass and moves
/// `rest` past it. Returns false, leaving `rest` as it was, when the token is missing or not exactly
/// a number; the caller then takes the slow path that explains the problem.
template <class N>
bool take_number(std::string_view& rest, N& value) {
  std::size_t begin = 0;
  while (begin < rest.size() && is_blank(rest[begin])) ++begin;
  const char* first = rest.data() + begin;
  const char* last = rest.data() + rest.size();
  const auto result = std::from_chars(first, last, value);
  if (result.ec != std::errc() || result.ptr == first || (result.ptr != last && !is_blank(*result.ptr))) {
    return false;
  }
  rest.remove_prefix(static_cast<std::size_t>(result.ptr - rest.data()));
  return true;
}

bool parse_integer(std::string_view token, std::int64_t& value) {
  const auto result = std::from_chars(token.data(), token.data() + token.size(), value);
  return result.ec == std::errc() && result.ptr == token.data() + token.size();
}

// Doubles from 2^128 - 2^103 upwards round to infinity as floats (smaller ones round to FLT_MAX).
constexpr double kFloatOverflow = 0x1.ffffffp127;

/// Parses a real number, explaining what is wrong with it: returns an error text, empty on success.
template <class T>
std::string parse_real(std::string_view token, T& value) {
  if (token.size() > 1 && token[0] == '+' && token[1] != '-' && token[1] != '+') token.remove_prefix(1);
  double number = 0;
  const auto result = std::from_chars(token.data(), token.data() + token.size(), number);
  if (result.ptr != token.data() + token.size() || result.ec == std::errc::invalid_argument) {
    return "bad value " + quoted(token);
  }
  if (result.ec == std::errc::result_out_of_range) {
    // from_chars reports underflow and overflow alike; strtod tells them apart (underflow gives 0).
    number = std::strtod(std::string(token).c_str(), nullptr);
    if (std::isinf(number)) return "value " + quoted(token) + " is too large for double precision";
  }
  if (std::is_same_v<T, float> && std::isfinite(number) && std::abs(number) >= kFloatOverflow) {
    return "value " + quoted(token) + " is too large for single precision (float)";
  }
  value = static_cast<T>(number);
  return {};
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

enum class Field { real, integer, pattern };

struct Banner {
  Field field = Field::real;
  bool symmetric = false;
};

Banner parse_banner(const std::string& path, std::string_view line) {
  std::string_view rest = line;
  if (lower(next_token(rest)) != "%%matrixmarket") {
    fail_at(path, 1, "not a Matrix Market file (the first line must start with '%%MatrixMarket')");
  }
  const std::string object = lower(next_token(rest));
  const std::string format = lower(next_token(rest));
  const std::string field = lower(next_token(rest));
  const std::string symmetry = lower(next_token(rest));
  if (symmetry.empty()) {
    fail_at(path, 1,
            "malformed header line " + quoted(line) +
                " (expected '%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric>')");
  }
  if (object != "matrix") fail_at(path, 1, "unsupported object " + quoted(object) + " (expected 'matrix')");
  if (format == "array") {
    fail_at(path, 1,
            "dense 'array' Matrix Market files are not supported; convert to 'coordinate' format or save the "
            "matrix as .npy");
  }
  if (format != "coordinate") fail_at(path, 1, "unknown format " + quoted(format) + " (expected 'coordinate')");
  Banner banner;
  if (field == "real" || field == "double") {
    banner.field = Field::real;
  } else if (field == "integer") {
    banner.field = Field::integer;
  } else if (field == "pattern") {
    banner.field = Field::pattern;
  } else {
    fail_at(path, 1, "unsupported field " + quoted(field) + " (expected real, integer or pattern)");
  }
  if (symmetry == "symmetric") {
    banner.symmetric = true;
  } else if (symmetry != "general") {
    fail_at(path, 1, "unsupported symmetry " + quoted(symmetry) + " (expected general or symmetric)");
  }
  return banner;
}

struct Size {
  index_t rows = 0;
  index_t cols = 0;
  index_t entries = 0;
  std::size_t line = 0;  // where the size line is, for later messages
};

/// Skips comment and blank lines; true with `line` set to the next line of content.
bool next_content_line(LineSource& lines, std::string_view& line) {
  while (lines.next(line)) {
    std::size_t first = 0;
    while (first < line.size() && is_blank(line[first])) ++first;
    if (first < line.size() && line[first] != '%') return true;
  }
  return false;
}

Size parse_size_line(const std::string& path, LineSource& lines, const Banner& banner) {
  std::string_view line;
  if (!next_content_line(lines, line)) {
    fail_at(path, lines.number() + 1, "missing size line 'rows columns entries' (the file ends after the header)");
  }
  std::string_view rest = line;
  std::int64_t numbers[3] = {};
  bool ok = true;
  for (std::int64_t& number : numbers) ok = ok && parse_integer(next_token(rest), number) && number >= 0;
  if (!ok || !next_token(rest).empty()) {
    fail_at(path, lines.number(), "malformed size line " + quoted(line) + " (expected 'rows columns entries')");
  }
  const Size size{numbers[0], numbers[1], numbers[2], lines.number()};
  if (size.cols > std::numeric_limits<col_index_t>::max()) {
    fail_at(path, size.line,
            "matrix has " + std::to_string(size.cols) + " columns; at most " +
                std::to_string(std::numeric_limits<col_index_t>::max()) + " are supported (column indices are 32-bit)");
  }
  if (banner.symmetric && size.rows != size.cols) {
    fail_at(path, size.line,
            "a symmetric matrix must be square, but the size line says " + std::to_string(size.rows) + "x" +
                std::to_string(size.cols));
  }
  return size;
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

/// Parses the value of an entry from `rest` (the line after its indices) and moves `rest` past it.
template <class T>
T parse_value(const std::string& path, std::size_t line_number, std::string_view& rest, Field field) {
  if (field == Field::pattern) return T(1);
  double number = 0;
  std::string_view after = rest;
  if (field == Field::real && take_number(after, number) &&
      (std::is_same_v<T, double> || std::abs(number) < kFloatOverflow)) {
    rest = after;
    return static_cast<T>(number);
  }
  const std::string_view token = next_token(rest);
  if (token.empty()) fail_at(path, line_number, "missing value after the row and column indices");
  T value{};
  if (field == Field::integer) {
    std::int64_t integer = 0;
    if (!parse_integer(token, integer)) fail_at(path, line_number, "bad integer value " + quoted(token));
    value = static_cast<T>(integer);
  } else if (const std::string problem = parse_real(token, value); !problem.empty()) {
    fail_at(path, line_number, problem);
  }
  return value;
}

/// Parses "row col [value]" (1-based) from one entry line into 0-based indices and a value.
template <class T>
void parse_entry(const std::string& path, std::size_t line_number, std::string_view line, const Banner& banner,
                 const Size& size, index_t& row, index_t& col, T& value) {
  std::string_view rest = line;
  const auto index = [&](const char* what, index_t extent) {
    std::int64_t number = 0;
    if (!take_number(rest, number)) {
      const std::string_view token = next_token(rest);
      if (token.empty()) fail_at(path, line_number, std::string("missing ") + what + " index");
      fail_at(path, line_number, std::string("bad ") + what + " index " + quoted(token));
    }
    if (number < 1 || number > extent) {
      fail_at(path, line_number,
              std::string(what) + " index " + std::to_string(number) + " out of range 1.." + std::to_string(extent));
    }
    return number - 1;
  };
  row = index("row", size.rows);
  col = index("column", size.cols);
  value = parse_value<T>(path, line_number, rest, banner.field);
  if (const std::string_view extra = next_token(rest); !extra.empty()) {
    fail_at(path, line_number,
            "unexpected " + quoted(extra) + " after the entry" +
                (banner.field == Field::pattern ? " (a pattern entry is just 'row column')" : ""));
  }
}

template <class T>
Triplets<T> read_entries(const std::string& path, LineSource& lines, const Banner& banner, const Size& size,
                         std::uint64_t file_size) {
  Triplets<T> entries;
  // Trust the announced count for reserving only as far as the file could hold that many lines.
  const std::uint64_t plausible = std::min<std::uint64_t>(static_cast<std::uint64_t>(size.entries), file_size / 4 + 1);
  const std::uint64_t expected = banner.symmetric ? 2 * plausible : plausible;
  entries.rows.reserve(expected);
  entries.cols.reserve(expected);
  entries.values.reserve(expected);

  index_t seen = 0;
  std::string_view line;
  while (next_content_line(lines, line)) {
    if (seen == size.entries) {
      fail_at(
          path, lines.number(),
          "more entries than the " + std::to_string(size.entries) + " announced on line " + std::to_string(size.line));
    }
    index_t row = 0;
    index_t col = 0;
    T value{};
    parse_entry(path, lines.number(), line, banner, size, row, col, value);
    entries.push(row, col, value);
    if (banner.symmetric && row != col) entries.push(col, row, value);  // only one triangle is stored
    ++seen;
  }
  if (seen < size.entries) {
    fail_at(path, lines.number() + 1,
            "truncated: the file ends after " + std::to_string(seen) + " of the " + std::to_string(size.entries) +
                " entries announced on line " + std::to_string(size.line));
  }
  return entries;
}

// Short rows, the common case, are sorted in place; longer ones through a scratch array.
constexpr index_t kInsertionSortLimit = 32;

/// Stable sort of (index, value) pairs by index.
template <class T>
void insertion_sort(col_index_t* indices, T* values, index_t count) {
  for (index_t k = 1; k < count; ++k) {
    const col_index_t index = indices[k];
    const T value = values[k];
    index_t hole = k;
    for (; hole > 0 && indices[hole - 1] > index; --hole) {
      indices[hole] = indices[hole - 1];
      values[hole] = values[hole - 1];
    }
    indices[hole] = index;
    values[hole] = value;
  }
}

/// Stable sort of one row's entries by column.
template <class T>
void sort_row(col_index_t* indices, T* values, index_t count, std::vector<std::pair<col_index_t, T>>& scratch) {
  if (std::is_sorted(indices, indices + count)) return;  // the usual case for files written row by row
  if (count <= kInsertionSortLimit) {
    insertion_sort(indices, values, count);
    return;
  }
  scratch.clear();
  for (index_t k = 0; k < count; ++k) scratch.emplace_back(indices[k], values[k]);
  std::stable_sort(scratch.begin(), scratch.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (index_t k = 0; k < count; ++k) std::tie(indices[k], values[k]) = scratch[k];
}

/// Sorts each row's entries by column (stably, so duplicates are summed in file order) and merges
/// duplicates; the row pointers are rewritten for the compacted arrays.
template <class T>
void sort_and_merge_rows(index_t rows, std::vector<index_t>& indptr, std::vector<col_index_t>& indices,
                         std::vector<T>& values) {
  std::vector<std::pair<col_index_t, T>> scratch;
  index_t write = 0;
  for (index_t i = 0; i < rows; ++i) {
    const index_t begin = indptr[i];
    const index_t end = indptr[i + 1];
    indptr[i] = write;
    sort_row(indices.data() + begin, values.data() + begin, end - begin, scratch);
    for (index_t k = begin; k < end; ++k) {
      if (write > indptr[i] && indices[write - 1] == indices[k]) {
        values[write - 1] += values[k];
      } else {
        indices[write] = indices[k];
        values[write] = values[k];
        ++write;
      }
    }
  }
  indptr[rows] = write;
  indices.resize(write);
  values.resize(write);
}

template <class T>
CsrMatrix<T> build_csr(index_t rows, index_t cols, Triplets<T> entries) {
  const std::size_t count = entries.values.size();
  std::vector<index_t> indptr(static_cast<std::size_t>(rows) + 1, 0);
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

  sort_and_merge_rows(rows, indptr, indices, values);
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

}  // namespace

template <class T>
CsrMatrix<T> read_mtx(const std::string& path) {
  const InputFile file(path);
  LineSource lines(file);
  std::string_view first;
  if (!lines.next(first)) fail_at(path, 1, "empty file (expected a '%%MatrixMarket' header line)");
  const Banner banner = parse_banner(path, first);
  const Size size = parse_size_line(path, lines, banner);
  try {
    return build_csr(size.rows, size.cols, read_entries<T>(path, lines, banner, size, file.size()));
  } catch (const std::bad_alloc&) {
    throw Error(path + ": out of memory while reading a " + std::to_string(size.rows) + "x" +
                std::to_string(size.cols) + " matrix with " + std::to_string(size.entries) + " entries");
  } catch (const std::length_error&) {
    throw Error(path + ": out of memory while reading a " + std::to_string(size.rows) + "x" +
                std::to_string(size.cols) + " matrix with " + std::to_string(size.entries) + " entries");
  }
}

template <class T>
void write_mtx(const std::string& path, CsrView<T> matrix) {
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
template void write_mtx<float>(const std::string&, CsrView<float>);
template void write_mtx<double>(const std::string&, CsrView<double>);

}  // namespace dnmf::io
