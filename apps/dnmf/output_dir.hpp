// dnmf CLI: an output directory that is proven writable before a long run and left clean by a failed one.
#pragma once

#include <string>
#include <vector>

namespace dnmf::cli {

/// The -o directory of `dnmf factor`. Construction creates it (and missing parents) and writes and removes a
/// probe file, so that an unwritable destination fails in the first second rather than after the
/// factorisation. Until commit(), the destructor removes the files recorded with wrote() and the directories
/// this object created (when empty): a failed run leaves no partial output.
class OutputDirectory {
 public:
  /// Throws dnmf::Error naming `path` when it cannot be created or written.
  explicit OutputDirectory(std::string path);
  ~OutputDirectory();
  OutputDirectory(const OutputDirectory&) = delete;
  OutputDirectory& operator=(const OutputDirectory&) = delete;

  /// The path of `name` inside the directory.
  [[nodiscard]] std::string file(const std::string& name) const;
  /// Records that `file` has been written, so that a later failure removes it again.
  void wrote(const std::string& file);
  /// The run succeeded: keep everything.
  void commit() { committed_ = true; }

 private:
  std::string path_;
  std::vector<std::string> created_directories_;  ///< outermost first
  std::vector<std::string> written_files_;
  bool committed_ = false;
};

}  // namespace dnmf::cli
