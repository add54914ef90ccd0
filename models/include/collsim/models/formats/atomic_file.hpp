// Writing result files so that a crash or an error never leaves a half-written file behind.
#pragma once

#include <string>
#include <string_view>

namespace collsim {

/// Writes `content` to `path` atomically: a temporary file in the same directory is written,
/// flushed and renamed over `path`. Never creates directories: an empty path or a missing parent
/// directory is a ConfigError. On failure the temporary file is removed and ConfigError names the
/// path and the system error.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace collsim
