// Writing result files so that a crash or an error never leaves a half-written file behind.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace collsim {

/// Writes `content` to `path` atomically: a temporary file in the same directory is written,
/// flushed and renamed over `path`. Never creates directories: an empty path or a missing parent
/// directory is a ConfigError. On failure the temporary file is removed and ConfigError names the
/// path and the system error.
void write_file_atomically(const std::string& path, std::string_view content);

/// Where write_file_atomically would write `target`, checked without writing (commands call it
/// before their work, so a bad output name fails before, not after): not a file this command read
/// (check_not_an_input), not a pipe or device, and a link only to a regular file, which is
/// written through (the link's target is returned). Throws ConfigError naming the path.
std::filesystem::path writable_destination(const std::filesystem::path& target);

}  // namespace collsim
