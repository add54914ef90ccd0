// The alpha-beta(-gamma) cost of one message, the parameters every engine and closed form share.
#pragma once

#include <string_view>

namespace collsim {

/// Cost of an m-byte message on an uncontended path: latency_s + m / bandwidth_Bps, plus
/// m * gamma_s_per_byte at the receiver when the message is reduced (0 = reduction is free,
/// as in the StragglAR paper).
struct LinkModel {
  double latency_s = 3e-6;                          ///< alpha, end-to-end, seconds
  double bandwidth_Bps = 450.0 * 1024 * 1024 * 1024;///< 1/beta, bytes per second
  double gamma_s_per_byte = 0.0;                    ///< reduction cost, seconds per byte

  double beta_s_per_byte() const { return 1.0 / bandwidth_Bps; }
  /// alpha + m * beta, the uncontended time of one m-byte message.
  double message_s(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
};

/// How phases start when ranks arrive at different times (see schedule.hpp).
enum class StartMode { Eager, Barrier };

inline const char* start_mode_name(StartMode mode) {
  return mode == StartMode::Eager ? "eager" : "barrier";
}

/// The start mode named `text` ("eager" or "barrier"), for every reader (flags, specs). Throws
/// ConfigError naming `what`, the text and the known names.
StartMode parse_start_mode(std::string_view text, std::string_view what);

}  // namespace collsim
