// Error types thrown at collsim's boundaries. Library code throws; only main() catches.
#pragma once

#include <stdexcept>
#include <string>

namespace collsim {

/// Base of every error collsim throws on purpose. what() is a complete, user-facing sentence.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
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
