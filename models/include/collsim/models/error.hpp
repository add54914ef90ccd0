// Error types thrown at collsim's boundaries. Library code throws; only main() catches.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace collsim {

/// `message` with every NUL byte written as the four characters \x00. what() is a C string: a
/// NUL echoed from an input (a binary trace, an escaped NUL in a JSON string) ended the message
/// there, so the CLI printed "line '" and lost the value and the reason.
inline std::string without_nul_bytes(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (const char c : message) {
    if (c == '\0') {
      out += "\\x00";
    } else {
      out += c;
    }
  }
  return out;
}

/// Base of every error collsim throws on purpose. what() is a complete, user-facing sentence
/// (NUL bytes in it escaped as \x00, see without_nul_bytes).
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(without_nul_bytes(message)) {}
};

/// Bad user input: YAML, CLI flags, unit strings, log files. The message names key, value, line.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// A schedule cannot be generated (unsupported n) or is malformed.
class ScheduleError : public Error {
 public:
  using Error::Error;
};

/// A CUDA, NCCL or device failure in cuda_validate.
class CudaError : public Error {
 public:
  using Error::Error;
};

/// A broken internal invariant: a bug in collsim, never a user mistake.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace collsim

// Invariant check that stays on in every build type: simulations are cheap compared with the
// cost of a silently wrong result. Throws InternalError so library code never aborts.
#define COLLSIM_ASSERT(cond, msg)                                                              \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      throw ::collsim::InternalError(std::string("internal invariant failed: ") + #cond +      \
                                     " (" + (msg) + ") at " + __FILE__ + ":" +                 \
                                     std::to_string(__LINE__));                                \
    }                                                                                          \
  } while (false)
