// Positioned, chunked reads over a POSIX descriptor; see input_file.hpp.

#include "io/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "io/regular_file.hpp"

namespace dnmf::io::detail {
namespace {

// Linux moves at most ~2 GiB per read call; larger requests are split.
constexpr std::size_t kMaxReadBytes = std::size_t{1} << 30;

[[noreturn]] void fail(const std::string& path, const std::string& what, int error) {
  throw IoError(path + ": " + what + ": " + std::strerror(error));
}

}  // namespace

InputFile::InputFile(const std::string& path) : path_(path) {
  fd_ = open_regular_file(path);
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    fail(path, "cannot stat", error);
  }
  size_ = static_cast<std::uint64_t>(info.st_size);
}

InputFile::~InputFile() { ::close(fd_); }

void InputFile::read_exact(std::uint64_t offset, void* buffer, std::size_t count) const {
  auto* out = static_cast<char*>(buffer);
  while (count > 0) {
    const ssize_t got = ::pread(fd_, out, std::min(count, kMaxReadBytes), static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      fail(path_, "read error at byte " + std::to_string(offset), errno);
    }
    if (got == 0 && offset < size_)  // shorter than when it was opened: changed under the run
      throw_shrank(path_, fd_, size_, offset);
    if (got == 0) throw DataError(path_ + ": unexpected end of file at byte " + std::to_string(offset));
    out += got;
    offset += static_cast<std::uint64_t>(got);
    count -= to_size(got);
  }
}

std::string InputFile::read_all() const {
  if (size_ > std::numeric_limits<std::size_t>::max()) throw Error(path_ + ": file too large to read");
  std::string text;
  try {
    text.resize(to_size(size_));
  } catch (const std::bad_alloc&) {
    throw Error(path_ + ": cannot allocate " + std::to_string(size_) + " bytes to read the file");
  } catch (const std::length_error&) {
    throw Error(path_ + ": cannot allocate " + std::to_string(size_) + " bytes to read the file");
  }
  read_exact(0, text.data(), text.size());
  return text;
}

}  // namespace dnmf::io::detail
