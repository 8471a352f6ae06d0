#include "stream/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "io/regular_file.hpp"

namespace dnmf::stream {

ReadFile::ReadFile(const std::string& path) : path_(path) {
  fd_ = io::detail::open_regular_file(path);
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw IoError(path + ": cannot stat (" + std::strerror(err) + ")");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

void ReadFile::read(std::uint64_t offset, void* buffer, std::size_t count) const {
  const std::uint64_t start = offset;
  const std::size_t total = count;
  auto* out = static_cast<char*>(buffer);
  while (count > 0) {
    // Linux transfers at most about 2 GiB per call; ask for less so the loop is the normal path.
    const std::size_t ask = count < (std::size_t{1} << 30) ? count : (std::size_t{1} << 30);
    const ssize_t got = ::pread(fd_, out, ask, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      throw IoError(path_ + ": read of " + std::to_string(ask) + " bytes at offset " + std::to_string(offset) +
                    " failed (" + std::strerror(errno) + ")");
    }
    if (got == 0 && offset < size_)  // shorter than when it was opened: changed under the run
      io::detail::throw_shrank(path_, fd_, size_, offset);
    if (got == 0)
      throw DataError(path_ + ": file ends at " + std::to_string(offset) + " bytes, " + std::to_string(count) +
                      " more were expected (truncated?)");
    out += got;
    offset += static_cast<std::uint64_t>(got);
    count -= to_size(got);
  }
  if (drop_behind_)
    (void)::posix_fadvise(fd_, static_cast<off_t>(start), static_cast<off_t>(total), POSIX_FADV_DONTNEED);
}

void ReadFile::advise_sequential() const { (void)::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL); }

bool evict_from_page_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  (void)::fdatasync(fd);
  const bool ok = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

}  // namespace dnmf::stream
