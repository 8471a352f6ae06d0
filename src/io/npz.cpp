// numpy .npz archives: locating the matrix among the members, its shape, and one block. See npz.hpp.

#include "io/npz.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "io/compressed_block.hpp"
#include "io/npy_convert.hpp"
#include "io/npy_header.hpp"
#include "io/zip_archive.hpp"

namespace dnmf::io {
namespace {

using detail::ZipArchive;

constexpr std::array<std::string_view, 1> kNpzExtensions = {".npz"};
// Bytes uncompressed to read a member's header: numpy's headers are a few hundred bytes; a longer one is read
// with the whole member.
constexpr std::size_t kHeaderProbe = std::size_t{64} << 10;
// Entries converted at a time while a sparse block is collected: bounds the scratch memory.
constexpr std::size_t kChunkEntries = std::size_t{1} << 18;
// scipy's format and shape members are a few bytes; anything large there is not what save_npz writes.
constexpr std::uint64_t kSmallMember = std::uint64_t{1} << 20;
// Names listed in a "which array?" message.
constexpr std::size_t kListedNames = 20;
constexpr const char* kSparseMembers[] = {"format.npy", "shape.npy", "data.npy", "indices.npy", "indptr.npy"};

/// The matrix an archive holds, located, with the headers reading it needs.
struct Located {
  std::string where;  // "A.npz" (sparse) or "A.npz:NAME" (an array), for messages
  bool sparse = false;
  detail::Compression compression;
  index_t rows = 0, cols = 0, stored = 0;
  std::size_t dense = 0;  // an array: its member
  NpyHeader dense_header;
  std::size_t data = 0, indices = 0, indptr = 0;  // sparse: scipy's members
  NpyHeader data_header, indices_header;
};

std::string member_where(const ZipArchive& zip, std::size_t index) { return zip.path() + ":" + zip.names()[index]; }

/// The members that are arrays, by the names numpy.load gives them (without ".npy").
std::vector<std::string> array_names(const ZipArchive& zip) {
  std::vector<std::string> names;
  for (const std::string& name : zip.names()) {
    if (name.size() > 4 && name.ends_with(".npy")) names.push_back(name.substr(0, name.size() - 4));
  }
  return names;
}

/// Names for a one-line message: the first few, then how many more.
std::string joined(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t k = 0; k < std::min(names.size(), kListedNames); ++k) text += (k > 0 ? ", " : "") + names[k];
  if (names.size() > kListedNames) text += ", and " + std::to_string(names.size() - kListedNames) + " more";
  return text;
}

NpyArrayHeader member_header(const ZipArchive& zip, std::size_t index) {
  const std::string where = member_where(zip, index);
  const std::string head = zip.read_prefix(index, kHeaderProbe);
  if (head.size() < zip.size(index)) {
    try {
      return parse_npy_array_header(head, where);
    } catch (const Error&) {  // perhaps a header longer than the probe: judged on the whole member below
    }
  }
  return parse_npy_array_header(zip.read(index), where);
}

/// A 1-D array member's header as a matrix header (n x 1), with integers required for index arrays.
NpyHeader vector_header(const ZipArchive& zip, std::size_t index, bool integers) {
  const std::string where = member_where(zip, index);
  const NpyArrayHeader array = member_header(zip, index);
  const NpyHeader header = matrix_header(array, zip.size(index), where);
  if (array.shape.size() != 1) {
    throw DataError(where + ": is a " + std::to_string(array.shape.size()) + "-D array; expected a 1-D array");
  }
  if (integers && header.kind == 'f') {
    throw DataError(where + ": holds dtype '" + array.descr + "'; expected integers (int32 or int64)");
  }
  return header;
}

/// A whole integer member as int64, in storage order.
std::vector<std::int64_t> read_integers(const ZipArchive& zip, std::size_t index, const std::string& bytes) {
  const std::string where = member_where(zip, index);
  const NpyArrayHeader array = parse_npy_array_header(bytes, where);
  const NpyHeader header = matrix_header(array, bytes.size(), where);
  // A shape of floats was truncated to integers (3.7 read as 3), where scipy refuses the file.
  if (header.kind != 'i' && header.kind != 'u')
    throw DataError(where + ": holds dtype '" + array.descr + "'; expected integers (int32 or int64)");
  const Converter<std::int64_t> convert = converter_for<std::int64_t>(header.kind, header.word_size, where);
  std::vector<std::int64_t> values(to_size(header.rows * header.cols));
  convert.run(reinterpret_cast<const std::byte*>(bytes.data()) + header.data_offset, values.size(), values.data());
  return values;
}

std::string read_small(const ZipArchive& zip, std::size_t index) {
  if (zip.size(index) > kSmallMember) {
    throw DataError(member_where(zip, index) + ": is " + std::to_string(zip.size(index)) +
                    " bytes; scipy.sparse.save_npz writes a few bytes there");
  }
  return zip.read(index);
}

/// scipy's 'format' member: a 0-D byte string (b'csr'), or a unicode one as older versions wrote it.
std::string sparse_format(const ZipArchive& zip, std::size_t index) {
  const std::string where = member_where(zip, index);
  const std::string bytes = read_small(zip, index);
  const NpyArrayHeader array = parse_npy_array_header(bytes, where);
  std::string_view descr = array.descr;
  if (!descr.empty() && std::string_view("<>|=").find(descr.front()) != std::string_view::npos) descr.remove_prefix(1);
  const char kind = descr.empty() ? '?' : descr.front();
  const std::size_t width = kind == 'U' ? 4 : 1;  // 'U': UTF-32
  const std::string_view digits = descr.empty() ? descr : descr.substr(1);
  const bool numbered = !digits.empty() && digits.size() <= 2 &&
                        std::all_of(digits.begin(), digits.end(), [](char d) { return d >= '0' && d <= '9'; });
  const std::size_t length = numbered ? std::stoul(std::string(digits)) : 0;
  if ((kind != 'S' && kind != 'U') || length == 0 || !array.shape.empty() ||
      array.data_offset + length * width > bytes.size()) {
    throw DataError(where +
                    ": expected a 0-D byte string such as b'csr' (as scipy.sparse.save_npz writes), found dtype '" +
                    array.descr + "'");
  }
  std::string text;
  for (std::size_t k = 0; k < length; ++k) {
    const char c = bytes[array.data_offset + k * width];  // UTF-32LE: the ASCII byte comes first
    if (c != '\0') text += c;
  }
  return text;
}

/// scipy's archive, whose format member (format.npy) is `format_member`.
Located locate_sparse(const ZipArchive& zip, std::size_t format_member) {
  Located m;
  m.where = zip.path();
  m.sparse = true;
  // The format first: a COO or BSR archive has other members, and saying so beats naming a missing one.
  const std::string format = sparse_format(zip, format_member);
  if (format != "csr" && format != "csc") {
    throw DataError(zip.path() + ": holds a scipy.sparse '" + format +
                    "' matrix; dnmf reads CSR and CSC (save matrix.tocsr() instead)");
  }
  std::size_t index[5] = {};
  for (std::size_t k = 0; k < 5; ++k) {
    const auto found = zip.find(kSparseMembers[k]);
    if (!found) {
      throw DataError(zip.path() + ": has no member '" + kSparseMembers[k] +
                      "'; a scipy.sparse.save_npz archive holds format, shape, data, indices and indptr (this one "
                      "holds " +
                      joined(array_names(zip)) + ")");
    }
    index[k] = *found;
  }
  m.compression.by_columns = format == "csc";
  const std::string shape_bytes = read_small(zip, index[1]);
  const std::vector<std::int64_t> shape = read_integers(zip, index[1], shape_bytes);
  if (shape.size() != 2 || shape[0] < 0 || shape[1] < 0) {
    std::string text;
    for (const std::int64_t extent : shape) text += (text.empty() ? "" : ", ") + std::to_string(extent);
    throw DataError(member_where(zip, index[1]) + ": is (" + text +
                    "); expected two non-negative integers (rows, columns)");
  }
  m.rows = shape[0];
  m.cols = shape[1];
  m.data = index[2];
  m.indices = index[3];
  m.indptr = index[4];
  m.data_header = vector_header(zip, m.data, false);
  m.indices_header = vector_header(zip, m.indices, true);
  const NpyHeader indptr_header = vector_header(zip, m.indptr, true);
  m.stored = m.data_header.rows;
  if (m.indices_header.rows != m.stored) {
    throw DataError(zip.path() + ": 'indices.npy' has " + std::to_string(m.indices_header.rows) +
                    " entries but 'data.npy' has " + std::to_string(m.stored));
  }
  const index_t lines = m.compression.by_columns ? m.cols : m.rows;
  if (indptr_header.rows != lines + 1) {
    throw DataError(zip.path() + ": 'indptr.npy' has " + std::to_string(indptr_header.rows) + " entries; the shape (" +
                    std::to_string(m.rows) + ", " + std::to_string(m.cols) + ") of a " +
                    (format == "csc" ? "CSC" : "CSR") + " matrix needs " + std::to_string(lines + 1));
  }
  return m;
}

Located locate_dense(const ZipArchive& zip, std::size_t index, const std::string& name) {
  Located m;
  m.where = zip.path() + ":" + name;
  m.dense = index;
  const NpyArrayHeader array = member_header(zip, index);
  m.dense_header = matrix_header(array, zip.size(index), m.where);
  m.rows = m.dense_header.rows;
  m.cols = m.dense_header.cols;
  m.stored = m.rows * m.cols;
  return m;
}

/// The matrix `requested` names ("" for the archive's only matrix).
Located locate(const ZipArchive& zip, const std::string& requested) {
  if (!requested.empty()) {
    std::optional<std::size_t> index = zip.find(requested + ".npy");
    if (!index) index = zip.find(requested);
    if (!index) {
      throw DataError(zip.path() + ": has no array '" + requested + "'; it holds " + joined(array_names(zip)));
    }
    return locate_dense(zip, *index, requested);
  }
  if (const auto format = zip.find("format.npy")) return locate_sparse(zip, *format);
  const std::vector<std::string> names = array_names(zip);
  if (names.empty()) {
    throw DataError(zip.path() +
                    ": holds no arrays (no .npy members); expected an archive written by numpy.savez or "
                    "scipy.sparse.save_npz");
  }
  if (names.size() > 1) {
    // Two members of one name first (find refuses them): naming it, as advised below, would not tell them apart.
    for (const std::string& name : names) (void)zip.find(name + ".npy");
    throw DataError(zip.path() + ": holds several arrays (" + joined(names) + "); name one as " + zip.path() + ":" +
                    names.front());
  }
  return locate_dense(zip, *zip.find(names.front() + ".npy"), names.front());
}

void check_range(const Located& m, const char* what, dist::Range range, index_t extent) {
  if (range.first < 0 || range.first > range.last || range.last > extent) {
    throw DataError(m.where + ": " + what + " range [" + std::to_string(range.first) + ", " +
                    std::to_string(range.last) + ") is out of bounds for a " + std::to_string(m.rows) + "x" +
                    std::to_string(m.cols) + " matrix");
  }
}

template <class T>
DenseMatrix<T> read_dense(const ZipArchive& zip, const Located& m, dist::Range rows, dist::Range cols,
                          bool check_entries) {
  const std::string bytes = zip.read(m.dense);
  const NpyHeader& h = m.dense_header;
  const Converter<T> convert = converter_for<T>(h.kind, h.word_size, m.where);
  const std::byte* data = reinterpret_cast<const std::byte*>(bytes.data()) + h.data_offset;
  const std::size_t word = h.word_size;
  const index_t rb = rows.size(), cb = cols.size();
  DenseMatrix<T> out(rb, cb);
  if (h.fortran_order || h.cols == 1 || h.rows == 1) {  // a single row or column is laid out alike in both orders
    for (index_t j = 0; j < cb; ++j) {
      convert.run(data + to_size((cols.first + j) * h.rows + rows.first) * word, to_size(rb), out.data() + j * rb);
    }
  } else if (cb == h.cols) {
    convert.transposed(data + to_size(rows.first * h.cols) * word, rb, cb, out.data(), rb);
  } else {
    for (index_t i = 0; i < rb; ++i) {
      convert.transposed(data + to_size((rows.first + i) * h.cols + cols.first) * word, 1, cb, out.data() + i, rb);
    }
  }
  if (check_entries) check_nonnegative<T>(out.view(), m.where, rows.first, cols.first);
  return out;
}

/// Adds the entries of the block to `block`, holding the members (uncompressed) only while it runs.
template <class T>
void collect_sparse(const ZipArchive& zip, const Located& m, dist::Range rows, dist::Range cols,
                    detail::CompressedBlock<T>& block) {
  const detail::Compression c = m.compression;
  const std::vector<std::int64_t> ptr = read_integers(zip, m.indptr, zip.read(m.indptr));
  detail::check_indptr(m.where, c, ptr, m.stored);
  const std::string index_bytes = zip.read(m.indices);
  const std::string value_bytes = zip.read(m.data);
  const Converter<std::int64_t> to_index =
      converter_for<std::int64_t>(m.indices_header.kind, m.indices_header.word_size, member_where(zip, m.indices));
  const Converter<T> to_value = converter_for<T>(m.data_header.kind, m.data_header.word_size, m.where);
  const auto* index_data = reinterpret_cast<const std::byte*>(index_bytes.data()) + m.indices_header.data_offset;
  const auto* value_data = reinterpret_cast<const std::byte*>(value_bytes.data()) + m.data_header.data_offset;
  const dist::Range lines = c.by_columns ? cols : rows, minor = c.by_columns ? rows : cols;
  const index_t minor_total = c.by_columns ? m.rows : m.cols;
  std::vector<std::int64_t> index_buffer;
  std::vector<T> value_buffer;
  const std::int64_t begin = ptr[to_size(lines.first)], end = ptr[to_size(lines.last)];
  // The block's entries counted first where it is not all of its lines' entries, so that its arrays are
  // allocated once: grown entry by entry, a reallocation held the old and the new arrays beside the members, and
  // a resident .npz peaked at 1.25-1.4x the memory budget its plan had kept to.
  std::size_t held = to_size(end - begin);
  if (minor.first > 0 || minor.last < minor_total) {
    held = 0;
    for (std::int64_t first = begin; first < end;) {
      const auto count = to_size(std::min<std::int64_t>(static_cast<std::int64_t>(kChunkEntries), end - first));
      index_buffer.resize(count);
      to_index.run(index_data + to_size(first) * m.indices_header.word_size, count, index_buffer.data());
      for (const std::int64_t minor_index : index_buffer)
        held += minor_index >= minor.first && minor_index < minor.last ? 1 : 0;
      first += static_cast<std::int64_t>(count);
    }
  }
  block.reserve(held);
  index_t line = lines.first;
  for (std::int64_t first = begin; first < end;) {
    const auto count = to_size(std::min<std::int64_t>(static_cast<std::int64_t>(kChunkEntries), end - first));
    index_buffer.resize(count);
    value_buffer.resize(count);
    to_index.run(index_data + to_size(first) * m.indices_header.word_size, count, index_buffer.data());
    to_value.run(value_data + to_size(first) * m.data_header.word_size, count, value_buffer.data());
    for (std::size_t t = 0; t < count; ++t) {
      const std::int64_t k = first + static_cast<std::int64_t>(t);
      while (ptr[to_size(line) + 1] <= k) ++line;
      block.add(line, k, index_buffer[t], value_buffer[t]);
    }
    first += static_cast<std::int64_t>(count);
  }
}

template <class T>
CsrMatrix<T> read_sparse(const ZipArchive& zip, const Located& m, dist::Range rows, dist::Range cols,
                         bool check_entries) {
  detail::CompressedBlock<T> block(m.where, m.compression, rows, cols, m.rows, m.cols, check_entries);
  collect_sparse(zip, m, rows, cols, block);  // the members are freed before the sort (and a CSC's transpose)
  return std::move(block).finish();
}

}  // namespace

MemberPath split_npz_path(const std::string& path) { return split_member_path(path, kNpzExtensions); }

bool is_npz_path(const std::string& path) { return has_extension(split_npz_path(path).file, kNpzExtensions); }

MatrixShape npz_shape(const std::string& path) {
  const MemberPath parts = split_npz_path(path);
  const ZipArchive zip(parts.file);
  const Located m = locate(zip, parts.member);
  return {m.rows, m.cols, m.stored, m.sparse};
}

std::optional<NpyHeader> npz_array_header(const std::string& path) {
  const MemberPath parts = split_npz_path(path);
  const ZipArchive zip(parts.file);
  const Located m = locate(zip, parts.member);
  if (m.sparse) return std::nullopt;
  return m.dense_header;
}

ReadFootprint npz_read_footprint(const std::string& path, std::int64_t stored, std::size_t scalar_bytes) {
  const MemberPath parts = split_npz_path(path);
  const ZipArchive zip(parts.file);
  const Located m = locate(zip, parts.member);
  if (!m.sparse) return {1.0, static_cast<std::int64_t>(zip.size(m.dense))};
  const index_t lines = m.compression.by_columns ? m.cols : m.rows;
  const auto members = static_cast<std::int64_t>(zip.size(m.indices) + zip.size(m.data) + zip.size(m.indptr)) +
                       static_cast<std::int64_t>(sizeof(std::int64_t)) * (lines + 1);
  // A CSC block is transposed after the members are freed: the copy needs about the block's entries again.
  const std::int64_t transposed =
      m.compression.by_columns ? stored * static_cast<std::int64_t>(sizeof(col_index_t) + scalar_bytes) : 0;
  return {1.0, std::max(members, transposed)};
}

template <class T>
LocalBlock<T> read_npz_block(const std::string& path, dist::Range rows, dist::Range cols, bool check_entries) {
  const MemberPath parts = split_npz_path(path);
  const ZipArchive zip(parts.file);
  const Located m = locate(zip, parts.member);
  check_range(m, "row", rows, m.rows);
  check_range(m, "column", cols, m.cols);
  LocalBlock<T> block;
  block.sparse = m.sparse;
  if (m.sparse) {
    block.csr = read_sparse<T>(zip, m, rows, cols, check_entries);
  } else {
    block.dense = read_dense<T>(zip, m, rows, cols, check_entries);
  }
  return block;
}

template LocalBlock<float> read_npz_block<float>(const std::string&, dist::Range, dist::Range, bool);
template LocalBlock<double> read_npz_block<double>(const std::string&, dist::Range, dist::Range, bool);

}  // namespace dnmf::io
