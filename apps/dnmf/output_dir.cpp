// See output_dir.hpp.

#include "output_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "dnmf/error.hpp"

namespace dnmf::cli {
namespace fs = std::filesystem;

namespace {

/// The directories on the way to `dir` that do not exist yet, outermost first.
std::vector<std::string> missing_directories(const fs::path& dir) {
  std::vector<std::string> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.insert(missing.begin(), p.string());
    if (p == p.parent_path()) break;  // a root that does not exist: nothing above to try
  }
  return missing;
}

}  // namespace

OutputDirectory::OutputDirectory(std::string path) : path_(std::move(path)) {
  // "out/" names the same directory as "out"; the trailing slash would only confuse parent_path().
  fs::path dir = fs::path(path_).lexically_normal();
  if (dir.has_filename() == false && dir.has_parent_path()) dir = dir.parent_path();
  if (dir.empty()) dir = ".";

  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw Error(path_ + ": cannot use as output directory: it exists and is not a directory");
  }
  const std::vector<std::string> missing = missing_directories(dir);
  fs::create_directories(dir, ec);
  if (ec) throw Error(path_ + ": cannot create output directory: " + ec.message());
  created_directories_ = missing;

  // Permissions, read-only mounts and quotas are only known by trying; a probe file asks the file system.
  const fs::path probe = dir / (".dnmf-write-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int error = errno;
    for (auto it = created_directories_.rbegin(); it != created_directories_.rend(); ++it) fs::remove(*it, ec);
    created_directories_.clear();
    throw Error(path_ + ": output directory is not writable: " + std::strerror(error));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

OutputDirectory::~OutputDirectory() {
  if (committed_) return;
  std::error_code ec;  // best effort: a destructor must not throw, and the original error matters more
  for (const std::string& file : written_files_) fs::remove(file, ec);
  // Innermost first; remove() leaves a directory alone unless it is empty.
  for (auto it = created_directories_.rbegin(); it != created_directories_.rend(); ++it) fs::remove(*it, ec);
}

std::string OutputDirectory::file(const std::string& name) const { return (fs::path(path_) / name).string(); }

void OutputDirectory::wrote(const std::string& file) { written_files_.push_back(file); }

}  // namespace dnmf::cli
