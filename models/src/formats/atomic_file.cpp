#include "collsim/models/formats/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"

namespace collsim {

std::filesystem::path writable_destination(const std::filesystem::path& target) {
  namespace fs = std::filesystem;
  std::error_code ec;
  check_not_an_input(target);
  // The rename of write_file_atomically replaces whatever the name is: a device (/dev/full as
  // root became a regular file), a pipe, or a link (which became a file, its target untouched).
  // Write through a link to a regular file; refuse anything else that is not a regular file.
  const fs::file_status status = fs::symlink_status(target, ec);
  if (fs::is_symlink(status)) {
    const fs::path destination = fs::canonical(target, ec);
    if (ec || !fs::is_regular_file(destination, ec)) {
      throw ConfigError(fmt::format("cannot write '{}': it is a link, and not to a regular file", target.string()));
    }
    return destination;
  }
  if (fs::exists(status) && !fs::is_regular_file(status)) {
    throw ConfigError(
        fmt::format("cannot write '{}': it exists and is not a regular file (a device or a pipe?)", target.string()));
  }
  return target;
}

void write_file_atomically(const std::string& path, std::string_view content) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (path.empty()) throw ConfigError("cannot write a file with an empty name");
  // Never create directories here: a mistyped path must be an error, not a new directory tree.
  // Callers that own an output directory (collsim run --out) create it themselves.
  if (target.has_parent_path() && !fs::is_directory(target.parent_path(), ec)) {
    throw ConfigError(fmt::format("cannot write '{}': directory '{}' does not exist", path, target.parent_path().string()));
  }
  const fs::path destination = writable_destination(target);
  // The pid keeps concurrent writers (e.g. several MPI ranks) from sharing a temporary file.
  const std::string tmp = fmt::format("{}.tmp.{}", destination.string(), static_cast<long>(::getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(errno)));
  const bool written = std::fwrite(content.data(), 1, content.size(), f) == content.size();
  const bool flushed = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !flushed || !closed) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("cannot write '{}': {}", path, std::strerror(err)));
  }
  fs::rename(tmp, destination, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw ConfigError(fmt::format("cannot rename '{}' to '{}': {}", tmp, path, ec.message()));
  }
}

}  // namespace collsim
