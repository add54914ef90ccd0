// Helpers every test suite uses: a scratch directory that cleans up after itself, and checks on
// the text of collsim's errors (messages must name the key, value and line, so tests read them).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/error.hpp"

namespace collsim::test {

/// A fresh directory under the system temp dir, removed with everything in it at scope exit.
/// The name carries the pid and a counter, so parallel test processes never share one.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "collsim_test")
      : path_(std::filesystem::temp_directory_path() / fmt::format("{}_{}_{}", prefix, ::getpid(), counter_++)) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

/// The message of the collsim::Error that fn throws; a test failure (and "") if it throws none.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no collsim::Error thrown";
  return {};
}

inline void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

/// fn must throw collsim::ConfigError whose message contains every one of `needles`.
template <typename Fn>
void expect_config_error(Fn&& fn, const std::vector<std::string>& needles) {
  try {
    fn();
    ADD_FAILURE() << "no ConfigError thrown";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    for (const auto& needle : needles) expect_contains(message, needle);
  }
}

}  // namespace collsim::test
