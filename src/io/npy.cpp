// NumPy .npy files: header parsing, whole and block reads with dtype conversion, and writing.
// Format reference: the "NEP 1" description shipped with numpy (numpy/lib/format.py).

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "dnmf/source.hpp"
#include "io/input_file.hpp"
#include "io/npy_block.hpp"
#include "io/npy_convert.hpp"
#include "io/npy_header.hpp"

namespace dnmf::io {

std::string dtype_name(const NpyHeader& header) { return header.kind + std::to_string(header.word_size); }

namespace {

// Every target we build for is little-endian; supporting byte swaps would be dead, untested code.
static_assert(std::endian::native == std::endian::little, "the .npy reader and writer assume a little-endian host");

using detail::InputFile;

constexpr std::string_view kMagic("\x93NUMPY", 6);
// Conversion buffer size: large enough that reads are efficient, small enough to stay cache-friendly.
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;

[[noreturn]] void fail(const std::string& path, const std::string& problem) { throw DataError(path + ": " + problem); }

/// Header text made safe for a one-line message: control bytes escaped, long text cut.
std::string printable(std::string_view text, std::size_t limit = 100) {
  std::string out;
  for (const char c : text.substr(0, limit)) {
    if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    } else {
      out += c;
    }
  }
  if (text.size() > limit) out += "...";
  return out;
}

// ---------------------------------------------------------------------------------------------
// Header dict: a Python literal such as {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }.
// numpy writes it with repr(), but hand-made and older files vary in spacing, quoting, key order and
// trailing commas, so this is a small literal parser rather than a pattern match.

struct PyValue {
  enum class Kind { string, boolean, integer, tuple, other };
  Kind kind = Kind::other;
  std::string text;  // string contents, or the literal as written (for messages)
  bool flag = false;
  std::uint64_t number = 0;
  std::vector<PyValue> items;
};

struct HeaderSyntaxError {
  std::string problem;
  std::size_t position;
};

class DictParser {
 public:
  explicit DictParser(std::string_view text) : text_(text) {}

  /// Calls `on_entry(key, value)` for each entry of the dict that makes up the whole text.
  template <class OnEntry>
  void parse(OnEntry on_entry) {
    expect('{');
    while (!consume('}')) {
      skip_space();
      if (peek() != '\'' && peek() != '"') error("expected a quoted key or '}'");
      const std::string key = parse_string();
      expect(':');
      on_entry(key, parse_value());
      if (!consume(',')) {
        expect('}');
        break;
      }
    }
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the closing '}'");
  }

 private:
  [[noreturn]] void error(const std::string& problem) const { throw HeaderSyntaxError{problem, pos_}; }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\0')) {
      ++pos_;
    }
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool consume(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!consume(c)) error(std::string("expected '") + c + "'");
  }

  std::string parse_string() {
    const char quote = text_[pos_++];
    const std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos) error("unterminated string");
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }

  PyValue parse_value() {
    skip_space();
    const std::size_t start = pos_;
    PyValue value;
    const char c = peek();
    if (c == '\'' || c == '"') {
      value.kind = PyValue::Kind::string;
      value.text = parse_string();
      return value;
    }
    if (c == '(' || c == '[') {
      value.kind = c == '(' ? PyValue::Kind::tuple : PyValue::Kind::other;
      value.items = parse_sequence(c == '(' ? ')' : ']');
    } else if (c >= '0' && c <= '9') {
      value.kind = PyValue::Kind::integer;
      value.number = parse_integer();
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      const std::string word = parse_word();
      if (word != "True" && word != "False") {
        value.text = word;
        return value;
      }
      value.kind = PyValue::Kind::boolean;
      value.flag = word == "True";
    } else {
      error("expected a value");
    }
    value.text = std::string(text_.substr(start, pos_ - start));
    return value;
  }

  std::vector<PyValue> parse_sequence(char close) {
    ++pos_;
    std::vector<PyValue> items;
    while (!consume(close)) {
      items.push_back(parse_value());
      if (!consume(',')) {
        expect(close);
        break;
      }
    }
    return items;
  }

  std::uint64_t parse_integer() {
    std::uint64_t number = 0;
    while (peek() >= '0' && peek() <= '9') {
      const auto digit = static_cast<std::uint64_t>(peek() - '0');
      if (number > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) error("integer too large");
      number = number * 10 + digit;
      ++pos_;
    }
    if (peek() == 'L') ++pos_;  // Python 2 wrote long integers as 3L
    return number;
  }

  std::string parse_word() {
    const std::size_t start = pos_;
    while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Interpreting the dict entries: first what any array's header holds (an .npz archive's members include a 0-D
// byte string and 1-D index arrays), then the checks that make it a matrix this library reads.

void check_matrix_descr(const std::string& path, const std::string& descr, NpyHeader& header) {
  std::string_view rest = descr;
  char order = '=';  // no byte-order character: native
  if (!rest.empty() && std::string_view("<>|=").find(rest.front()) != std::string_view::npos) {
    order = rest.front();
    rest.remove_prefix(1);
  }
  const char kind = rest.empty() ? '?' : rest.front();
  std::size_t size = 0;
  const bool size_ok = rest.size() >= 2 && rest.size() <= 3 &&
                       std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (size_ok) size = std::stoul(std::string(rest.substr(1)));

  const bool supported_size = (kind == 'f' && (size == 4 || size == 8)) ||
                              ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
                              (kind == 'b' && size == 1);
  const bool big_endian = order == '>' && size > 1;
  if (!supported_size || big_endian) {
    std::string reason;
    if (big_endian) {
      reason = "big-endian; ";
    } else if (kind == 'c') {
      reason = "complex values; ";
    } else if (kind == 'O') {
      reason = "Python objects; ";
    } else if (kind == 'f' && size == 2) {
      reason = "half precision; ";
    }
    fail(path, "unsupported dtype '" + printable(descr) + "' (" + reason +
                   "expected little-endian f4 or f8, an integer type i1..i8/u1..u8, or bool)");
  }
  // A bool is one byte, read as 0 or 1 (io::convert_detail::Bool8; a boolean mask saved as it is, True = observed).
  header.kind = kind;
  header.word_size = size;
  header.little_endian = true;
}

std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string text = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) text += (k > 0 ? ", " : "") + std::to_string(shape[k]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

void check_matrix_shape(const std::string& path, const std::vector<std::uint64_t>& shape, NpyHeader& header) {
  const std::size_t dims = shape.size();
  if (dims == 0) fail(path, "0-D (scalar) array; expected a 1-D or 2-D array");
  if (dims > 2) {
    fail(path,
         std::to_string(dims) + "-D array of shape " + shape_text(shape) + "; only 1-D and 2-D arrays are supported");
  }
  for (const std::uint64_t extent : shape) {
    if (extent > static_cast<std::uint64_t>(std::numeric_limits<index_t>::max())) {
      fail(path, "shape " + shape_text(shape) + " is too large");
    }
  }
  header.rows = static_cast<index_t>(shape[0]);
  header.cols = dims == 2 ? static_cast<index_t>(shape[1]) : 1;
}

/// `check_descr` (may be null) judges the dtype as soon as the dict names it, so that of several problems the
/// first in the text is the one reported.
void parse_dict(const std::string& path, std::string_view text, NpyArrayHeader& array,
                void (*check_descr)(const std::string& path, const std::string& descr)) {
  bool have_descr = false;
  bool have_order = false;
  bool have_shape = false;
  try {
    DictParser(text).parse([&](const std::string& key, const PyValue& value) {
      if (key == "descr") {
        if (value.kind != PyValue::Kind::string) {
          fail(path, "unsupported dtype " + printable(value.text) + " (structured arrays are not supported)");
        }
        array.descr = value.text;
        if (check_descr != nullptr) check_descr(path, array.descr);
        have_descr = true;
      } else if (key == "fortran_order") {
        if (value.kind != PyValue::Kind::boolean) {
          // A string's text is its content: quoted here, so that 'False' is not reported as False.
          const std::string shown = value.kind == PyValue::Kind::string ? "the string '" + printable(value.text) + "'"
                                                                        : printable(value.text);
          fail(path, "malformed header: 'fortran_order' is " + shown + ", expected True or False");
        }
        array.fortran_order = value.flag;
        have_order = true;
      } else if (key == "shape") {
        const bool all_integers = std::all_of(value.items.begin(), value.items.end(),
                                              [](const PyValue& item) { return item.kind == PyValue::Kind::integer; });
        if (value.kind != PyValue::Kind::tuple || !all_integers) {
          fail(path, "malformed header: 'shape' is " + printable(value.text) + ", expected a tuple of integers");
        }
        array.shape.clear();
        for (const PyValue& item : value.items) array.shape.push_back(item.number);
        have_shape = true;
      }  // other keys: numpy never writes any; ignoring them is harmless
    });
  } catch (const HeaderSyntaxError& error) {
    fail(path, "malformed header: " + error.problem + " at character " + std::to_string(error.position + 1) + " of \"" +
                   printable(text) + "\"");
  }
  for (const auto& [present, key] :
       {std::pair{have_descr, "descr"}, {have_order, "fortran_order"}, {have_shape, "shape"}}) {
    if (!present) fail(path, std::string("malformed header: no '") + key + "' in \"" + printable(text) + "\"");
  }
}

std::uint32_t little_endian_u32(const unsigned char* bytes, std::size_t count) {
  std::uint32_t value = 0;
  for (std::size_t k = count; k-- > 0;) value = (value << 8) | bytes[k];
  return value;
}

void check_data_size(const std::string& path, std::uint64_t size, const NpyHeader& header) {
  const auto rows = static_cast<std::uint64_t>(header.rows);
  const auto cols = static_cast<std::uint64_t>(header.cols);
  const std::uint64_t available = size - header.data_offset;
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() / header.word_size;
  const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
  if (cols != 0 && rows > limit / cols) fail(path, "shape " + shape + " is too large");
  const std::uint64_t needed = rows * cols * header.word_size;
  if (needed > available) {
    fail(path, "truncated: header says " + shape + " " + dtype_name(header) + " = " + std::to_string(needed) +
                   " bytes of data, file has " + std::to_string(available) + " bytes after the header");
  }
}

/// Magic, version and dict of a .npy image of `size` bytes whose bytes `read(offset, buffer, count)` fetches (a
/// file by positioned reads, or an archive member in memory).
template <class Read>
NpyArrayHeader parse_array_header(const std::string& path, std::uint64_t size, Read read,
                                  void (*check_descr)(const std::string&, const std::string&) = nullptr) {
  unsigned char preamble[12] = {};
  const std::size_t have = to_size(std::min<std::uint64_t>(size, sizeof(preamble)));
  read(0, preamble, have);
  if (have < 10 || std::memcmp(preamble, kMagic.data(), kMagic.size()) != 0) {
    // numpy's other container is a zip archive; saying so saves a puzzled look at a hex dump.
    if (have >= 4 && std::memcmp(preamble, "PK\x03\x04", 4) == 0) {
      fail(path, "not a .npy file (it is a zip archive, as numpy's .npz files are; name it .npz to read it as one)");
    }
    fail(path, "not a .npy file (it does not start with the \\x93NUMPY magic string)");
  }
  const int major = preamble[6];
  const int minor = preamble[7];
  if (minor != 0 || major < 1 || major > 3) {
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (expected 1.0, 2.0 or 3.0)");
  }
  // Version 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (UTF-8 header) in 4.
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = 8 + length_bytes;
  if (have < prefix) fail(path, "truncated: the file ends inside the .npy preamble");
  const std::uint64_t header_length = little_endian_u32(preamble + 8, length_bytes);
  if (prefix + header_length > size) {
    fail(path, "truncated: the header is said to be " + std::to_string(header_length) + " bytes long, but only " +
                   std::to_string(size - prefix) + " bytes follow the preamble");
  }
  std::string text(to_size(header_length), '\0');
  read(prefix, text.data(), text.size());

  NpyArrayHeader array;
  parse_dict(path, text, array, check_descr);
  array.data_offset = prefix + to_size(header_length);
  return array;
}

void check_matrix_dtype(const std::string& path, const std::string& descr) {
  NpyHeader unused;
  check_matrix_descr(path, descr, unused);
}

NpyHeader parse_header(const InputFile& file) {
  const NpyArrayHeader array = parse_array_header(
      file.path(), file.size(),
      [&file](std::uint64_t offset, void* buffer, std::size_t count) { file.read_exact(offset, buffer, count); },
      check_matrix_dtype);
  return matrix_header(array, file.size(), file.path());
}

}  // namespace

NpyHeader matrix_header(const NpyArrayHeader& array, std::uint64_t size, const std::string& where) {
  NpyHeader header;
  check_matrix_descr(where, array.descr, header);
  check_matrix_shape(where, array.shape, header);
  header.fortran_order = array.fortran_order;
  header.data_offset = array.data_offset;
  check_data_size(where, size, header);
  return header;
}

NpyArrayHeader parse_npy_array_header(std::string_view bytes, const std::string& where) {
  return parse_array_header(where, bytes.size(), [bytes](std::uint64_t offset, void* buffer, std::size_t count) {
    std::memcpy(buffer, bytes.data() + offset, count);
  });
}

namespace {

// ---------------------------------------------------------------------------------------------
// Block reads. The block is a set of equally long runs of elements in the file: the columns of a
// Fortran-order array or the rows of a C-order one, each cut to the requested range.

struct Runs {
  std::uint64_t first = 0;  // element index (within the data) where run 0 starts
  index_t count = 0;        // number of runs
  index_t length = 0;       // elements per run
  index_t stride = 0;       // elements from the start of one run to the next
  bool are_columns = true;  // run s is column s of the output (else row s)
};

template <class T>
DenseMatrix<T> allocate(const std::string& path, index_t rows, index_t cols) {
  try {
    return DenseMatrix<T>(rows, cols);
  } catch (const std::bad_alloc&) {
  } catch (const std::length_error&) {
  }
  fail(path, "cannot allocate " + std::to_string(rows) + "x" + std::to_string(cols) + " matrix (" +
                 std::to_string(static_cast<std::uint64_t>(rows) * static_cast<std::uint64_t>(cols) * sizeof(T)) +
                 " bytes)");
}

template <class T>
void read_runs(const InputFile& file, const NpyHeader& header, const Runs& runs, DenseMatrix<T>& out) {
  if (runs.count == 0 || runs.length == 0) return;
  const Converter<T> convert = converter_for<T>(header.kind, header.word_size, file.path());
  const std::size_t word = header.word_size;
  const auto count = to_size(runs.count);
  const auto length = to_size(runs.length);
  const bool contiguous = runs.stride == runs.length || runs.count == 1;
  // When the file holds exactly the output's bytes in the output's order, read straight into it.
  const bool direct = convert.identity && runs.are_columns;
  const std::size_t chunk =
      direct ? std::numeric_limits<std::size_t>::max() : std::max<std::size_t>(1, kChunkBytes / word);
  std::vector<std::byte> buffer;

  // Reads m runs starting at run s, elements [j, j + n) of each (m > 1 only when the runs are adjacent).
  const auto read_piece = [&](std::size_t s, std::size_t m, std::size_t j, std::size_t n) {
    const std::uint64_t element = runs.first + s * static_cast<std::uint64_t>(runs.stride) + j;
    const std::uint64_t offset = header.data_offset + element * word;
    if (direct) {
      file.read_exact(offset, out.data() + s * length + j, m * n * word);
      return;
    }
    buffer.resize(m * n * word);
    file.read_exact(offset, buffer.data(), buffer.size());
    if (runs.are_columns) {
      convert.run(buffer.data(), m * n, out.data() + s * length + j);
    } else {
      convert.transposed(buffer.data(), index_t(m), index_t(n), out.data() + s + j * count, runs.count);
    }
  };

  if (length <= chunk) {
    const std::size_t per_piece = contiguous ? std::max<std::size_t>(1, chunk / length) : 1;
    for (std::size_t s = 0; s < count; s += per_piece) read_piece(s, std::min(per_piece, count - s), 0, length);
  } else {  // a single run is larger than the buffer: read it in slices
    for (std::size_t s = 0; s < count; ++s) {
      for (std::size_t j = 0; j < length; j += chunk) read_piece(s, 1, j, std::min(chunk, length - j));
    }
  }
}

/// Reads rows [r0, r1) x columns [c0, c1) of the array.
template <class T>
DenseMatrix<T> read_block(const InputFile& file, const NpyHeader& header, index_t r0, index_t r1, index_t c0,
                          index_t c1) {
  DenseMatrix<T> out = allocate<T>(file.path(), r1 - r0, c1 - c0);
  // A single row or column is laid out identically in both orders; reading it as columns allows
  // direct reads.
  Runs runs;
  if (header.fortran_order || header.cols == 1 || header.rows == 1) {
    runs = {static_cast<std::uint64_t>(c0 * header.rows + r0), c1 - c0, r1 - r0, header.rows, true};
  } else {
    runs = {static_cast<std::uint64_t>(r0 * header.cols + c0), r1 - r0, c1 - c0, header.cols, false};
  }
  read_runs(file, header, runs, out);
  return out;
}

void check_range(const std::string& path, const NpyHeader& header, const char* what, index_t first, index_t last) {
  const index_t extent = std::string_view(what) == "row" ? header.rows : header.cols;
  if (first < 0 || first > last || last > extent) {
    fail(path, std::string(what) + " range [" + std::to_string(first) + ", " + std::to_string(last) +
                   ") is out of bounds for a " + std::to_string(header.rows) + "x" + std::to_string(header.cols) +
                   " array");
  }
}

// ---------------------------------------------------------------------------------------------
// Writing.

template <class T>
constexpr const char* descr_of() {
  return sizeof(T) == 4 ? "<f4" : "<f8";
}

std::string npy_header(const char* descr, bool fortran_order, index_t rows, index_t cols) {
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                     ", 'shape': (" + std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // Padding puts the data on a 64-byte boundary, as numpy does, so that memory-mapped data is aligned.
  const std::size_t unpadded = kMagic.size() + 4 + dict.size() + 1;
  const std::size_t padded = (unpadded + 63) / 64 * 64;
  dict.append(padded - unpadded, ' ');
  dict += '\n';
  std::string header(kMagic);
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

void check_shape(const std::string& path, index_t rows, index_t cols) {
  if (rows < 0 || cols < 0) {
    fail(path, "cannot write a matrix of negative size " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

}  // namespace

NpyHeader read_npy_header(const std::string& path) { return parse_header(InputFile(path)); }

template <class T>
DenseMatrix<T> read_npy(const std::string& path) {
  const InputFile file(path);
  const NpyHeader header = parse_header(file);
  return read_block<T>(file, header, 0, header.rows, 0, header.cols);
}

template <class T>
DenseMatrix<T> read_npy_columns(const std::string& path, index_t first, index_t last) {
  const InputFile file(path);
  const NpyHeader header = parse_header(file);
  check_range(path, header, "column", first, last);
  return read_block<T>(file, header, 0, header.rows, first, last);
}

template <class T>
DenseMatrix<T> read_npy_rows(const std::string& path, index_t first, index_t last) {
  const InputFile file(path);
  const NpyHeader header = parse_header(file);
  check_range(path, header, "row", first, last);
  return read_block<T>(file, header, first, last, 0, header.cols);
}

template <class T>
DenseMatrix<T> read_npy_block(const std::string& path, dist::Range rows, dist::Range cols, bool check_entries) {
  const InputFile file(path);
  const NpyHeader header = parse_header(file);
  check_range(path, header, "row", rows.first, rows.last);
  check_range(path, header, "column", cols.first, cols.last);
  DenseMatrix<T> out = read_block<T>(file, header, rows.first, rows.last, cols.first, cols.last);
  if (check_entries) check_nonnegative<T>(out.view(), path, rows.first, cols.first);
  return out;
}

template <class T>
void write_npy(const std::string& path, DenseView<const T> matrix) {
  dnmf::detail::check_view(path.c_str(), MatrixRef<T>{matrix});
  check_shape(path, matrix.rows, matrix.cols);
  const std::string header = npy_header(descr_of<T>(), true, matrix.rows, matrix.cols);
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    if (matrix.empty()) return;
    const auto column_bytes = static_cast<std::streamsize>(matrix.rows * sizeof(T));
    if (matrix.contiguous()) {
      out.write(reinterpret_cast<const char*>(matrix.data), column_bytes * matrix.cols);
      return;
    }
    for (index_t j = 0; j < matrix.cols; ++j) {
      out.write(reinterpret_cast<const char*>(matrix.data + j * matrix.ld), column_bytes);
    }
  });
}

template <class T>
void write_npy_row_major(const std::string& path, const T* data, index_t rows, index_t cols) {
  check_shape(path, rows, cols);
  dnmf::detail::check_storage(path.c_str(), data, dnmf::detail::entry_count(rows, cols), "data");
  const std::string header = npy_header(descr_of<T>(), false, rows, cols);
  write_file_atomically(path, [&](std::ostream& out) {
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    if (rows > 0 && cols > 0) out.write(reinterpret_cast<const char*>(data), rows * cols * index_t(sizeof(T)));
  });
}

#define DNMF_INSTANTIATE_NPY(T)                                                                  \
  template DenseMatrix<T> read_npy<T>(const std::string&);                                       \
  template DenseMatrix<T> read_npy_columns<T>(const std::string&, index_t, index_t);             \
  template DenseMatrix<T> read_npy_rows<T>(const std::string&, index_t, index_t);                \
  template DenseMatrix<T> read_npy_block<T>(const std::string&, dist::Range, dist::Range, bool); \
  template void write_npy<T>(const std::string&, DenseView<const T>);                            \
  template void write_npy_row_major<T>(const std::string&, const T*, index_t, index_t);

DNMF_INSTANTIATE_NPY(float)
DNMF_INSTANTIATE_NPY(double)
#undef DNMF_INSTANTIATE_NPY

}  // namespace dnmf::io
