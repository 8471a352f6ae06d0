// Reading matrices from HDF5 files: locating the object, its shape, and one rank's block (a hyperslab of a
// dense dataset, or a range of a CSR group's rows or a CSC group's columns with the block's entries kept). See
// hdf5_io.hpp.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"
#include "io/collective_failure.hpp"
#include "io/compressed_block.hpp"
#include "io/hdf5_io.hpp"
#include "io/hdf5_path.hpp"
#include "io/hdf5_util.hpp"
#include "io/input_file.hpp"
#include "io/narrow.hpp"

namespace dnmf::io {
namespace {

using h5::Id;

// Elements per read when a block is converted or filtered on its way in: bounds the extra memory.
constexpr std::size_t kChunkBytes = std::size_t{4} << 20;
// Names listed in a "which matrix?" message.
constexpr std::size_t kListedNames = 20;

/// A matrix object of an open file, with what reading it needs opened.
struct Matrix {
  std::string where;  // "A.h5:/X", for messages
  bool sparse = false;
  detail::Compression compression;  // sparse: CSR or CSC
  index_t rows = 0, cols = 0, stored = 0;
  Id dataset;                // dense
  Id data, indices, indptr;  // sparse
};

std::string dims_text(const std::vector<hsize_t>& dims) {
  if (dims.empty()) return "() (a scalar)";  // a 0-D dataset: numpy's shape ()
  std::string text;
  for (std::size_t d = 0; d < dims.size(); ++d) text += (d > 0 ? "x" : "") + std::to_string(dims[d]);
  return text;
}

std::vector<hsize_t> dims_of(hid_t dataset) {
  const Id space(H5Dget_space(dataset), H5Sclose);
  const int rank = space.valid() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  if (rank < 0) return {};
  std::vector<hsize_t> dims(to_size(rank));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  return dims;
}

H5T_class_t class_of(hid_t dataset) {
  const Id type(H5Dget_type(dataset), H5Tclose);
  return type.valid() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
}

/// Whether `dataset` holds floats wider than T: those are read as double and narrowed by narrow_entry, so that a
/// value T cannot hold is reported as the other readers report it. HDF5's own conversion to float turned 1e39 into
/// inf, 1e-50 into 0 and -1e-300 into -0.0 (a negative entry accepted) without a word.
template <class T>
bool narrows(hid_t dataset) {
  if constexpr (!std::is_same_v<T, float>) {
    return false;
  } else {
    const Id type(H5Dget_type(dataset), H5Tclose);
    return type.valid() && H5Tget_class(type.get()) == H5T_FLOAT && H5Tget_size(type.get()) > sizeof(float);
  }
}

std::string class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER:
      return "integer";
    case H5T_FLOAT:
      return "floating-point";
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound (record)";
    case H5T_ENUM:
      return "enum";
    case H5T_BITFIELD:
      return "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_REFERENCE:
      return "reference";
    case H5T_VLEN:
      return "variable-length";
    case H5T_ARRAY:
      return "array";
    default:
      return "unknown";
  }
}

/// The encoding a group declares: AnnData's "encoding-type", or h5sparse's "h5sparse_format".
std::optional<std::string> encoding_of(hid_t group) {
  if (auto type = h5::string_attribute(group, "encoding-type")) return type;
  if (auto format = h5::string_attribute(group, "h5sparse_format")) return *format + "_matrix";
  return std::nullopt;
}

/// One line about `name` for listings: "/X (2-D dataset 3x4)", "/obs (group)".
std::string describe(hid_t file, const std::string& name) {
  const Id object(H5Oopen(file, name.c_str(), H5P_DEFAULT), H5Oclose);
  if (!object.valid()) return name + " (unreadable link)";
  switch (H5Iget_type(object.get())) {
    case H5I_DATASET: {
      const std::vector<hsize_t> dims = dims_of(object.get());
      return name + " (" + std::to_string(dims.size()) + "-D dataset " + dims_text(dims) + ")";
    }
    case H5I_GROUP: {
      const std::optional<std::string> encoding = encoding_of(object.get());
      return name + " (group" + (encoding ? ", encoding-type " + *encoding : std::string()) + ")";
    }
    default:
      return name + " (named datatype)";
  }
}

/// The full names of the links in `group` ("/" or "/layers"), sorted.
std::vector<std::string> link_names(hid_t file, const std::string& group) {
  H5G_info_t info{};
  if (H5Gget_info_by_name(file, group.c_str(), &info, H5P_DEFAULT) < 0) return {};
  const std::string prefix = group == "/" ? "/" : group + "/";
  std::vector<std::string> names;
  for (hsize_t k = 0; k < info.nlinks; ++k) {
    const ssize_t length =
        H5Lget_name_by_idx(file, group.c_str(), H5_INDEX_NAME, H5_ITER_INC, k, nullptr, 0, H5P_DEFAULT);
    if (length < 0) continue;
    std::string name(to_size(length) + 1, '\0');
    H5Lget_name_by_idx(file, group.c_str(), H5_INDEX_NAME, H5_ITER_INC, k, name.data(), name.size(), H5P_DEFAULT);
    name.resize(to_size(length));
    names.push_back(prefix + name);
  }
  return names;
}

std::vector<std::string> root_names(hid_t file) { return link_names(file, "/"); }

std::string listing(hid_t file) {
  const std::vector<std::string> names = root_names(file);
  if (names.empty()) return "nothing (the file is empty)";
  std::string text;
  for (std::size_t k = 0; k < std::min(names.size(), kListedNames); ++k) {
    text += (k > 0 ? ", " : "") + describe(file, names[k]);
  }
  if (names.size() > kListedNames) text += ", and " + std::to_string(names.size() - kListedNames) + " more";
  return text;
}

/// The filter of the dataset this HDF5 library cannot apply (h5py's LZF, a plugin filter not installed), named
/// as the file names it, or "" when every filter is available. HDF5 reports such a filter only when a read
/// fails, and then with its plugin loader's last complaint ("can't open directory"); a filter marked optional
/// that was skipped when the chunks were written does not stop a read, so this is asked only after one failed.
std::string unavailable_filter(hid_t dataset) {
  const hid_t plist = H5Dget_create_plist(dataset);
  if (plist < 0) return {};
  const Id owned(plist, H5Pclose);
  const int filters = H5Pget_nfilters(plist);
  for (int f = 0; f < filters; ++f) {
    unsigned flags = 0;
    std::size_t values = 0;
    char name[256] = {};
    unsigned config = 0;
    const H5Z_filter_t id =
        H5Pget_filter2(plist, static_cast<unsigned>(f), &flags, &values, nullptr, sizeof name, name, &config);
    if (id >= 0 && H5Zfilter_avail(id) <= 0)
      return (name[0] != '\0' ? "'" + std::string(name) + "' " : std::string()) + "(id " + std::to_string(id) + ")";
  }
  return {};
}

/// After a failed H5Dread: a DataError naming an unavailable compression filter, else one with HDF5's reason (a
/// corrupt chunk: "filter returned failure during read"). The reason is taken before unavailable_filter's own
/// HDF5 calls clear the error stack: the message had lost it, and the exit status said "other" (1), not "bad
/// input data" (3).
[[noreturn]] void fail_read(hid_t dataset, const std::string& what) {
  const std::string reason = h5::last_error();
  if (const std::string filter = unavailable_filter(dataset); !filter.empty())
    throw DataError(what + ": the data are compressed with the HDF5 filter " + filter +
                    ", which this build of HDF5 cannot decode; rewrite the dataset uncompressed or with gzip "
                    "(h5py: compression='gzip')");
  throw DataError(reason.empty() ? what + ": the file's data cannot be decoded (corrupt or truncated?)"
                                 : what + ": " + reason + " (the file's data are corrupt?)");
}

Id open_dataset(hid_t group, const char* name, const std::string& where) {
  return h5::checked(H5Dopen2(group, name, H5P_DEFAULT), H5Dclose, where + ": cannot open dataset '" + name + "'");
}

/// Reads `count` elements from `first` of a 1-D dataset as `memory_type`.
void read_1d(hid_t dataset, hid_t memory_type, hsize_t first, hsize_t count, void* out, const std::string& what) {
  if (count == 0) return;
  const Id space = h5::checked(H5Dget_space(dataset), H5Sclose, what);
  if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &first, nullptr, &count, nullptr) < 0) h5::fail(what);
  const Id memory = h5::checked(H5Screate_simple(1, &count, nullptr), H5Sclose, what);
  if (H5Dread(dataset, memory_type, memory.get(), space.get(), H5P_DEFAULT, out) < 0) fail_read(dataset, what);
}

// h5py's bool: an enum over an integer with the members FALSE = 0 and TRUE = 1 (a mask saved from numpy), read as
// 0 and 1 through HDF5's enum-to-number conversion. Other enums' values are labels, not numbers.
bool is_bool_enum(hid_t dataset) {
  const Id type(H5Dget_type(dataset), H5Tclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_ENUM || H5Tget_nmembers(type.get()) != 2) return false;
  const Id base(H5Tget_super(type.get()), H5Tclose);
  if (!base.valid() || H5Tget_class(base.get()) != H5T_INTEGER) return false;
  for (const auto& [name, value] : {std::pair<const char*, long long>{"FALSE", 0}, {"TRUE", 1}}) {
    // The member's value comes in the base type's format; converted in place to a native long long.
    alignas(8) unsigned char buffer[16] = {};
    if (H5Tget_size(base.get()) > sizeof buffer || H5Tenum_valueof(type.get(), name, buffer) < 0 ||
        H5Tconvert(base.get(), H5T_NATIVE_LLONG, 1, buffer, nullptr, H5P_DEFAULT) < 0)
      return false;
    long long v = 0;
    std::memcpy(&v, buffer, sizeof v);
    if (v != value) return false;
  }
  return true;
}

// An object that is not a matrix at all (a dataset that is not 2-D or not numeric, a group that is no CSR or CSC
// matrix, a named datatype): when the file's matrix is searched for, such objects are passed over. Anything else
// (a damaged object, a malformed CSR group) stops the search: A.h5 with an unreadable /counts beside a small
// /other fitted /other without a word.
class NotAMatrix : public DataError {
 public:
  using DataError::DataError;
};

void open_dense(Matrix& m, Id object) {
  const std::vector<hsize_t> dims = dims_of(object.get());
  if (dims.size() != 2) {
    throw NotAMatrix(m.where + ": is a " + std::to_string(dims.size()) + "-D dataset of shape " + dims_text(dims) +
                     "; expected a 2-D matrix");
  }
  const H5T_class_t type = class_of(object.get());
  if (type != H5T_FLOAT && type != H5T_INTEGER && !is_bool_enum(object.get())) {
    throw NotAMatrix(m.where + ": holds " + class_name(type) + " values; expected numbers (floating-point or integer)");
  }
  // A shape whose cells overflow the index type ("dense matrix size out of range" named nothing), or one its
  // contiguous storage does not hold (a damaged header claimed 4194304 x 100 for 160 KB: 3.3 GB were allocated
  // before the read failed).
  constexpr double kLargest = 4.6e18;  // 2^62: cells, and bytes of any matrix a process can index
  if (static_cast<double>(dims[0]) * static_cast<double>(dims[1]) > kLargest) {
    throw DataError(m.where + ": a dataset of shape " + dims_text(dims) +
                    " has more cells than dnmf can index (2^62); is the file damaged?");
  }
  const Id plist(H5Dget_create_plist(object.get()), H5Pclose);
  const Id type_id(H5Dget_type(object.get()), H5Tclose);
  if (plist.valid() && type_id.valid() && H5Pget_layout(plist.get()) == H5D_CONTIGUOUS) {
    const double needed =
        static_cast<double>(dims[0]) * static_cast<double>(dims[1]) * static_cast<double>(H5Tget_size(type_id.get()));
    const double held = static_cast<double>(H5Dget_storage_size(object.get()));
    if (held > 0 && held < needed) {
      char text[160];
      std::snprintf(text, sizeof text, ": the shape %s needs %.0f bytes of values but the dataset's storage holds %.0f",
                    dims_text(dims).c_str(), needed, held);
      throw DataError(m.where + text + " (the file is damaged or truncated)");
    }
  }
  m.rows = static_cast<index_t>(dims[0]);
  m.cols = static_cast<index_t>(dims[1]);
  m.stored = m.rows * m.cols;
  m.dataset = std::move(object);
}

// A CSC group (AnnData writes one for a scipy CSC matrix) is the CSR storage of Aᵀ: read by column ranges and
// transposed block by block (detail::CompressedBlock), so no process needs more than its block either way.
void open_compressed(Matrix& m, hid_t group) {
  const std::optional<std::string> encoding = encoding_of(group);
  if (encoding && *encoding != "csr_matrix" && *encoding != "csc_matrix") {
    throw NotAMatrix(m.where + ": is a group of encoding-type '" + *encoding + "', not a CSR or CSC matrix");
  }
  m.compression.by_columns = encoding && *encoding == "csc_matrix";
  const std::string kind = m.compression.by_columns ? "CSC" : "CSR";
  for (const char* name : {"data", "indices", "indptr"}) {
    if (H5Lexists(group, name, H5P_DEFAULT) <= 0) {
      throw NotAMatrix(m.where + ": is a group without a '" + name + "' dataset; a " + kind +
                       " matrix group holds data, indices and indptr");
    }
    // A member that is a group, or a link to nothing, is the file's structure at fault (bad input, exit 3),
    // not a failure to read it.
    const hid_t object = H5Oopen(group, name, H5P_DEFAULT);
    const bool dataset = object >= 0 && H5Iget_type(object) == H5I_DATASET;
    if (object >= 0) H5Oclose(object);
    if (!dataset) {
      throw DataError(m.where + ": its '" + name + "' is " +
                      (object >= 0 ? "not a dataset (a group?)" : "a link that leads nowhere") + "; a " + kind +
                      " matrix group holds data, indices and indptr datasets");
    }
  }
  std::optional<std::vector<std::int64_t>> shape = h5::integer_attribute(group, "shape");
  if (!shape) shape = h5::integer_attribute(group, "h5sparse_shape");
  if (!shape) {
    throw DataError(m.where + ": " + kind + " group has no integer 'shape' attribute (expected [rows, columns])");
  }
  // 2^62 at most: a uint64 shape of 2^64 - 1 was read clamped to 2^63 - 1, and the row count + 1 overflowed.
  constexpr std::int64_t kLargestSide = std::int64_t{1} << 62;
  if (shape->size() != 2 || (*shape)[0] < 0 || (*shape)[1] < 0 || (*shape)[0] > kLargestSide ||
      (*shape)[1] > kLargestSide) {
    std::string text;
    for (std::size_t k = 0; k < shape->size(); ++k) text += (k > 0 ? ", " : "") + std::to_string((*shape)[k]);
    throw DataError(m.where + ": " + kind + " group's 'shape' attribute is [" + text +
                    "]; expected two non-negative integers [rows, columns], each at most 2^62");
  }
  m.sparse = true;
  m.rows = (*shape)[0];
  m.cols = (*shape)[1];
  m.data = open_dataset(group, "data", m.where);
  m.indices = open_dataset(group, "indices", m.where);
  m.indptr = open_dataset(group, "indptr", m.where);
  const auto length = [&](const Id& dataset, const char* name) {
    const std::vector<hsize_t> dims = dims_of(dataset.get());
    if (dims.size() != 1) {
      throw DataError(m.where + ": '" + name + "' is a " + std::to_string(dims.size()) + "-D dataset; expected 1-D");
    }
    return static_cast<index_t>(dims[0]);
  };
  const index_t nnz = length(m.data, "data");
  if (length(m.indices, "indices") != nnz) {
    throw DataError(m.where + ": 'indices' has " + std::to_string(length(m.indices, "indices")) +
                    " entries but 'data' has " + std::to_string(nnz));
  }
  const index_t lines = m.compression.by_columns ? m.cols : m.rows;
  if (length(m.indptr, "indptr") != lines + 1) {
    throw DataError(m.where + ": 'indptr' has " + std::to_string(length(m.indptr, "indptr")) + " entries; the shape [" +
                    std::to_string(m.rows) + ", " + std::to_string(m.cols) + "] of a " + kind + " matrix needs " +
                    std::to_string(lines + 1));
  }
  const H5T_class_t data_type = class_of(m.data.get());
  if (data_type != H5T_FLOAT && data_type != H5T_INTEGER) {
    throw DataError(m.where + ": 'data' holds " + class_name(data_type) + " values; expected numbers");
  }
  for (const auto& [dataset, name] : {std::pair{&m.indices, "indices"}, std::pair{&m.indptr, "indptr"}}) {
    if (class_of(dataset->get()) != H5T_INTEGER) {
      throw DataError(m.where + ": '" + name + "' holds " + class_name(class_of(dataset->get())) +
                      " values; expected integers");
    }
  }
  std::int64_t ends[2] = {0, 0};
  read_1d(m.indptr.get(), H5T_NATIVE_INT64, 0, 1, &ends[0], m.where + ": cannot read 'indptr'");
  read_1d(m.indptr.get(), H5T_NATIVE_INT64, static_cast<hsize_t>(lines), 1, &ends[1],
          m.where + ": cannot read 'indptr'");
  if (ends[0] != 0 || ends[1] != nnz) {
    throw DataError(m.where + ": 'indptr' runs from " + std::to_string(ends[0]) + " to " + std::to_string(ends[1]) +
                    "; expected 0 to " + std::to_string(nnz) + " (the length of 'data')");
  }
  m.stored = nnz;
}

/// After H5Fopen failed on `file` (whose HDF5 signature check_file saw): another writer's lock is an I/O condition
/// with its remedy (it was "bad data", exit 3, for a file that is fine); anything else is a file HDF5 cannot read.
[[noreturn]] void fail_file_open(const std::string& file) {
  const std::string reason = h5::last_error();
  if (reason.find("unable to lock file") != std::string::npos) {  // HDF5 1.10-2.0 words it so
    throw IoError(file + ": cannot open as HDF5: " + reason +
                  " (another program holds it open for writing: close it first, or set HDF5_USE_FILE_LOCKING=FALSE "
                  "if that program only reads)");
  }
  throw DataError(reason.empty() ? file + ": cannot open as HDF5" : file + ": cannot open as HDF5: " + reason);
}

/// Opens `name` (which exists) as a matrix; throws a dnmf::Error saying why it is not one.
Matrix open_matrix(hid_t file, const std::string& file_path, const std::string& name) {
  Matrix m;
  m.where = file_path + ":" + name;
  // The name exists. A failure is either a link to nothing (a dangling soft link, an external link whose file is
  // missing: the input cannot be reached, exit 4) or an object whose header this HDF5 cannot read: damaged, or in
  // a newer format (h5py with libver='latest'), bad input (exit 3), which was called a missing link.
  const hid_t opened = H5Oopen(file, name.c_str(), H5P_DEFAULT);
  if (opened < 0) {
    const std::string reason = h5::last_error();
    H5L_info_t link{};
    const bool hard = H5Lget_info(file, name.c_str(), &link, H5P_DEFAULT) >= 0 && link.type == H5L_TYPE_HARD;
    const std::string because = reason.empty() ? std::string() : ": " + reason;
    if (!hard) throw IoError(m.where + ": cannot open (a link to an object or file that is not there?)" + because);
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    throw DataError(m.where + ": cannot open the object" + because + " (it is damaged, or written in a newer format " +
                    "than this build's HDF5 " + std::to_string(major) + "." + std::to_string(minor) + "." +
                    std::to_string(release) + " reads: h5py's libver='latest' writes such files)");
  }
  Id object(opened, H5Oclose);
  switch (H5Iget_type(object.get())) {
    case H5I_DATASET:
      open_dense(m, std::move(object));
      break;
    case H5I_GROUP:
      open_compressed(m, object.get());
      break;
    default:
      throw NotAMatrix(m.where + ": is a named datatype, not a matrix");
  }
  return m;
}

/// The matrix `requested` names, or the default one (see hdf5_shape()).
Matrix locate(hid_t file, const std::string& file_path, std::string requested) {
  if (!requested.empty()) {
    if (requested.front() != '/') requested = "/" + requested;
    // "//nothere" read as existing (its first prefix is the root): repeated slashes are one, as HDF5 reads them.
    for (auto at = requested.find("//"); at != std::string::npos; at = requested.find("//", at)) requested.erase(at, 1);
    if (!h5::exists(file, requested)) {
      throw DataError(file_path + ": has no object '" + requested + "'; the file holds " + listing(file));
    }
    return open_matrix(file, file_path, requested);
  }
  if (h5::exists(file, "/X")) return open_matrix(file, file_path, "/X");
  if (is_anndata_file(file_path)) {
    // AnnData keeps its matrix at /X (absent when adata.X was None); a search could pick an unrelated array.
    std::string layers;
    if (h5::exists(file, "/layers")) {
      for (const std::string& name : link_names(file, "/layers")) layers += (layers.empty() ? "" : ", ") + name;
    }
    throw DataError(file_path + ": AnnData file without /X (its matrix; adata.X was None?); name a matrix as " +
                    file_path + ":/layers/NAME" +
                    (layers.empty() ? ". The file holds " + listing(file) : " (layers: " + layers + ")"));
  }
  std::vector<Matrix> found;
  for (const std::string& name : root_names(file)) {
    try {
      found.push_back(open_matrix(file, file_path, name));
    } catch (const NotAMatrix&) {  // not a candidate
    }
  }
  if (found.size() == 1) return std::move(found.front());
  if (found.empty()) {
    throw DataError(file_path +
                    ": holds no matrix at /X or at the root (a 2-D dataset, or a CSR or CSC group with data, indices, "
                    "indptr and a shape attribute); name one as " +
                    file_path + ":/path. The file holds " + listing(file));
  }
  std::string names;
  for (const Matrix& m : found) names += (names.empty() ? "" : ", ") + m.where.substr(file_path.size() + 1);
  throw DataError(file_path + ": holds several matrices (" + names + "); name one, e.g. " + found.front().where);
}

/// A readable HDF5 file (checked by each rank on its own before any collective open).
void check_file(const std::string& file) {
  { const detail::InputFile probe(file); }  // "cannot open: No such file or directory" and the like
  const htri_t hdf5 = H5Fis_hdf5(file.c_str());
  if (hdf5 == 0) throw DataError(file + ": not an HDF5 file (no HDF5 signature found)");
  if (hdf5 < 0) h5::fail(file + ": cannot check whether it is an HDF5 file");
}

void check_range(const Matrix& m, const char* what, dist::Range range, index_t extent) {
  if (range.first < 0 || range.first > range.last || range.last > extent) {
    throw DataError(m.where + ": " + what + " range [" + std::to_string(range.first) + ", " +
                    std::to_string(range.last) + ") is out of bounds for a " + std::to_string(m.rows) + "x" +
                    std::to_string(m.cols) + " matrix");
  }
}

template <class T>
DenseMatrix<T> read_dense(const Matrix& m, dist::Range rows, dist::Range cols, bool check_entries) {
  DenseMatrix<T> out(rows.size(), cols.size());
  if (out.view().empty()) return out;
  const index_t cb = cols.size();
  // Row-major slabs of whole block rows, transposed into the column-major block.
  const index_t slab = std::max<index_t>(1, static_cast<index_t>(kChunkBytes / sizeof(T)) / cb);
  std::vector<T> buffer(to_size(std::min(slab, rows.size()) * cb));
  std::vector<double> wide(narrows<T>(m.dataset.get()) ? buffer.size() : 0);
  const std::string what = m.where + ": cannot read rows [" + std::to_string(rows.first) + ", " +
                           std::to_string(rows.last) + ") x columns [" + std::to_string(cols.first) + ", " +
                           std::to_string(cols.last) + ")";
  const Id space = h5::checked(H5Dget_space(m.dataset.get()), H5Sclose, what);
  for (index_t i0 = 0; i0 < rows.size(); i0 += slab) {
    const index_t ri = std::min(slab, rows.size() - i0);
    const hsize_t start[2] = {static_cast<hsize_t>(rows.first + i0), static_cast<hsize_t>(cols.first)};
    const hsize_t count[2] = {static_cast<hsize_t>(ri), static_cast<hsize_t>(cb)};
    if (H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, count, nullptr) < 0) h5::fail(what);
    const Id memory = h5::checked(H5Screate_simple(2, count, nullptr), H5Sclose, what);
    if (wide.empty()) {
      if (H5Dread(m.dataset.get(), h5::native_type<T>(), memory.get(), space.get(), H5P_DEFAULT, buffer.data()) < 0)
        fail_read(m.dataset.get(), what);
    } else {
      if (H5Dread(m.dataset.get(), H5T_NATIVE_DOUBLE, memory.get(), space.get(), H5P_DEFAULT, wide.data()) < 0)
        fail_read(m.dataset.get(), what);
      const std::size_t read = to_size(ri * cb);
      for (std::size_t q = 0; q < read; ++q) buffer[q] = narrow_entry<T>(wide[q]);
    }
    // Tiles of 64 columns keep the strided writes into the column-major block within cache.
    for (index_t j0 = 0; j0 < cb; j0 += 64) {
      const index_t j1 = std::min(cb, j0 + 64);
      for (index_t i = 0; i < ri; ++i)
        for (index_t j = j0; j < j1; ++j) out(i0 + i, j) = buffer[to_size(i * cb + j)];
    }
  }
  if (check_entries) check_nonnegative<T>(out.view(), m.where, rows.first, cols.first);
  return out;
}

/// The block of a CSR group (its rows' range of indptr, data and indices) or of a CSC group (its columns' range).
template <class T>
CsrMatrix<T> read_compressed(const Matrix& m, dist::Range rows, dist::Range cols, bool check_entries) {
  const detail::Compression c = m.compression;
  detail::CompressedBlock<T> block(m.where, c, rows, cols, m.rows, m.cols, check_entries);
  const dist::Range lines = c.by_columns ? cols : rows;
  const index_t count_lines = lines.size();
  std::vector<std::int64_t> ptr(to_size(count_lines) + 1);
  read_1d(m.indptr.get(), H5T_NATIVE_INT64, static_cast<hsize_t>(lines.first), ptr.size(), ptr.data(),
          m.where + ": cannot read 'indptr'");
  for (index_t i = 0; i < count_lines; ++i) {
    if (ptr[i + 1] < ptr[i]) {
      throw DataError(m.where + ": 'indptr' decreases at " + c.major() + " " + std::to_string(lines.first + i) +
                      " (from " + std::to_string(ptr[i]) + " to " + std::to_string(ptr[i + 1]) + ")");
    }
  }
  if (ptr[0] < 0 || ptr[count_lines] > m.stored) {
    throw DataError(m.where + ": 'indptr' of " + c.major() + "s [" + std::to_string(lines.first) + ", " +
                    std::to_string(lines.last) + ") points outside the " + std::to_string(m.stored) +
                    " stored entries");
  }
  // The lines' entries in chunks, so the extra memory stays bounded whatever the block's size.
  const std::size_t chunk = kChunkBytes / (sizeof(std::int64_t) + sizeof(T));
  std::vector<std::int64_t> index_buffer;
  std::vector<T> value_buffer;
  std::vector<double> wide;
  const bool narrowing = narrows<T>(m.data.get());
  index_t i = 0;  // local line of the entry at hand
  for (std::int64_t first = ptr[0]; first < ptr[count_lines];) {
    const auto count = to_size(std::min<std::int64_t>(static_cast<std::int64_t>(chunk), ptr[count_lines] - first));
    index_buffer.resize(count);
    value_buffer.resize(count);
    read_1d(m.indices.get(), H5T_NATIVE_INT64, static_cast<hsize_t>(first), count, index_buffer.data(),
            m.where + ": cannot read 'indices'");
    if (narrowing) {
      wide.resize(count);
      read_1d(m.data.get(), H5T_NATIVE_DOUBLE, static_cast<hsize_t>(first), count, wide.data(),
              m.where + ": cannot read 'data'");
      for (std::size_t t = 0; t < count; ++t) value_buffer[t] = narrow_entry<T>(wide[t]);
    } else {
      read_1d(m.data.get(), h5::native_type<T>(), static_cast<hsize_t>(first), count, value_buffer.data(),
              m.where + ": cannot read 'data'");
    }
    for (std::size_t t = 0; t < count; ++t) {
      const std::int64_t k = first + static_cast<std::int64_t>(t);
      while (ptr[i + 1] <= k) ++i;
      block.add(lines.first + i, k, index_buffer[t], value_buffer[t]);
    }
    first += static_cast<std::int64_t>(count);
  }
  return std::move(block).finish();
}

}  // namespace

bool hdf5_built() { return true; }

MatrixShape hdf5_shape(const std::string& path) {
  const Hdf5Path parts = split_hdf5_path(path);
  const h5::QuietErrors quiet;
  check_file(parts.file);
  const hid_t opened = H5Fopen(parts.file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (opened < 0) fail_file_open(parts.file);
  const Id file(opened, H5Fclose);
  const Matrix m = locate(file.get(), parts.file, parts.object);
  return {m.rows, m.cols, m.stored, m.sparse};
}

template <class T>
LocalBlock<T> read_hdf5_block(const std::string& path, dist::Range rows, dist::Range cols, dist::Communicator& comm,
                              bool check_entries) {
  const Hdf5Path parts = split_hdf5_path(path);
  const h5::QuietErrors quiet;
  // Each rank first checks the file on its own, so that none enters the collective open alone.
  detail::run_agreed(comm, path, [&] { check_file(parts.file); });
  Id access = detail::run_agreed(comm, path, [&] { return h5::file_access(comm); });
  const Id file(H5Fopen(parts.file.c_str(), H5F_ACC_RDONLY, access.get()), H5Fclose);  // collective with MPI-IO
  // The object's metadata: the same on every rank (identical calls on the same file).
  std::optional<Matrix> matrix;
  detail::run_agreed(comm, path, [&] {
    if (!file.valid()) fail_file_open(parts.file);
    matrix.emplace(locate(file.get(), parts.file, parts.object));
  });
  // This rank's rows: independent reads.
  return detail::run_agreed(comm, path, [&] {
    const Matrix& m = *matrix;
    check_range(m, "row", rows, m.rows);
    check_range(m, "column", cols, m.cols);
    LocalBlock<T> block;
    block.sparse = m.sparse;
    if (m.sparse) {
      block.csr = read_compressed<T>(m, rows, cols, check_entries);
    } else {
      block.dense = read_dense<T>(m, rows, cols, check_entries);
    }
    return block;
  });
}

template LocalBlock<float> read_hdf5_block<float>(const std::string&, dist::Range, dist::Range, dist::Communicator&,
                                                  bool);
template LocalBlock<double> read_hdf5_block<double>(const std::string&, dist::Range, dist::Range, dist::Communicator&,
                                                    bool);

}  // namespace dnmf::io
