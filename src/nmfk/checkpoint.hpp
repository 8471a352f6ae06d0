// The checkpoint store of an NMFk sweep (DESIGN §6): one file per finished (k, p) job, written atomically,
// and a manifest recording what the jobs were computed from (the data's fingerprint and every option that
// changes a job's result). A rerun with the same data and options reuses the files; anything else is refused
// with a message naming what differs, unless the caller asks for a restart (which clears the old files).
// Options that do not change a job (the k range, P, thresholds, groups, threads) may change between runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dnmf/matrix.hpp"

namespace dnmf::rank_search {

/// Named facts, compared as text; the numeric ones (sums of the data) are compared with a relative
/// tolerance, since a different process count sums in a different order. `content_hash` identifies the
/// data itself (content_hash_add), so that a permuted or edited matrix with the same sums is not taken for it.
struct Fingerprint {
  std::vector<std::pair<std::string, std::string>> data;
  std::string content_hash;
  std::vector<std::pair<std::string, std::string>> options;
  double sum = 0;
  double sum_squares = 0;
};

/// One finished job: what the clustering and the outputs need from it.
struct JobRecord {
  index_t k = 0;
  int p = 0;
  double rel_error = 0;
  double seconds = 0;
  int iterations = 0;
  DenseMatrix<double> W;  ///< m x k (columns summing to 1, as the solver normalises)
  DenseMatrix<double> H;  ///< k x n
};

/// A folder of job files plus manifest.json.
class CheckpointStore {
 public:
  /// `directory` empty: a store that keeps nothing.
  explicit CheckpointStore(std::string directory);
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;
  [[nodiscard]] bool enabled() const { return !directory_.empty(); }
  [[nodiscard]] const std::string& directory() const { return directory_; }

  /// Creates the folder and manifest, or checks an existing manifest against `fingerprint`. A mismatch
  /// throws dnmf::Error naming each difference, unless `restart`, which removes the old manifest and job
  /// files first. Returns a line for the user when something was cleared, else "". Holds the folder's lock
  /// (an flock on its file `lock`) until the store is destroyed: a second sweep into the same folder is refused
  /// with a UsageError while this one runs (two at once mixed their job files under one manifest).
  std::string open(const Fingerprint& fingerprint, bool restart);
  /// The run's identity, from the fingerprint open() was given: each job file carries it, and load() refuses a
  /// file that names another (one copied from another run's folder).
  [[nodiscard]] std::uint64_t identity() const { return identity_; }
  /// The identity for save() on processes that do not open() the store (the groups' roots): the opener's.
  void adopt_identity(std::uint64_t identity) { identity_ = identity; }

  /// The job's record when its file exists, is complete, its checksum matches, it is consistent with
  /// (k, p, m, n) and every value is finite and >= 0; otherwise the file is removed and the reason reported
  /// through `problem` (the job is then run again).
  std::optional<JobRecord> load(index_t k, int p, index_t m, index_t n, std::string* problem) const;
  /// Writes the job's file atomically (temporary file + rename).
  void save(const JobRecord& record) const;
  /// The file name of job (k, p) inside the folder.
  [[nodiscard]] std::string job_path(index_t k, int p) const;

 private:
  std::string directory_;
  int lock_fd_ = -1;
  std::uint64_t identity_ = 0;
};

}  // namespace dnmf::rank_search
