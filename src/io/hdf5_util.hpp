// dnmf internal: small helpers over the HDF5 C API shared by the reader and the writers: owned identifiers,
// quiet error stacks turned into one-line messages, attributes, and the file access of a communicator.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/communicator.hpp"

namespace dnmf::io::h5 {

/// An owned HDF5 identifier, closed with the close function of its kind.
class Id {
 public:
  using Close = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Close close) : id_(id), close_(close) {}
  Id(Id&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)), close_(other.close_) {}
  Id& operator=(Id&& other) noexcept {
    std::swap(id_, other.id_);
    std::swap(close_, other.close_);
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
  }
  /// Closes now, returning the close function's status (0 when already closed).
  herr_t close() {
    const herr_t status = id_ >= 0 && close_ != nullptr ? close_(id_) : 0;
    id_ = H5I_INVALID_HID;
    return status;
  }
  [[nodiscard]] hid_t get() const { return id_; }
  [[nodiscard]] bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  Close close_ = nullptr;
};

/// Held by every entry point of the HDF5 code for its whole work: stops HDF5 from printing its error stack to
/// stderr (our messages say what failed), and holds the process's HDF5 lock. Debian's HDF5 is built without
/// thread safety, so two threads reading files at once (Python threads, with the GIL released during a fit)
/// crashed in H5Pclose or read valid files as empty; they now take turns. The lock is recursive (an entry point
/// may call another) and is taken before, and released after, every HDF5 object the entry point opens, which
/// are declared after it.
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;  // first: taken before the error handler is swapped
  H5E_auto2_t function_ = nullptr;
  void* data_ = nullptr;
};

/// The most specific message on HDF5's error stack after a failed call ("" when empty).
std::string last_error();

/// Throws dnmf::Error "<what>: <HDF5's reason>".
[[noreturn]] void fail(const std::string& what);
/// fail() for a file that is not readable HDF5 (truncated, damaged, another format): a DataError, exit 3.
[[noreturn]] void fail_data(const std::string& what);
/// fail() as an IoError: input that cannot be reached (a dangling link, an external link's missing file).
[[noreturn]] void fail_io(const std::string& what);

/// `id` when valid, else fail(what).
Id checked(hid_t id, Id::Close close, const std::string& what);

/// A file access property list: MPI-IO on `comm`'s MPI communicator when comm.size() > 1, else the default.
Id file_access(const dist::Communicator& comm);

/// The native memory type of float or double.
template <class T>
hid_t native_type() {
  return sizeof(T) == 4 ? H5T_NATIVE_FLOAT : H5T_NATIVE_DOUBLE;
}

/// The string attribute `name` of `object` (fixed or variable length), or nullopt when absent or not a string.
std::optional<std::string> string_attribute(hid_t object, const char* name);

/// The integer attribute `name` of `object` as a list, or nullopt when absent or not integers.
std::optional<std::vector<std::int64_t>> integer_attribute(hid_t object, const char* name);

/// Writes a scalar variable-length UTF-8 string attribute, as h5py and AnnData do.
void write_string_attribute(hid_t object, const char* name, const std::string& value, const std::string& where);

/// Writes a 1-D int64 attribute.
void write_integer_attribute(hid_t object, const char* name, const std::vector<std::int64_t>& values,
                             const std::string& where);

/// True when the link `name` ("/a/b") exists, every group on the way included.
bool exists(hid_t file, const std::string& name);

}  // namespace dnmf::io::h5
