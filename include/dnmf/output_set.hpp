// dnmf: a folder of results as one output set that is replaced atomically (the -o directory of `dnmf factor`,
// `dnmf nmfk` and `dnmf cv`, and the Python package's output_dir).
// Everything a run writes goes into a fresh sibling folder, OUT.tmp.<pid>.<random>; commit() swaps it with OUT
// in one rename, so a reader (or the next run after a kill, a full disk or a read-only target) sees either the
// previous complete set or the new complete set, never a mixture (docs/reliability.md).
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace dnmf {

class OutputSet {
 public:
  /// Checks `path` (not empty, not the working directory or above it; when it exists, a set dnmf committed, with
  /// no files dnmf did not write and none of the `protect` files, e.g. the run's inputs, inside it), removes the
  /// staging folders of earlier runs that died, creates missing parents and the staging folder. Throws
  /// UsageError or IoError naming `path`.
  explicit OutputSet(std::string path, const std::vector<std::string>& protect = {});
  /// Without commit(): removes the staging folder and the parents this object created (when empty).
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  /// Where this run writes its files.
  [[nodiscard]] const std::string& staging() const { return staging_; }
  /// The output directory as resolved: absolute, normalised, symbolic links followed (a dangling one too).
  [[nodiscard]] const std::string& target() const { return target_; }
  /// The path of `name` inside the staging folder.
  [[nodiscard]] std::string file(const std::string& name) const;

  /// Makes the staged set durable and swaps it in as `path`. `carry` names entries of the current `path` that
  /// outlive output sets (NMFk's checkpoints): they are hard-linked (copied where links fail) into the new set
  /// first, so the swap loses nothing. Throws IoError, leaving the previous set in place. `abandon`, when given,
  /// is asked once the staged set is durable, just before the swap: true throws Cancelled, the previous set in
  /// place (a signal during the seconds of fsync had been swallowed: exit 0, the new set committed).
  void commit(const std::vector<std::string>& carry = {}, const std::function<bool()>& abandon = {});

 private:
  std::string path_;    ///< as the user wrote it, for messages
  std::string target_;  ///< absolute, normalised
  std::string staging_;
  std::vector<std::string> created_directories_;  ///< outermost first
  bool committed_ = false;
};

/// The file names an output set may hold; an existing -o directory with anything else is refused (dnmf replaces
/// the whole folder, so it must never be one where a user keeps other files).
[[nodiscard]] bool is_output_set_entry(const std::string& name);

}  // namespace dnmf
