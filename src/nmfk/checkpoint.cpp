#include "nmfk/checkpoint.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "dnmf/error.hpp"
#include "dnmf/io.hpp"

namespace dnmf::rank_search {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'D', 'N', 'M', 'F', 'K', 'J', 'O', 'B'};
constexpr std::uint32_t kVersion = 1;
constexpr const char* kManifestFormat = "dnmf-nmfk-checkpoints";

// The fixed-size header of a job file; the arrays W (m·k) and H (k·n) of doubles follow.
struct JobHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t reserved;
  std::int64_t k, p, m, n, iterations;
  double rel_error, seconds;
};

bool numbers_match(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b)); }

nlohmann::json manifest_json(const Fingerprint& f) {
  nlohmann::json j;
  j["format"] = kManifestFormat;
  j["version"] = kVersion;
  for (const auto& [key, value] : f.data) j["data"][key] = value;
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
      if (!known) out.push_back(item.key() + " " + item.value().dump() + " -> (none)");
    }
  };
  compare("data", now.data);
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

std::string CheckpointStore::job_path(index_t k, int p) const {
  // Built by appending: GCC 12 warns (-Wrestrict, a false positive) about "k" + std::to_string(k).
  std::string name(1, 'k');
  name.append(std::to_string(k)).append("_p").append(std::to_string(p)).append(".job");
  return (fs::path(directory_) / name).string();
}

std::string CheckpointStore::open(const Fingerprint& fingerprint, bool restart) {
  if (!enabled()) return "";
  const fs::path dir(directory_);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError(directory_ + ": cannot create the checkpoint folder: " + ec.message());
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
    nlohmann::json stored;
    std::ifstream in(manifest);
    try {
      in >> stored;
    } catch (const nlohmann::json::exception&) {
      stored = nlohmann::json::object();
    }
    std::vector<std::string> diff;
    if (!stored.is_object() || stored.value("format", "") != kManifestFormat)
      diff.push_back("the manifest is not an NMFk checkpoint manifest");
    else
      diff = differences(stored, fingerprint);
    if (!diff.empty()) {
      if (!restart) {
        std::string list;
        for (const auto& d : diff) list += (list.empty() ? "" : "; ") + d;
        throw UsageError(manifest.string() + ": the checkpoints were made with different data or options (" + list +
                         "): use another output folder, or --restart to discard them");
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
    const std::string text = manifest_json(fingerprint).dump(2) + "\n";
    io::write_file_atomically(manifest.string(), [&text](std::ostream& out) { out << text; });
  }
  return notice;
}

std::optional<JobRecord> CheckpointStore::load(index_t k, int p, index_t m, index_t n, std::string* problem) const {
  if (!enabled()) return std::nullopt;
  const std::string path = job_path(k, p);
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
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion) return fail("not a job file");
  if (h.k != k || h.p != p || h.m != m || h.n != n) return fail("its shape or job does not match");
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
  return r;
}

void CheckpointStore::save(const JobRecord& r) const {
  if (!enabled()) return;
  JobHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.k = r.k;
  h.p = r.p;
  h.m = r.W.rows();
  h.n = r.H.cols();
  h.iterations = r.iterations;
  h.rel_error = r.rel_error;
  h.seconds = r.seconds;
  io::write_file_atomically(job_path(r.k, r.p), [&](std::ostream& out) {
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(r.W.data()),
              static_cast<std::streamsize>(sizeof(double) * r.W.storage().size()));
    out.write(reinterpret_cast<const char*>(r.H.data()),
              static_cast<std::streamsize>(sizeof(double) * r.H.storage().size()));
  });
}

}  // namespace dnmf::rank_search
