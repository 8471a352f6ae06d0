// Matrix Market header and entry parsing and byte-range line scanning; see mtx_parse.hpp.
// Format reference: "The Matrix Market Exchange Formats: Initial Design" (NIST, 1996).
#include "io/mtx_parse.hpp"

#include <locale.h>  // newlocale, strtod_l

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <system_error>
#include <type_traits>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "io/narrow.hpp"

namespace dnmf::io::mtx {
namespace {

// Doubles from 2^128 - 2^103 upwards round to infinity as floats.
constexpr double kFloatOverflow = 0x1.ffffffp127;
// Header reads: comment blocks are short; a long one just takes more chunks.
constexpr std::size_t kHeaderChunk = std::size_t{64} << 10;

[[noreturn]] void fail_at(const std::string& path, index_t line, const std::string& problem) {
  throw DataError(path + ":" + std::to_string(line) + ": " + problem);
}

/// A token quoted for a message: control bytes replaced, long tokens cut.
std::string quoted(std::string_view token) {
  constexpr std::size_t kLimit = 60;
  std::string text = "'";
  for (const char c : token.substr(0, kLimit)) text += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return text + (token.size() > kLimit ? "...'" : "'");
}

bool is_blank(char c) { return c == ' ' || c == '\t'; }

std::string_view next_token(std::string_view& rest) {
  std::size_t begin = 0;
  while (begin < rest.size() && is_blank(rest[begin])) ++begin;
  std::size_t end = begin;
  while (end < rest.size() && !is_blank(rest[end])) ++end;
  const std::string_view token = rest.substr(begin, end - begin);
  rest.remove_prefix(end);
  return token;
}

/// Parses the whole of `token` as N; false when it is not exactly a number.
template <class N>
bool parse_number(std::string_view token, N& value) {
  if (token.empty()) return false;
  const auto result = std::from_chars(token.data(), token.data() + token.size(), value);
  return result.ec == std::errc() && result.ptr == token.data() + token.size();
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  return out;
}

void parse_banner(const std::string& path, std::string_view line, Header& header) {
  // A carriage return inside the first line (not just before its newline) means lines that end in CR alone: the
  // whole file reads as one line, whose tokens run together ('general\r3'), so say what is wrong instead.
  const std::size_t cr = line.find('\r');
  if (cr != std::string_view::npos && cr + 1 < line.size()) {
    fail_at(path, 1,
            "lines end in a carriage return alone (old Mac line endings); expected '\\n' or '\\r\\n' line ends "
            "(convert with: tr '\\r' '\\n')");
  }
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
  if (field == "real" || field == "double") {
    header.field = Field::real;
  } else if (field == "integer") {
    header.field = Field::integer;
  } else if (field == "pattern") {
    header.field = Field::pattern;
  } else {
    fail_at(path, 1, "unsupported field " + quoted(field) + " (expected real, integer or pattern)");
  }
  header.symmetric = symmetry == "symmetric";
  if (!header.symmetric && symmetry != "general") {
    fail_at(path, 1, "unsupported symmetry " + quoted(symmetry) + " (expected general or symmetric)");
  }
}

void parse_size(const std::string& path, std::string_view line, Header& header) {
  std::string_view rest = line;
  std::int64_t numbers[3] = {};
  bool ok = true;
  for (std::int64_t& number : numbers) ok = ok && parse_number(next_token(rest), number) && number >= 0;
  if (!ok || !next_token(rest).empty()) {
    fail_at(path, header.size_line, "malformed size line " + quoted(line) + " (expected 'rows columns entries')");
  }
  header.rows = numbers[0];
  header.cols = numbers[1];
  header.entries = numbers[2];
  if (header.cols > std::numeric_limits<col_index_t>::max()) {
    fail_at(path, header.size_line,
            "matrix has " + std::to_string(header.cols) + " columns; at most " +
                std::to_string(std::numeric_limits<col_index_t>::max()) + " are supported (column indices are 32-bit)");
  }
  if (header.symmetric && header.rows != header.cols) {
    fail_at(path, header.size_line,
            "a symmetric matrix must be square, but the size line says " + std::to_string(header.rows) + "x" +
                std::to_string(header.cols));
  }
}

/// Explains why `token` is not a usable real value; empty when it is, with `value` set. "nan" and "inf" parse
/// (the non-negativity check names them later, with the entry's position).
template <class T>
std::string parse_real(std::string_view token, T& value) {
  const std::string_view original = token;
  // from_chars takes no leading '+'; Matrix Market writers sometimes emit one.
  if (token.size() > 1 && token[0] == '+' && token[1] != '-' && token[1] != '+') token.remove_prefix(1);
  double number = 0;
  const auto result = std::from_chars(token.data(), token.data() + token.size(), number);
  if (result.ptr != token.data() + token.size() || result.ec == std::errc::invalid_argument) {
    return "bad value " + quoted(original);
  }
  if (result.ec == std::errc::result_out_of_range) {
    // from_chars reports underflow and overflow alike; strtod tells them apart (underflow gives 0), in the "C"
    // locale: under a decimal-comma locale (a Python caller's setlocale) it stopped at the '.', and 1.5e400 was
    // read as 1.
    static const locale_t c_locale = ::newlocale(LC_ALL_MASK, "C", nullptr);
    number = ::strtod_l(std::string(token).c_str(), nullptr, c_locale);
    if (std::isinf(number))
      return "value " + quoted(original) + " is too large for double precision: rescale the matrix";
    if (number == 0) return "value " + quoted(original) + " underflows to zero in double precision: rescale the matrix";
  }
  if (std::is_same_v<T, float> && number < 0) {  // negative: its entry check says so, whatever its range
    value = narrow_entry<T>(number);
    return {};
  }
  if (std::is_same_v<T, float> && std::isfinite(number) && std::abs(number) >= kFloatOverflow) {
    return "value " + quoted(original) + " is too large for single precision (float): use --precision f64, or " +
           "rescale the matrix";
  }
  if (std::is_same_v<T, float> && number != 0 && static_cast<T>(number) == 0) {
    return "value " + quoted(original) + " underflows to zero in single precision (float): use --precision f64, or " +
           "rescale the matrix";
  }
  value = static_cast<T>(number);
  return {};
}

}  // namespace

bool is_content(std::string_view line) {
  std::size_t first = 0;
  while (first < line.size() && is_blank(line[first])) ++first;
  return first < line.size() && line[first] != '%';
}

Header read_header(const detail::InputFile& file) {
  const std::string& path = file.path();
  RangeLines lines(file, 0, 0, file.size(), kHeaderChunk);
  Header header;
  std::string_view line;
  if (!lines.next(line)) fail_at(path, 1, "empty file (expected a '%%MatrixMarket' header line)");
  parse_banner(path, line, header);
  index_t number = 1;
  for (;;) {
    if (!lines.next(line)) {
      fail_at(path, number + 1, "missing size line 'rows columns entries' (the file ends after the header)");
    }
    ++number;
    if (is_content(line)) break;
  }
  header.size_line = number;
  parse_size(path, line, header);
  header.data_offset = lines.position();
  return header;
}

namespace {

/// The fast path for well-formed lines: parses the next token of `rest` as N in one pass and moves `rest` past
/// it. False (with `rest` unchanged) when the token is missing or not exactly a number: the caller then takes
/// the slow path, which explains the problem.
template <class N>
bool take_number(std::string_view& rest, N& value) {
  std::size_t begin = 0;
  while (begin < rest.size() && is_blank(rest[begin])) ++begin;
  const char* first = rest.data() + begin;
  const char* last = rest.data() + rest.size();
  const auto result = std::from_chars(first, last, value);
  if (result.ec != std::errc() || result.ptr == first || (result.ptr != last && !is_blank(*result.ptr))) return false;
  rest.remove_prefix(to_size(result.ptr - rest.data()));
  return true;
}

bool only_blanks(std::string_view rest) {
  return std::all_of(rest.begin(), rest.end(), [](char c) { return is_blank(c); });
}

template <class T>
bool parse_entry_fast(std::string_view rest, const Header& header, index_t& row, index_t& col, T& value) {
  std::int64_t i = 0, j = 0;
  if (!take_number(rest, i) || !take_number(rest, j) || i < 1 || i > header.rows || j < 1 || j > header.cols) {
    return false;
  }
  if (header.field == Field::pattern) {
    value = T(1);
  } else if (header.field == Field::integer) {
    std::int64_t integer = 0;
    if (!take_number(rest, integer)) return false;
    value = static_cast<T>(integer);
  } else {
    double number = 0;
    // Out of float's range either way: the careful parser explains it.
    if (!take_number(rest, number) || (std::is_same_v<T, float> && std::abs(number) >= kFloatOverflow)) return false;
    value = static_cast<T>(number);
    if (value == 0 && number != 0) return false;
  }
  if (!only_blanks(rest)) return false;
  row = i - 1;
  col = j - 1;
  return true;
}

}  // namespace

template <class T>
std::string parse_entry(std::string_view line, const Header& header, index_t& row, index_t& col, T& value) {
  if (parse_entry_fast(line, header, row, col, value)) return {};
  std::string_view rest = line;
  const auto index = [&rest](const char* what, index_t extent, index_t& out) -> std::string {
    const std::string_view token = next_token(rest);
    std::int64_t number = 0;
    if (token.empty()) return std::string("missing ") + what + " index";
    if (!parse_number(token, number)) return std::string("bad ") + what + " index " + quoted(token);
    if (number < 1 || number > extent) {
      return std::string(what) + " index " + std::to_string(number) + " out of range 1.." + std::to_string(extent);
    }
    out = number - 1;
    return {};
  };
  if (std::string problem = index("row", header.rows, row); !problem.empty()) return problem;
  if (std::string problem = index("column", header.cols, col); !problem.empty()) return problem;
  if (header.field == Field::pattern) {
    value = T(1);
  } else {
    const std::string_view token = next_token(rest);
    if (token.empty()) return "missing value after the row and column indices";
    if (header.field == Field::integer) {
      std::int64_t integer = 0;
      if (!parse_number(token, integer)) return "bad integer value " + quoted(token);
      value = static_cast<T>(integer);
    } else if (std::string problem = parse_real(token, value); !problem.empty()) {
      return problem;
    }
  }
  if (const std::string_view extra = next_token(rest); !extra.empty()) {
    return "unexpected " + quoted(extra) + " after the entry" +
           (header.field == Field::pattern ? " (a pattern entry is just 'row column')" : "");
  }
  return {};
}

template std::string parse_entry<float>(std::string_view, const Header&, index_t&, index_t&, float&);
template std::string parse_entry<double>(std::string_view, const Header&, index_t&, index_t&, double&);

// ---------------------------------------------------------------------------------------------
// RangeLines

RangeLines::RangeLines(const detail::InputFile& file, std::uint64_t data_start, std::uint64_t begin, std::uint64_t end,
                       std::size_t chunk)
    : file_(file),
      end_(end),
      chunk_(std::max<std::size_t>(1, chunk)),
      // Starting one byte early shows whether `begin` itself starts a line (the byte before is '\n').
      base_(begin > data_start ? begin - 1 : begin),
      read_to_(base_),
      skip_partial_(begin > data_start) {}

bool RangeLines::refill() {
  if (read_to_ >= file_.size()) return false;
  // Keep the unfinished line at the front of the buffer; drop what was consumed.
  buffer_.erase(0, cursor_);
  base_ += cursor_;
  scan_ -= cursor_;
  cursor_ = 0;
  const auto count = to_size(std::min<std::uint64_t>(chunk_, file_.size() - read_to_));
  const std::size_t old = buffer_.size();
  buffer_.resize(old + count);
  file_.read_exact(read_to_, buffer_.data() + old, count);
  read_to_ += count;
  return true;
}

std::size_t RangeLines::find_newline() {
  scan_ = std::max(scan_, cursor_);
  for (;;) {
    const void* hit = std::memchr(buffer_.data() + scan_, '\n', buffer_.size() - scan_);
    if (hit != nullptr) return to_size(static_cast<const char*>(hit) - buffer_.data());
    scan_ = buffer_.size();
    if (!refill()) return std::string::npos;
  }
}

bool RangeLines::next(std::string_view& line) {
  if (skip_partial_) {
    skip_partial_ = false;
    const std::size_t newline = find_newline();
    if (newline == std::string::npos) {  // the range lies inside the file's last line
      cursor_ = scan_ = buffer_.size();
      return false;
    }
    cursor_ = scan_ = newline + 1;
  }
  if (position() >= end_ || position() >= file_.size()) return false;
  const std::size_t newline = find_newline();
  const std::size_t stop = newline == std::string::npos ? buffer_.size() : newline;
  line = std::string_view(buffer_).substr(cursor_, stop - cursor_);
  cursor_ = scan_ = newline == std::string::npos ? stop : stop + 1;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // files written on Windows
  return true;
}

}  // namespace dnmf::io::mtx
