// Zip members through libzip; see zip_archive.hpp.

#include "io/zip_archive.hpp"

#include <zip.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "io/input_file.hpp"

namespace dnmf::io::detail {
namespace {

// Deflate expands at most about 1032:1; a directory entry claiming more is damaged, and believing it would
// allocate (and zero) memory for data that cannot be there.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

std::string reason_of(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

std::string open_problem(int code) {
  switch (code) {
    case ZIP_ER_NOZIP:
      return "not a zip archive, or one cut short (no zip directory at its end); an .npz file is a zip archive "
             "as numpy.savez and scipy.sparse.save_npz write it";
    case ZIP_ER_INCONS:
      return "damaged zip archive (its directory is inconsistent; was the file cut short or changed?)";
    default:
      return "cannot open as a zip archive: " + reason_of(code);
  }
}

}  // namespace

ZipArchive::ZipArchive(const std::string& path) : path_(path) {
  { const InputFile probe(path); }  // "cannot open: No such file or directory", "is a directory", as elsewhere
  int code = 0;
  archive_ = zip_open(path.c_str(), ZIP_RDONLY, &code);
  if (archive_ == nullptr) {
    // A file that is there but is no (intact) zip is bad data; one that cannot be opened or read is I/O.
    if (code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS) throw DataError(path + ": " + open_problem(code));
    throw IoError(path + ": " + open_problem(code));
  }
  const zip_int64_t count = zip_get_num_entries(archive_, 0);
  for (zip_int64_t k = 0; k < count; ++k) {
    const char* name = zip_get_name(archive_, static_cast<zip_uint64_t>(k), ZIP_FL_ENC_GUESS);
    names_.emplace_back(name != nullptr ? name : "");
  }
}

ZipArchive::~ZipArchive() {
  if (archive_ != nullptr) zip_discard(archive_);  // read-only: nothing to write back
}

std::optional<std::size_t> ZipArchive::find(const std::string& name) const {
  const auto it = std::find(names_.begin(), names_.end(), name);
  if (it == names_.end()) return std::nullopt;
  // Two members of one name: numpy reads the last, this reader read the first, silently.
  if (std::find(it + 1, names_.end(), name) != names_.end())
    throw DataError(path_ + ": holds more than one member named '" + name +
                    "' (which one is meant is ambiguous: numpy reads the last); rewrite the archive");
  return to_size(it - names_.begin());
}

std::uint64_t ZipArchive::size(std::size_t index) const {
  const std::string where = path_ + ":" + names_.at(index);
  zip_stat_t stat;
  zip_stat_init(&stat);
  if (zip_stat_index(archive_, index, 0, &stat) != 0 || (stat.valid & ZIP_STAT_SIZE) == 0) {
    throw DataError(where + ": cannot read the member's directory entry: " + zip_strerror(archive_));
  }
  const bool known_compressed = (stat.valid & ZIP_STAT_COMP_SIZE) != 0 && (stat.valid & ZIP_STAT_COMP_METHOD) != 0;
  if (known_compressed && stat.comp_method == ZIP_CM_STORE && stat.size != stat.comp_size) {
    throw DataError(where + ": damaged zip entry: a stored (uncompressed) member of " + std::to_string(stat.comp_size) +
                    " bytes claims " + std::to_string(stat.size));
  }
  if (known_compressed && stat.comp_method == ZIP_CM_DEFLATE && stat.size / kMaxDeflateRatio > stat.comp_size + 1) {
    throw DataError(where + ": damaged zip entry: " + std::to_string(stat.comp_size) +
                    " compressed bytes claim to hold " + std::to_string(stat.size) +
                    ", more than deflate can expand to");
  }
  return stat.size;
}

std::string ZipArchive::read(std::size_t index) const { return read_bytes(index, size(index), true); }

std::string ZipArchive::read_prefix(std::size_t index, std::size_t count) const {
  return read_bytes(index, std::min<std::uint64_t>(count, size(index)), false);
}

std::string ZipArchive::read_bytes(std::size_t index, std::uint64_t count, bool whole) const {
  const std::string where = path_ + ":" + names_.at(index);
  std::string bytes;
  try {
    if (count > std::numeric_limits<std::size_t>::max()) throw std::length_error("member too large");
    bytes.resize(to_size(count));
  } catch (const std::bad_alloc&) {
    throw IoError(where + ": cannot allocate " + std::to_string(count) + " bytes to uncompress the member");
  } catch (const std::length_error&) {
    throw IoError(where + ": cannot allocate " + std::to_string(count) + " bytes to uncompress the member");
  }
  const std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen_index(archive_, index, 0), zip_fclose);
  if (!file) throw DataError(where + ": cannot open the member: " + zip_strerror(archive_));
  // A CRC or zlib stream error: the archive's bytes are damaged (bad input data, exit 3).
  const auto failed = [&] { return DataError(where + ": cannot uncompress: " + zip_file_strerror(file.get())); };
  std::uint64_t got = 0;
  while (got < count) {
    const zip_int64_t n = zip_fread(file.get(), bytes.data() + got, count - got);
    if (n < 0) throw failed();
    if (n == 0) {
      throw DataError(where + ": the member ends after " + std::to_string(got) + " of the " + std::to_string(count) +
                      " bytes its directory entry states (damaged archive)");
    }
    got += static_cast<std::uint64_t>(n);
  }
  if (whole) {
    // libzip compares the checksum when it reaches the member's end, which only a read past the data finds.
    char extra = 0;
    const zip_int64_t n = zip_fread(file.get(), &extra, 1);
    if (n < 0) throw failed();
    if (n > 0) {
      throw DataError(where + ": the member holds more than the " + std::to_string(count) +
                      " bytes its directory entry states (damaged archive)");
    }
  }
  return bytes;
}

}  // namespace dnmf::io::detail
