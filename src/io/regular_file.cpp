// See regular_file.hpp.

#include "io/regular_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "dnmf/error.hpp"

namespace dnmf::io::detail {
namespace {

/// What the user sees: the kind of file, so that "why does dnmf not read my pipe" answers itself.
const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

[[noreturn]] void refuse(const std::string& path, mode_t mode) {
  throw IoError(path + ": is " + kind_of(mode) +
                ", not a regular file; dnmf reads matrices only from regular files (copy the data into one)");
}

}  // namespace

void require_regular_file(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  if (!S_ISREG(info.st_mode)) refuse(path, info.st_mode);
}

int open_regular_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    const int error = errno;
    ::close(fd);
    throw IoError(path + ": cannot stat: " + std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd);
    refuse(path, info.st_mode);
  }
  // Regular files ignore O_NONBLOCK for reads, but clearing it keeps the descriptor ordinary for any caller.
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return fd;
}

void throw_shrank(const std::string& path, int fd, std::uint64_t size_when_opened, std::uint64_t offset) {
  struct stat now {};
  const std::string size_now =
      ::fstat(fd, &now) == 0 ? std::to_string(now.st_size) + " bytes now" : "at most " + std::to_string(offset);
  throw IoError(path + ": the file shrank while it was being read: it has " + size_now + ", " +
                std::to_string(size_when_opened) + " when opened; a read at byte " + std::to_string(offset) +
                " found its end (truncated during the run?)");
}

}  // namespace dnmf::io::detail
