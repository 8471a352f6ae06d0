// Atomic file replacement: results are written beside the destination and renamed over it, so that a
// reader (or a crashed run) never sees a half-written W.npy.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <streambuf>
#include <string>
#include <vector>

#include "dnmf/error.hpp"
#include "dnmf/index.hpp"
#include "dnmf/io.hpp"

namespace dnmf::io {
namespace {

/// A stream buffer over a POSIX descriptor. std::ofstream hides both the descriptor (needed for fsync)
/// and errno (needed for a useful message), hence this small replacement.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd), buffer_(kBufferSize) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }

  /// errno of the first failed write, 0 if none failed.
  [[nodiscard]] int error() const { return error_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }

  // Large blocks (matrix payloads) bypass the buffer instead of being copied through it.
  std::streamsize xsputn(const char* data, std::streamsize count) override {
    if (count <= epptr() - pptr()) {
      std::memcpy(pptr(), data, to_size(count));
      pbump(static_cast<int>(count));
      return count;
    }
    if (!drain() || !write_all(data, to_size(count))) return 0;
    return count;
  }

  int sync() override { return drain() ? 0 : -1; }

 private:
  static constexpr std::size_t kBufferSize = std::size_t{1} << 20;

  bool drain() {
    const auto pending = to_size(pptr() - pbase());
    if (!write_all(pbase(), pending)) return false;
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return true;
  }

  bool write_all(const char* data, std::size_t count) {
    if (error_ != 0) return false;
    while (count > 0) {
      // Linux transfers at most ~2 GiB per call; stay well below it.
      const std::size_t chunk = count < (std::size_t{1} << 30) ? count : (std::size_t{1} << 30);
      const ssize_t written = ::write(fd_, data, chunk);
      if (written < 0) {
        if (errno == EINTR) continue;
        error_ = errno;
        return false;
      }
      data += written;
      count -= to_size(written);
    }
    return true;
  }

  int fd_;
  int error_ = 0;
  std::vector<char> buffer_;
};

/// Removes the temporary file unless disarmed; closes the descriptor if still open.
class TempFileGuard {
 public:
  explicit TempFileGuard(std::string path) : path_(std::move(path)) {}
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;
  ~TempFileGuard() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  void set_fd(int fd) { fd_ = fd; }
  /// Closes the descriptor and returns close()'s errno (0 on success): NFS reports write errors here.
  int close_fd() {
    const int fd = fd_;
    fd_ = -1;
    return ::close(fd) == 0 ? 0 : errno;
  }
  void disarm() { path_.clear(); }

 private:
  std::string path_;
  int fd_ = -1;
};

/// One temporary being filled, for remove_temporaries_in_flight(): plain characters, claimed and released
/// through a lock-free atomic, which a signal handler may read.
struct InFlightSlot {
  static constexpr int kFree = 0, kFilling = 1, kListed = 2;
  static constexpr std::size_t kPathBytes = 4096;
  std::atomic<int> state{kFree};
  char path[kPathBytes] = {};
};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler reads the slots");
InFlightSlot in_flight_slots[64];

/// Lists a temporary in a free slot for its lifetime (none listed when all 64 are taken, or the path is too long).
class InFlight {
 public:
  explicit InFlight(const std::string& temp) {
    if (temp.size() >= InFlightSlot::kPathBytes) return;
    for (InFlightSlot& s : in_flight_slots) {
      int expected = InFlightSlot::kFree;
      if (s.state.compare_exchange_strong(expected, InFlightSlot::kFilling)) {
        temp.copy(s.path, temp.size());
        s.path[temp.size()] = '\0';
        s.state.store(InFlightSlot::kListed);
        slot_ = &s;
        return;
      }
    }
  }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
  ~InFlight() {
    if (slot_ != nullptr) slot_->state.store(InFlightSlot::kFree);
  }

 private:
  InFlightSlot* slot_ = nullptr;
};

/// The longest file name (one path component) Linux file systems take.
constexpr std::size_t kNameMax = 255;

std::string temporary_name(const std::string& path) {
  // pid + counter keeps concurrent writers (threads, MPI ranks on a shared file system) apart.
  static std::atomic<unsigned long> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

std::string parent_directory(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

/// One-line message: "<path>: cannot write: <strerror> (<hint>)".
[[noreturn]] void fail(const std::string& path, int error) {
  const std::size_t name_bytes = std::filesystem::path(path).filename().string().size();
  const std::size_t suffix_bytes = temporary_name(path).size() - path.size();
  if (error == ENAMETOOLONG && name_bytes <= kNameMax && name_bytes + suffix_bytes > kNameMax)
    // The name is legal: the temporary written beside it is what is too long (it said "File name too long").
    throw UsageError(path + ": the name is " + std::to_string(name_bytes) +
                     " bytes, and the temporary file written beside it (the name plus '.tmp.<pid>.<n>') is longer "
                     "than the " +
                     std::to_string(kNameMax) + " bytes a file name may have: choose a shorter name");
  if (error == ENAMETOOLONG && name_bytes <= kNameMax)
    // Every name fits: the whole path, the temporary's suffix included, is past the kernel's 4095 bytes (it
    // blamed the name, of 5 bytes).
    throw UsageError(path + ": the path is " + std::to_string(path.size()) + " bytes, " +
                     std::to_string(path.size() + suffix_bytes) +
                     " with the temporary's suffix, and a path may have 4095: choose a shorter folder or name");
  std::string message = path + ": cannot write: " + std::strerror(error);
  if (error == ENOENT) {
    message += " (does the directory '" + parent_directory(path) + "' exist?)";
  } else if (error == EACCES || error == EPERM) {
    message += " (is the directory '" + parent_directory(path) + "' writable?)";
  }
  throw IoError(message);
}

// Makes the rename itself durable; best effort, as some file systems refuse fsync on directories.
void sync_directory(const std::string& path) {
  const int fd = ::open(parent_directory(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string temp = temporary_name(path);
  const InFlight listed(temp);  // declared before the guard: released only after its removal (or the rename)
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, errno);
  TempFileGuard guard(temp);
  guard.set_fd(fd);

  FdStreamBuf buffer(fd);
  std::ostream stream(&buffer);
  write(stream);  // an exception propagates unchanged; the guard removes the temporary
  stream.flush();
  if (buffer.error() != 0) fail(path, buffer.error());
  if (!stream) throw IoError(path + ": cannot write: the output stream failed while formatting the data");

  if (::fsync(fd) != 0 && errno != EINVAL) fail(path, errno);  // EINVAL: target does not support fsync
  if (const int error = guard.close_fd(); error != 0) fail(path, error);
  if (::rename(temp.c_str(), path.c_str()) != 0) fail(path, errno);
  guard.disarm();
  sync_directory(path);
}

void remove_temporaries_in_flight() noexcept {
  for (InFlightSlot& s : in_flight_slots)
    if (s.state.load() == InFlightSlot::kListed) ::unlink(s.path);
}

}  // namespace dnmf::io
