// HDF5 helpers; see hdf5_util.hpp.
#include "io/hdf5_util.hpp"

#include <mutex>

#include "dist/mpi_handle.hpp"
#include "dnmf/error.hpp"
#include "dnmf/index.hpp"

namespace dnmf::io::h5 {

namespace {
std::recursive_mutex& hdf5_lock() {
  static std::recursive_mutex lock;
  return lock;
}
}  // namespace

QuietErrors::QuietErrors() : lock_(hdf5_lock()) {
  H5Eget_auto2(H5E_DEFAULT, &function_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, function_, data_); }

std::string last_error() {
  std::string message;
  // Walking upwards starts at the innermost record: the cause ("file signature not found"), not the API call.
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* record, void* out) -> herr_t {
        auto& text = *static_cast<std::string*>(out);
        if (text.empty() && record->desc != nullptr) text = record->desc;
        return 0;
      },
      &message);
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return message;
}

namespace {

// "<what>: <HDF5's reason>", or `what` alone when the error stack is empty.
std::string with_reason(const std::string& what) {
  const std::string reason = last_error();
  return reason.empty() ? what : what + ": " + reason;
}

}  // namespace

void fail(const std::string& what) { throw Error(with_reason(what)); }

void fail_data(const std::string& what) { throw DataError(with_reason(what)); }

void fail_io(const std::string& what) { throw IoError(with_reason(what)); }

Id checked(hid_t id, Id::Close close, const std::string& what) {
  if (id < 0) fail(what);
  return Id(id, close);
}

Id file_access(const dist::Communicator& comm) {
  Id fapl = checked(H5Pcreate(H5P_FILE_ACCESS), H5Pclose, "cannot create an HDF5 file access list");
  if (comm.size() > 1 && H5Pset_fapl_mpio(fapl.get(), dist::mpi_handle(comm), MPI_INFO_NULL) < 0) {
    fail("cannot set up MPI-IO file access");
  }
  return fapl;
}

std::optional<std::string> string_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  const Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!attribute.valid()) return std::nullopt;
  const Id type(H5Aget_type(attribute.get()), H5Tclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_STRING) return std::nullopt;
  const Id space(H5Aget_space(attribute.get()), H5Sclose);
  if (!space.valid() || H5Sget_simple_extent_npoints(space.get()) != 1) return std::nullopt;
  if (H5Tis_variable_str(type.get()) > 0) {
    const Id memory(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(memory.get(), H5T_VARIABLE);
    H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
    char* value = nullptr;
    if (H5Aread(attribute.get(), memory.get(), &value) < 0) return std::nullopt;
    std::string text = value != nullptr ? value : "";
    H5free_memory(value);
    return text;
  }
  const std::size_t size = H5Tget_size(type.get());
  std::string text(size, '\0');
  if (size == 0 || H5Aread(attribute.get(), type.get(), text.data()) < 0) return std::nullopt;
  while (!text.empty() && (text.back() == '\0' || text.back() == ' ')) text.pop_back();  // padding
  return text;
}

std::optional<std::vector<std::int64_t>> integer_attribute(hid_t object, const char* name) {
  if (H5Aexists(object, name) <= 0) return std::nullopt;
  const Id attribute(H5Aopen(object, name, H5P_DEFAULT), H5Aclose);
  if (!attribute.valid()) return std::nullopt;
  const Id type(H5Aget_type(attribute.get()), H5Tclose);
  if (!type.valid() || H5Tget_class(type.get()) != H5T_INTEGER) return std::nullopt;
  const Id space(H5Aget_space(attribute.get()), H5Sclose);
  const hssize_t count = space.valid() ? H5Sget_simple_extent_npoints(space.get()) : -1;
  if (count < 0 || count > 64) return std::nullopt;
  std::vector<std::int64_t> values(to_size(count));
  if (count > 0 && H5Aread(attribute.get(), H5T_NATIVE_INT64, values.data()) < 0) return std::nullopt;
  return values;
}

void write_string_attribute(hid_t object, const char* name, const std::string& value, const std::string& where) {
  const Id type = checked(H5Tcopy(H5T_C_S1), H5Tclose, where + ": cannot create a string type");
  H5Tset_size(type.get(), H5T_VARIABLE);
  H5Tset_cset(type.get(), H5T_CSET_UTF8);
  const Id space = checked(H5Screate(H5S_SCALAR), H5Sclose, where + ": cannot create a dataspace");
  const Id attribute = checked(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                               where + ": cannot create attribute '" + name + "'");
  const char* text = value.c_str();
  if (H5Awrite(attribute.get(), type.get(), &text) < 0) fail(where + ": cannot write attribute '" + name + "'");
}

void write_integer_attribute(hid_t object, const char* name, const std::vector<std::int64_t>& values,
                             const std::string& where) {
  const hsize_t count = values.size();
  const Id space = checked(H5Screate_simple(1, &count, nullptr), H5Sclose, where + ": cannot create a dataspace");
  const Id attribute = checked(H5Acreate2(object, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose,
                               where + ": cannot create attribute '" + name + "'");
  if (H5Awrite(attribute.get(), H5T_NATIVE_INT64, values.data()) < 0) {
    fail(where + ": cannot write attribute '" + name + "'");
  }
}

bool exists(hid_t file, const std::string& name) {
  // H5Lexists fails (rather than saying no) when a group on the way is missing: check each prefix.
  std::size_t slash = name.find('/', 1);
  for (;;) {
    const std::string prefix = name.substr(0, slash);
    if (prefix.empty() || prefix == "/") return true;
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    slash = name.find('/', slash + 1);
  }
}

}  // namespace dnmf::io::h5
