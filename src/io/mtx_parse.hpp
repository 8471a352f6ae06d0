// dnmf internal: the pieces of Matrix Market parsing that the collective reader runs on each rank: the header
// (banner and size line), one entry line, and the lines that start in a byte range of the file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dnmf/matrix.hpp"
#include "io/input_file.hpp"

namespace dnmf::io::mtx {

/// The value field of the banner.
enum class Field { real, integer, pattern };

/// What the banner and size line say, and where the entries begin.
struct Header {
  Field field = Field::real;
  bool symmetric = false;
  index_t rows = 0;
  index_t cols = 0;
  index_t entries = 0;            ///< entry lines announced by the size line
  index_t size_line = 0;          ///< 1-based line number of the size line
  std::uint64_t data_offset = 0;  ///< byte where the line after the size line starts
};

/// Reads the banner, the comments and the size line of `path`. Errors are dnmf::Error "PATH:LINE: problem".
Header read_header(const detail::InputFile& file);

/// True for a line that holds an entry (neither blank nor a '%' comment).
[[nodiscard]] bool is_content(std::string_view line);

/// Parses an entry line "row col [value]" into 0-based indices and a value (1 for pattern files). Returns an
/// empty string on success, else the problem (without file or line), e.g. "column index 9 out of range 1..8".
template <class T>
std::string parse_entry(std::string_view line, const Header& header, index_t& row, index_t& col, T& value);

/// The lines of `file` that start in bytes [begin, end), read in chunks of `chunk` bytes. A line starts at
/// `data_start` or just after a '\n'; the last one may run past `end`. Lines come without '\n' (and '\r').
/// A returned line stays valid until the next call.
class RangeLines {
 public:
  RangeLines(const detail::InputFile& file, std::uint64_t data_start, std::uint64_t begin, std::uint64_t end,
             std::size_t chunk);
  bool next(std::string_view& line);
  /// File offset where the line after the last returned one starts.
  [[nodiscard]] std::uint64_t position() const { return base_ + cursor_; }

 private:
  std::size_t find_newline();  // index in buffer_ of the next '\n' at or after cursor_, or npos at end of file
  bool refill();

  const detail::InputFile& file_;
  std::uint64_t end_;
  std::size_t chunk_;
  std::string buffer_;
  std::uint64_t base_;      // file offset of buffer_[0]
  std::uint64_t read_to_;   // file offset up to which bytes are in buffer_
  std::size_t cursor_ = 0;  // start of the next line in buffer_
  std::size_t scan_ = 0;    // where the search for its '\n' resumes
  bool skip_partial_;       // the first bytes belong to a line that started before `begin`
};

}  // namespace dnmf::io::mtx
