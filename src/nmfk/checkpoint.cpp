#include "nmfk/checkpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"
#include "util/crc32c.hpp"

namespace dnmf::rank_search {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'D', 'N', 'M', 'F', 'K', 'J', 'O', 'B'};
// Job files: 2 carries a CRC-32C; 1 (none) is not trusted, its job runs again. The manifest: 2 adds the
// content hash of the data.
// 3: the header names the manifest it was written under (JobHeader::identity).
constexpr std::uint32_t kVersion = 3;
constexpr const char* kManifestFormat = "dnmf-nmfk-checkpoints";

// The fixed-size header of a job file; the arrays W (m·k) and H (k·n) of doubles follow. `checksum` is the
// CRC-32C of the header (with checksum 0) followed by W and H.
struct JobHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t checksum;
  std::uint64_t identity;  // of the manifest's data and options (run_identity): a job file copied from another
                           // folder (other data) had passed every check but this one
  std::int64_t k, p, m, n, iterations;
  double rel_error, seconds;
};

bool numbers_match(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

nlohmann::json manifest_json(const Fingerprint& f) {
  nlohmann::json j;
  j["format"] = kManifestFormat;
  j["version"] = kVersion;
  for (const auto& [key, value] : f.data) j["data"][key] = value;
  j["data"]["content_hash"] = f.content_hash;
  j["data_sum"] = f.sum;
  j["data_sum_squares"] = f.sum_squares;
  for (const auto& [key, value] : f.options) j["options"][key] = value;
  return j;
}

// Every difference between the stored manifest and the current fingerprint, as "what: old -> new".
std::vector<std::string> differences(const nlohmann::json& stored, const Fingerprint& now) {
  std::vector<std::string> out;
  auto compare = [&](const char* section, const std::vector<std::pair<std::string, std::string>>& fields) {
    const nlohmann::json& old = stored.contains(section) ? stored[section] : nlohmann::json::object();
    for (const auto& [key, value] : fields) {
      const std::string before = old.contains(key) && old[key].is_string() ? old[key].get<std::string>() : "(none)";
      if (before != value) out.push_back(std::string(key).append(" ").append(before).append(" -> ").append(value));
    }
    for (const auto& item : old.items()) {
      bool known = false;
      for (const auto& field : fields) known = known || field.first == item.key();
      if (!known)
        out.push_back(item.key() + " " + item.value().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                      " -> (none)");
    }
  };
  std::vector<std::pair<std::string, std::string>> data = now.data;
  data.emplace_back("content_hash", now.content_hash);
  compare("data", data);
  auto number = [&](const char* key, double value) {
    const double before = stored.contains(key) && stored[key].is_number() ? stored[key].get<double>() : NAN;
    if (!numbers_match(before, value)) {
      std::ostringstream text;
      text.precision(17);
      text << key << " " << before << " -> " << value;
      out.push_back(text.str());
    }
  };
  number("data_sum", now.sum);
  number("data_sum_squares", now.sum_squares);
  compare("options", now.options);
  return out;
}

// The manifest's data and options as one number: every field the manifest compares exactly (the sums, compared
// with a tolerance, vary with the process count and are left out).
std::uint64_t run_identity(const Fingerprint& f) {
  nlohmann::json j = manifest_json(f);
  j.erase("data_sum");
  j.erase("data_sum_squares");
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  const std::uint64_t low = util::crc32c(text.data(), text.size());
  const std::uint64_t high = util::crc32c(text.data(), text.size(), 0x9e3779b9U);
  return (high << 32) | low;
}

std::uint32_t job_checksum(JobHeader h, const JobRecord& r) {
  h.checksum = 0;
  std::uint32_t crc = util::crc32c(&h, sizeof h);
  crc = util::crc32c(r.W.data(), sizeof(double) * r.W.storage().size(), crc);
  return util::crc32c(r.H.data(), sizeof(double) * r.H.storage().size(), crc);
}

// Why a loaded record cannot be the solver's output ("" when it can): a checksum only proves the bytes are
// the ones written, so values outside their domain (from a bug or a file forged with a valid checksum) are
// refused too.
std::string out_of_domain(const JobRecord& r) {
  if (!std::isfinite(r.rel_error) || r.rel_error < 0)
    return "its relative error " + std::to_string(r.rel_error) + " is not a finite number >= 0";
  if (!std::isfinite(r.seconds) || r.seconds < 0) return "its time is not a finite number >= 0";
  if (r.iterations < 0) return "its iteration count is negative";
  auto check = [](const DenseMatrix<double>& a, const char* name) -> std::string {
    for (index_t j = 0; j < a.cols(); ++j)
      for (index_t i = 0; i < a.rows(); ++i)
        if (const double v = a(i, j); !std::isfinite(v) || v < 0)
          return std::string(name) + "(" + std::to_string(i) + ", " + std::to_string(j) + ") = " + std::to_string(v) +
                 " is not a finite number >= 0";
    return "";
  };
  if (std::string bad = check(r.W, "W"); !bad.empty()) return bad;
  return check(r.H, "H");
}

bool is_job_file(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > 4 && name.rfind(".job") == name.size() - 4 && name[0] == 'k';
}

// The temporary file of a write that a killed run never renamed.
bool is_stale_temporary(const fs::path& p) { return p.filename().string().find(".job.tmp.") != std::string::npos; }

void clear(const fs::path& dir) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (is_job_file(entry.path())) fs::remove(entry.path(), ec);
  fs::remove(dir / "manifest.json", ec);
}

}  // namespace

CheckpointStore::CheckpointStore(std::string directory) : directory_(std::move(directory)) {}

CheckpointStore::~CheckpointStore() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::string CheckpointStore::job_path(index_t k, int p) const {
  // Built by appending: GCC 12 warns (-Wrestrict, a false positive) about "k" + std::to_string(k).
  std::string name(1, 'k');
  name.append(std::to_string(k)).append("_p").append(std::to_string(p)).append(".job");
  return (fs::path(directory_) / name).string();
}

std::string CheckpointStore::open(const Fingerprint& fingerprint, bool restart) {
  if (!enabled()) return "";
  identity_ = run_identity(fingerprint);
  const fs::path dir(directory_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError(directory_ + ": cannot create the checkpoint folder: " + ec.message());
  if (lock_fd_ < 0) {
    const std::string lock = (dir / "lock").string();
    lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock_fd_ < 0) throw IoError(lock + ": cannot open the checkpoint lock: " + std::strerror(errno));
    if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(lock_fd_);
      lock_fd_ = -1;
      if (error == EWOULDBLOCK)
        throw UsageError(directory_ +
                         ": another NMFk run is using these checkpoints now (the same output folder): wait for it to "
                         "finish, or use another output folder");
      throw IoError(lock + ": cannot lock: " + std::strerror(error));
    }
  }
  const fs::path manifest = dir / "manifest.json";
  std::string notice;
  bool has_jobs = false;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    has_jobs = has_jobs || is_job_file(entry.path());
    if (is_stale_temporary(entry.path())) stale.push_back(entry.path());
  }
  for (const auto& p : stale) fs::remove(p, ec);
  if (fs::exists(manifest)) {
    if (!fs::is_regular_file(manifest)) throw IoError(manifest.string() + ": not a regular file (remove it)");
    nlohmann::json stored;
    std::ifstream in(manifest);
    if (!in) throw IoError(manifest.string() + ": cannot open: " + std::strerror(errno));
    bool damaged = false;
    try {
      in >> stored;
    } catch (const nlohmann::json::exception&) {
      damaged = true;  // empty, truncated or not JSON: said as such, not as "different data"
    }
    std::vector<std::string> diff;
    if (damaged)
      diff.push_back("the manifest is damaged (empty, truncated or not JSON)");
    else if (!stored.is_object() || stored.value("format", "") != kManifestFormat)
      diff.push_back("the manifest is not an NMFk checkpoint manifest");
    else
      diff = differences(stored, fingerprint);
    if (!diff.empty()) {
      if (!restart) {
        std::string list;
        for (const auto& d : diff) list += (list.empty() ? "" : "; ") + d;
        throw UsageError(manifest.string() +
                         (damaged ? ": cannot tell what the checkpoints were made with (" + list +
                                        "): use another output folder, or --restart to discard them"
                                  : ": the checkpoints were made with different data or options (" + list +
                                        "): use another output folder, or --restart to discard them"));
      }
      clear(dir);
      notice = "discarded the checkpoints in " + directory_ + " (--restart; they were made with other data or options)";
    } else if (restart) {
      clear(dir);
      notice = "discarded the checkpoints in " + directory_ + " (--restart)";
    }
  } else if (has_jobs) {
    // Job files without a manifest cannot be checked against anything: they are not reused.
    clear(dir);
    notice = "removed job files without a manifest from " + directory_;
  }
  if (!fs::exists(manifest)) {
    const std::string text =
        manifest_json(fingerprint).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    io::write_file_atomically(manifest.string(), [&text](std::ostream& out) { out << text; });
  }
  return notice;
}

std::optional<JobRecord> CheckpointStore::load(index_t k, int p, index_t m, index_t n, std::string* problem) const {
  if (!enabled()) return std::nullopt;
  const std::string path = job_path(k, p);
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    // A FIFO there blocked the open below for good (and a first SIGTERM only restarted it); a device or a folder
    // is no job file either.
    if (problem) *problem = path + ": not a regular file; the job runs again";
    fs::remove(path, ec);
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  auto fail = [&](const std::string& why) -> std::optional<JobRecord> {
    if (problem) *problem = path + ": " + why + "; the job runs again";
    in.close();
    std::error_code ec;
    fs::remove(path, ec);
    return std::nullopt;
  };
  JobHeader h{};
  if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return fail("truncated header");
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) return fail("not a job file");
  if (h.version == 1) return fail("job file version 1 has no checksum (expected " + std::to_string(kVersion) + ")");
  if (h.version != kVersion)
    return fail("job file version " + std::to_string(h.version) + " is not supported (expected " +
                std::to_string(kVersion) + ")");
  if (h.k != k || h.p != p || h.m != m || h.n != n) return fail("its shape or job does not match");
  if (h.identity != identity_)
    return fail("it was computed from other data or options than this folder's manifest (copied from another run?)");
  JobRecord r;
  r.k = k;
  r.p = p;
  r.rel_error = h.rel_error;
  r.seconds = h.seconds;
  r.iterations = static_cast<int>(h.iterations);
  r.W = DenseMatrix<double>(m, k);
  r.H = DenseMatrix<double>(k, n);
  if (!in.read(reinterpret_cast<char*>(r.W.data()),
               static_cast<std::streamsize>(sizeof(double) * r.W.storage().size())) ||
      !in.read(reinterpret_cast<char*>(r.H.data()),
               static_cast<std::streamsize>(sizeof(double) * r.H.storage().size())))
    return fail("truncated data");
  if (in.peek() != std::char_traits<char>::eof()) return fail("trailing bytes");
  const std::uint32_t stored = h.checksum;
  if (stored != job_checksum(h, r)) return fail("checksum mismatch (the file is damaged)");
  if (const std::string bad = out_of_domain(r); !bad.empty()) return fail(bad);
  return r;
}

void CheckpointStore::save(const JobRecord& r) const {
  if (!enabled()) return;
  JobHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.identity = identity_;
  h.k = r.k;
  h.p = r.p;
  h.m = r.W.rows();
  h.n = r.H.cols();
  h.iterations = r.iterations;
  h.rel_error = r.rel_error;
  h.seconds = r.seconds;
  h.checksum = job_checksum(h, r);
  io::write_file_atomically(job_path(r.k, r.p), [&](std::ostream& out) {
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(r.W.data()),
              static_cast<std::streamsize>(sizeof(double) * r.W.storage().size()));
    out.write(reinterpret_cast<const char*>(r.H.data()),
              static_cast<std::streamsize>(sizeof(double) * r.H.storage().size()));
  });
}

}  // namespace dnmf::rank_search
