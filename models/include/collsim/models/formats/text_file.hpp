// Reading a whole text input file (spec, topology, model, nccl-tests log, measurement CSV, arrival
// trace, delay samples) with the refusals every reader needs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace collsim {

/// Inputs written by people or by tools: specs, topologies and model files are a few KiB.
inline constexpr std::uint64_t kConfigFileMaxBytes = std::uint64_t{64} << 20;
/// Logs, CSVs and traces: a 16,384-rank trace of 10,000 iterations is ~4 GiB of CSV; the limit
/// leaves room for that and for the parse on a 24 GiB machine.
inline constexpr std::uint64_t kDataFileMaxBytes = std::uint64_t{8} << 30;

/// The file's bytes. Throws ConfigError, naming the file (and `what` it is, when given), for a
/// directory (an ifstream opens one and reads nothing), a file that cannot be opened, a NUL byte
/// (with its line: a binary file, a UTF-16 export, /dev/zero) and more than `max_bytes`.
/// Why the last two: an endless device or a pipe that never closes was read until memory ran
/// out; NUL-free endless input stops at the limit, and a regular file above it is refused before
/// it is read.
std::string read_text_file(const std::filesystem::path& path, std::string_view what, std::uint64_t max_bytes);

/// What a path names, after links, for messages about an input file.
struct FileLookup {
  enum class Kind { Regular, Missing, Directory, Other, Unreachable };
  Kind kind = Kind::Missing;
  /// Why it is not a regular file: "" (Regular), "does not exist", "is a directory", "is not a
  /// regular file", or "cannot be looked up (R)" with the system's reason R ("File name too long",
  /// "Permission denied").
  std::string why;
};

/// Never throws: the throwing std::filesystem checks turned a name past the system's limit (a
/// 5,000-character topology or plot path) into an internal error instead of an error naming the
/// input.
FileLookup look_up_file(const std::filesystem::path& path);

/// Every file read_text_file opened since the last forget_input_files(), absolute. Why: outputs
/// are written after the work, and one named like an input (a topology given by name, a delay
/// samples file, a trace named inside --arrival) silently replaced it; commands checked the
/// inputs they knew of, and missed the ones read on their behalf. check_not_an_input() and
/// write_file_atomically() consult this list instead.
std::vector<std::filesystem::path> input_files_read();
/// Starts a new command's list (the CLI calls it before each command).
void forget_input_files();
/// Whether the two names are one file: the same normalized absolute path, or one file reached by
/// two names (a link, a hard link).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b);
/// Throws ConfigError naming `path` when it is (or links to) a file this command read.
void check_not_an_input(const std::filesystem::path& path);
/// Takes `path` off the list: the command rewrites that input on purpose (`collsim run` on a
/// study's own config.resolved.yaml writes its re-resolution back, the documented rerun).
void allow_rewrite_of(const std::filesystem::path& path);

}  // namespace collsim
