#include "collsim/cuda_validate/pending_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {

PendingFile::PendingFile(std::string path, std::string option)
    : path_(std::move(path)), option_(std::move(option)),
      temporary_(fmt::format("{}.tmp.{}", path_, static_cast<long>(::getpid()))) {
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) {
    throw ConfigError(fmt::format("{}: '{}' is a directory", option_, path_));
  }
  errno = 0;
  out_.open(temporary_, std::ios::out | std::ios::trunc);
  if (!out_) {
    throw ConfigError(fmt::format("{}: cannot create '{}' next to '{}': {}", option_, temporary_, path_,
                                  errno != 0 ? std::strerror(errno) : "unknown error"));
  }
}

PendingFile::~PendingFile() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  std::filesystem::remove(temporary_, ec);
}

void PendingFile::commit() {
  out_.close();
  std::error_code ec;
  if (out_.fail()) {
    std::filesystem::remove(temporary_, ec);
    committed_ = true;
    throw ConfigError(fmt::format("{}: writing '{}' failed", option_, path_));
  }
  std::filesystem::rename(temporary_, path_, ec);
  committed_ = true;
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary_, ignored);
    throw ConfigError(fmt::format("{}: cannot rename '{}' to '{}': {}", option_, temporary_, path_, ec.message()));
  }
}

}  // namespace collsim::cuda_validate
