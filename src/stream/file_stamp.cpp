// See file_stamp.hpp.

#include "stream/file_stamp.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "dnmf/error.hpp"

namespace dnmf::stream {
namespace {

struct stat stat_of(const std::string& path, int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw IoError(path + ": cannot stat: " + std::strerror(errno));
  return info;
}

}  // namespace

FileStamp::FileStamp(const std::string& path, int fd) {
  const struct stat info = stat_of(path, fd);
  size_ = info.st_size;
  seconds_ = info.st_mtim.tv_sec;
  nanoseconds_ = info.st_mtim.tv_nsec;
}

void FileStamp::check_unchanged(const std::string& path, int fd) const {
  const struct stat now = stat_of(path, fd);
  if (now.st_size == size_ && now.st_mtim.tv_sec == seconds_ && now.st_mtim.tv_nsec == nanoseconds_) return;
  if (now.st_size < size_)  // a truncation, said as the reads that meet the new end say it
    throw IoError(path + ": the file shrank while it was being read: it has " + std::to_string(now.st_size) +
                  " bytes now, " + std::to_string(size_) + " when opened (truncated during the run?)");
  throw IoError(path +
                ": the file was written while it was being read (its size or modification time changed during the "
                "run): the entries of the last pass were not those checked on the first; run again on a file "
                "nothing writes to");
}

}  // namespace dnmf::stream
