// An output file that replaces its destination only when the run that writes it succeeds.
//
// Why: collsim-cuda runs for minutes to hours and may fail at any point (a driver error, a hang,
// Ctrl-C); truncating --out at the start would wipe the CSV of the previous good run. Rows go to
// a temporary file next to the destination (same file system, so the final rename is atomic)
// and are flushed as they come, so a long run's progress is on disk; commit() renames it over
// the destination, and a PendingFile destroyed without commit() removes it.
#pragma once

#include <fstream>
#include <string>

namespace collsim::cuda_validate {

class PendingFile {
 public:
  /// Creates the temporary file "<path>.tmp.<pid>". Throws ConfigError naming `option` (e.g.
  /// "--out"), the path and the system error if it cannot be created (missing directory,
  /// permission denied, a directory as path).
  PendingFile(std::string path, std::string option);
  ~PendingFile();
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;

  std::ostream& stream() { return out_; }
  const std::string& temporary_path() const { return temporary_; }

  /// Closes the temporary file and renames it to the destination. Throws ConfigError naming the
  /// option and path if writing or renaming failed (the temporary file is then removed).
  void commit();

 private:
  std::string path_;
  std::string option_;
  std::string temporary_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace collsim::cuda_validate
