#include "collsim/experiments/output_path.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {
namespace fs = std::filesystem;

void check_output_file(const fs::path& path, std::string_view command, std::string_view option) {
  const std::string shown = quote_excerpt(path.string(), 200);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw ConfigError(fmt::format("{}: {} '{}' is a directory (give a file name)", command, option, shown));
  }
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (fs::exists(parent, ec) && !fs::is_directory(parent, ec)) {
    throw ConfigError(fmt::format("{}: {} '{}': {}", command, option, shown, std::strerror(ENOTDIR)));
  }
  if (fs::is_directory(parent, ec) && ::access(parent.c_str(), W_OK | X_OK) != 0) {
    throw ConfigError(fmt::format("{}: {} '{}': cannot write in '{}': {}", command, option, shown,
                                  quote_excerpt(parent.string(), 200), std::strerror(errno)));
  }
  // What writable_destination refuses at write time (after a summary was printed or a fit run),
  // refused here with the option's name: a device (/dev/null), a pipe, a link to either.
  const fs::file_status status = fs::symlink_status(path, ec);
  if (fs::is_symlink(status) && !fs::is_regular_file(path, ec)) {
    throw ConfigError(
        fmt::format("{}: {} '{}' is a link, and not to a regular file (give a file name)", command, option, shown));
  }
  if (!fs::is_symlink(status) && fs::exists(status) && !fs::is_regular_file(status)) {
    throw ConfigError(
        fmt::format("{}: {} '{}' exists and is not a regular file (a device or a pipe?); give a file name", command,
                    option, shown));
  }
}

void check_not_same_file(const fs::path& path, std::string_view command, std::string_view option,
                         const fs::path& other, std::string_view other_what) {
  if (!same_file(path, other)) return;
  throw ConfigError(fmt::format("{}: {} '{}' is {} '{}': writing it would replace that file; give another name", command,
                                option, quote_excerpt(path.string(), 200), other_what, quote_excerpt(other.string(), 200)));
}

void prepare_output_dir(const fs::path& dir, std::string_view command, std::string_view option) {
  const std::string shown = quote_excerpt(dir.string(), 200);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
    throw ConfigError(fmt::format("{}: {} '{}' exists and is not a directory", command, option, shown));
  }
  fs::create_directories(dir, ec);
  if (ec) {
    throw ConfigError(fmt::format("{}: {} '{}': cannot create the directory: {}", command, option, shown, ec.message()));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw ConfigError(fmt::format("{}: {} '{}': cannot write in it: {}", command, option, shown, std::strerror(errno)));
  }
}

}  // namespace collsim
