// See output_set.hpp.

#include "dnmf/output_set.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>

#include "dnmf/error.hpp"
#include "io/fault_injection.hpp"

namespace dnmf {
namespace fs = std::filesystem;
using io::exchange_disabled_for_test;
using io::fault_point;

namespace {

constexpr const char* kMarker = ".dnmf-output-set";

[[noreturn]] void fail(const std::string& what, int error) { throw IoError(what + ": " + std::strerror(error)); }

/// Hex digits of random_suffix(): pid_in() recognises the names this file makes by them.
constexpr std::size_t kRandomDigits = 16;

std::string random_suffix() {
  std::random_device device;
  char text[kRandomDigits + 1];
  std::snprintf(text, sizeof text, "%08x%08x", device(), device());
  return text;
}

/// A process that no longer exists (EPERM: it exists under another user).
bool is_dead(long pid) { return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH; }

/// The pid in "<base>.<tag>.<pid>.<random>" with <random> the kRandomDigits hex digits random_suffix() makes, or 0 when
/// `entry` is not such a name. The exact shape matters: clean_stale removes or renames what matches, and a user's
/// "out.old.2023.csv" beside -o out must never match.
long pid_in(const std::string& entry, const std::string& prefix) {
  if (!entry.starts_with(prefix)) return 0;
  const std::string rest = entry.substr(prefix.size());
  const std::size_t dot = rest.find('.');
  if (dot == std::string::npos || dot == 0 || rest.size() != dot + 1 + kRandomDigits) return 0;
  if (rest.find_first_not_of("0123456789abcdef", dot + 1) != std::string::npos) return 0;
  char* end = nullptr;
  const long pid = std::strtol(rest.c_str(), &end, 10);
  return end == rest.c_str() + dot ? pid : 0;
}

/// A real folder (not a link to one), with the marker when `marked`: what this file creates under such names.
bool is_set_folder(const fs::path& path, bool marked) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(path, ec))) return false;
  return !marked || fs::is_regular_file(path / kMarker, ec);
}

/// A folder whose only entry is the checkpoints folder a first `dnmf nmfk` leaves when it dies before its commit
/// (with its manifest or lock): dnmf's, though it has no marker.
bool holds_only_nmfk_checkpoints(const fs::path& path) {
  std::error_code ec;
  bool any = false;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().filename() != "checkpoints") return false;
    any = true;
  }
  return any && (fs::is_regular_file(path / "checkpoints" / "manifest.json", ec) ||
                 fs::is_regular_file(path / "checkpoints" / "lock", ec));
}

/// Whether another process holds the flock that dnmf nmfk takes on its checkpoints (nmfk/checkpoint.cpp).
bool checkpoint_lock_held(const fs::path& lock) {
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the lock if this process took it
  return held;
}

/// fsync of a file or directory; best effort where the file system does not support it (EINVAL).
void sync_path(const fs::path& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) fail(path.string() + ": cannot open to sync", errno);
  const int rc = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (rc != 0 && error != EINVAL) fail(path.string() + ": cannot sync", error);
}

/// Every file and folder of the staged set reaches the disk before the rename makes it visible.
void sync_tree(const fs::path& root) {
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.is_symlink()) continue;
    sync_path(entry.path(), entry.is_directory());
  }
  sync_path(root, true);
}

/// `from` (a file or folder tree) into `to`: hard links, so that carrying gigabytes of checkpoints costs
/// nothing; copies where the file system has no hard links.
void link_tree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (fs::is_directory(from, ec)) {
    fs::create_directory(to, ec);
    if (ec) throw IoError(to.string() + ": cannot create: " + ec.message());
    for (const auto& entry : fs::directory_iterator(from)) link_tree(entry.path(), to / entry.path().filename());
    return;
  }
  fs::create_hard_link(from, to, ec);
  if (!ec) return;
  fs::copy_file(from, to, ec);
  if (ec) throw IoError(to.string() + ": cannot carry over " + from.string() + ": " + ec.message());
}

/// Earlier runs in the same parent that died (their pid is gone) left OUT.tmp.* (a staged set: removed) or
/// OUT.old.* (the previous set, moved aside by the fallback commit: restored when OUT is missing).
void clean_stale(const fs::path& target) {
  const fs::path parent = target.parent_path();
  const std::string base = target.filename().string();
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) return;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string name = entry.path().filename().string();
    // A moved-aside set was committed, so it carries the marker; a staging folder gets it only at commit. A
    // first nmfk's checkpoints-only OUT, moved aside by a rerun that died before its rename, is put back too (it
    // was left there for good, and its checkpoints lost to the next run).
    const bool aside = is_dead(pid_in(name, base + ".old.")) &&
                       (is_set_folder(entry.path(), true) ||
                        (is_set_folder(entry.path(), false) && holds_only_nmfk_checkpoints(entry.path())));
    if (aside) {
      if (!fs::exists(target, ec)) {
        fs::rename(entry.path(), target, ec);
        if (!ec) continue;
      }
      fs::remove_all(entry.path(), ec);
    } else if (is_dead(pid_in(name, base + ".tmp.")) && is_set_folder(entry.path(), false)) {
      fs::remove_all(entry.path(), ec);
    }
  }
}

/// The directories on the way to `dir` that do not exist yet, outermost first.
std::vector<std::string> missing_directories(const fs::path& dir) {
  std::vector<std::string> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.insert(missing.begin(), p.string());
    if (p == p.parent_path()) break;
  }
  return missing;
}

/// Swaps two directories atomically; false where the kernel or file system cannot (then nothing happened).
bool exchange(const fs::path& a, const fs::path& b) {
#ifdef RENAME_EXCHANGE
  if (exchange_disabled_for_test()) return false;
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
    fail(b.string() + ": cannot swap in the new output", errno);
#endif
  return false;
}

}  // namespace

bool is_output_set_entry(const std::string& name) {
  static const char* const known[] = {kMarker,       "W.npy",       "H.npy",    "report.json", "factors.h5",
                                      "nmfk.json",   "nmfk.csv",    "nmfk.svg", "nmfk.png",    "nmfk.gp",
                                      "nmfk.gp.log", "checkpoints", "cv.json",  "cv.csv"};
  for (const char* k : known)
    if (name == k) return true;
  return name.starts_with("k_") && name.size() > 2 && name.find_first_not_of("0123456789", 2) == std::string::npos;
}

OutputSet::OutputSet(std::string path, const std::vector<std::string>& protect) : path_(std::move(path)) {
  if (path_.empty()) throw UsageError("-o/--output: the output directory name is empty");
  std::error_code ec;
  // Symbolic links resolved: the swap replaces the directory they point to, never the link.
  // A relative name whose working directory was deleted: std::filesystem's own exception said "cannot make
  // absolute path" (exit 1).
  const fs::path absolute = fs::absolute(fs::path(path_), ec);
  if (ec)
    throw IoError(path_ + ": cannot resolve the output directory: the working directory no longer exists? (" +
                  ec.message() + ")");
  fs::path target = fs::weakly_canonical(absolute, ec);
  if (ec) target = absolute;
  target = target.lexically_normal();
  // A dangling link is left as it is by weakly_canonical (it resolves what exists), and the commit's rename would
  // then meet the link after all the work: followed here to the folder it names, which the run creates.
  for (int hops = 0; fs::is_symlink(fs::symlink_status(target, ec)) && !fs::exists(target, ec); ++hops) {
    const fs::path to = fs::read_symlink(target, ec);
    if (ec || hops == 40)
      throw IoError(path_ + ": cannot use as output directory: it is a symbolic link that leads nowhere" +
                    (ec ? " (" + ec.message() + ")" : std::string(" (a loop of links)")));
    const fs::path next = to.is_absolute() ? to : target.parent_path() / to;
    target = fs::weakly_canonical(next, ec);
    if (ec) target = next;
    target = target.lexically_normal();
  }
  fs::path clean = target;
  if (!clean.has_filename() && clean.has_parent_path() && clean != clean.root_path()) clean = clean.parent_path();
  target_ = clean.string();
  const fs::path cwd = fs::current_path(ec);
  const auto [end, unused] = std::mismatch(clean.begin(), clean.end(), cwd.begin(), cwd.end());
  if (clean == clean.root_path() || end == clean.end())
    throw UsageError(path_ +
                     ": is the working directory or above it; dnmf replaces the whole output directory with "
                     "each run, so name a directory of its own (e.g. -o out)");

  clean_stale(clean);
  if (fs::exists(clean, ec)) {
    if (!fs::is_directory(clean, ec))
      throw IoError(path_ + ": cannot use as output directory: it exists and is not a directory");
    // Known names alone do not make a folder dnmf's (a project folder may hold k_3/ and checkpoints/ of the
    // user's): a non-empty one must carry the marker of a committed set, or hold only the checkpoints folder that
    // a first `dnmf nmfk` leaves when it dies before its commit.
    bool empty = true, marked = false, other = false;
    for (const auto& entry : fs::directory_iterator(clean, ec)) {
      const std::string name = entry.path().filename().string();
      if (!is_output_set_entry(name))
        throw UsageError(path_ + ": holds '" + name +
                         "', which dnmf did not write; each run replaces the whole output directory, so choose a new "
                         "or empty one");
      empty = false;
      marked = marked || name == kMarker;
      other = other || name != "checkpoints";
    }
    const bool checkpoints_only = !other && holds_only_nmfk_checkpoints(clean);
    if (!marked && other)
      throw UsageError(path_ + ": was not written by dnmf (it lacks the " + kMarker +
                       " marker of a complete output set); each run replaces the whole output directory, so choose "
                       "a new or empty one");
    if (!empty && !marked && !other && !checkpoints_only)
      throw UsageError(path_ +
                       ": holds a 'checkpoints' folder that dnmf nmfk did not write (no manifest.json); "
                       "each run replaces the whole output directory, so choose a new or empty one");
    // A running NMFk holds checkpoints/lock: committing a new set here deleted its checkpoints under it (dnmf
    // factor or cv into the folder of a running nmfk; the nmfk then failed writing its next job).
    if (checkpoint_lock_held(clean / "checkpoints" / "lock"))
      throw UsageError(path_ +
                       ": holds the checkpoints of an NMFk run in progress (their lock is held); a new output set "
                       "would delete them under it: wait for that run to finish, or choose another output directory");
    for (const std::string& input : protect) {
      if (input.empty()) continue;
      const fs::path input_absolute = fs::absolute(fs::path(input), ec);
      if (ec) continue;
      const fs::path inside = fs::weakly_canonical(input_absolute, ec).lexically_normal();
      if (ec) continue;
      if (std::mismatch(clean.begin(), clean.end(), inside.begin(), inside.end()).first == clean.end())
        throw UsageError(path_ + ": holds the input " + input +
                         "; each run replaces the whole output directory, so write the results elsewhere");
    }
  }

  const fs::path parent = clean.parent_path();
  const std::string staging_name =
      clean.filename().string() + ".tmp." + std::to_string(::getpid()) + "." + random_suffix();
  // A legal name whose staging folder's is not (255 bytes at most) was refused as "not writable".
  if (staging_name.size() > 255) {
    const std::size_t extra = staging_name.size() - clean.filename().string().size();
    throw UsageError(path_ + ": the name is " + std::to_string(clean.filename().string().size()) +
                     " bytes; dnmf stages the results beside it under the name plus " + std::to_string(extra) +
                     " bytes, past the 255 a name may have: choose a name of at most " +
                     std::to_string(extra < 255 ? 255 - extra : 0) + " bytes");
  }
  // The files written in the staging folder and in OUT: the longest, a checkpoint's temporary
  // (checkpoints/k<K>_p<P>.job.tmp.<pid>.<n>), is well under kInsideBytes. A path past the 4095 bytes the kernel
  // takes failed when the first result was written, after the whole run, naming the staging folder.
  constexpr std::size_t kPathMax = 4095, kInsideBytes = 96;
  const std::size_t staged_bytes = (parent / staging_name).string().size();
  if (staged_bytes + kInsideBytes > kPathMax)
    throw UsageError(path_ + ": the output folder's path is " + std::to_string(target_.size()) +
                     " bytes; with the folder dnmf stages beside it and the files written inside, it needs about " +
                     std::to_string(staged_bytes + kInsideBytes) + ", past the " + std::to_string(kPathMax) +
                     " bytes a path may have: choose a shorter path");
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec))
    throw IoError(path_ + ": cannot create output directory: " + parent.string() + " is not a directory");
  const std::vector<std::string> missing = missing_directories(parent);
  fs::create_directories(parent, ec);
  if (ec) {
    // A folder on the way that is a link to nothing: "File exists" named neither the link nor what it lacks.
    for (fs::path up = parent; !up.empty() && up != up.root_path(); up = up.parent_path()) {
      std::error_code link_ec;
      if (fs::is_symlink(fs::symlink_status(up, link_ec)) && !fs::exists(up, link_ec))
        throw IoError(path_ + ": cannot create output directory: " + up.string() + " is a symbolic link to " +
                      fs::read_symlink(up, link_ec).string() + ", which does not exist");
    }
    throw IoError(path_ + ": cannot create output directory: " + ec.message());
  }
  created_directories_ = missing;

  // Creating the staging folder is also the probe: permissions, read-only mounts and quotas are only known by
  // trying, and it fails now rather than after an hour of factorisation.
  const fs::path staging = parent / staging_name;
  if (::mkdir(staging.c_str(), 0777) != 0) {
    const int error = errno;
    for (auto it = created_directories_.rbegin(); it != created_directories_.rend(); ++it) fs::remove(*it, ec);
    created_directories_.clear();
    // The staging folder goes beside OUT: where OUT itself is writable but its parent is not, saying that OUT
    // is not writable sent users to the wrong folder.
    throw IoError(path_ + ": output directory is not writable: cannot create the staging folder in " + parent.string() +
                  " (dnmf writes the new results beside the output directory and then moves them " +
                  "into place, so it needs write permission there): " + std::strerror(error));
  }
  staging_ = staging.string();
  fault_point("staging");  // a signal just after the folder exists must still end in its removal
}

OutputSet::~OutputSet() {
  if (committed_) return;
  std::error_code ec;  // best effort: a destructor must not throw, and the original error matters more
  fs::remove_all(staging_, ec);
  for (auto it = created_directories_.rbegin(); it != created_directories_.rend(); ++it) fs::remove(*it, ec);
}

std::string OutputSet::file(const std::string& name) const { return (fs::path(staging_) / name).string(); }

void OutputSet::commit(const std::vector<std::string>& carry, const std::function<bool()>& abandon) {
  const fs::path target(target_);
  const fs::path staging(staging_);
  const fs::path parent = target.parent_path();
  std::error_code ec;
  fault_point("staged");
  {
    // The marker says "a complete set dnmf wrote": the next run may replace this directory.
    std::FILE* marker = std::fopen((staging / kMarker).c_str(), "w");
    if (marker == nullptr) fail(path_ + ": cannot write " + kMarker, errno);
    std::fputs("dnmf output set\n", marker);
    if (std::fclose(marker) != 0) fail(path_ + ": cannot write " + kMarker, errno);
  }
  for (const std::string& name : carry) {
    if (fs::exists(target / name, ec)) link_tree(target / name, staging / name);
  }
  fault_point("carried");
  sync_tree(staging);
  fault_point("synced");
  if (abandon && abandon()) throw Cancelled("interrupted before the output was committed");

  // Into an absent OUT by one rename. Where another run committed OUT since this one found it absent, it is
  // replaced as a set found there at the start would be (the last run wins): this run failed after all its work
  // ("Directory not empty").
  const auto renamed_into_absent = [&] {
    if (fs::exists(target, ec)) return false;
    if (::rename(staging.c_str(), target.c_str()) == 0) return true;
    const int error = errno;
    if ((error != ENOTEMPTY && error != EEXIST) || !is_set_folder(target, true))
      fail(path_ + ": cannot move the new output into place", error);
    return false;
  };
  if (renamed_into_absent()) {
    committed_ = true;
    sync_path(parent, true);
    return;
  }
  if (exchange(staging, target)) {
    try {
      fault_point("exchanged");
      sync_path(parent, true);
    } catch (...) {
      // Swapped back, so that this failure too leaves the previous set in place: it exited 4 with the new set
      // in OUT and the previous one, under the staging name, removed by the destructor. Where the swap back
      // fails the new set stands, and the previous one is left to the next run's cleanup.
      if (!exchange(staging, target)) committed_ = true;
      throw;
    }
    fs::remove_all(staging, ec);  // the previous set, now under the staging name
  } else {
    // No atomic exchange: move the old set aside under a name the next run restores if this one dies here.
    const fs::path aside =
        parent / (target.filename().string() + ".old." + std::to_string(::getpid()) + "." + random_suffix());
    if (::rename(target.c_str(), aside.c_str()) != 0) fail(path_ + ": cannot move the previous output aside", errno);
    fault_point("aside");
    if (::rename(staging.c_str(), target.c_str()) != 0) {
      const int error = errno;
      (void)::rename(aside.c_str(), target.c_str());
      fail(path_ + ": cannot move the new output into place", error);
    }
    try {
      fault_point("renamed");
      sync_path(parent, true);
    } catch (...) {
      // The previous set put back, as after a failure before the renames (see the exchange's case above).
      if (::rename(target.c_str(), staging.c_str()) != 0 || ::rename(aside.c_str(), target.c_str()) != 0)
        committed_ = true;
      throw;
    }
    fs::remove_all(aside, ec);
  }
  committed_ = true;
  sync_path(parent, true);
}

}  // namespace dnmf
