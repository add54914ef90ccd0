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

/// How a schedule is executed, which decides the launch overheads it pays:
///  * Fused: one kernel for the whole collective, as NCCL's native collectives run; each rank
///    pays one launch before its first round.
///  * P2pRounds: one NCCL group plus a reduction kernel per round, as the StragglAR paper's
///    executor and collsim-cuda run; each rank pays a launch before every round it takes part in.
enum class ExecutionStyle { Fused, P2pRounds };

/// "fused" / "p2p_rounds".
inline const char* execution_style_name(ExecutionStyle style) {
  return style == ExecutionStyle::Fused ? "fused" : "p2p_rounds";
}

/// The style named `text`. Throws ConfigError naming `what`, the text and the known names.
ExecutionStyle parse_execution_style(std::string_view text, std::string_view what);

/// Costs of running a schedule that are not the network's. Zero by default, so that a run
/// without them is the pure alpha-beta(-gamma) model and the paper's curves reproduce exactly.
struct ExecutionCosts {
  ExecutionStyle style = ExecutionStyle::Fused;
  double launch_s = 0.0;  ///< one kernel or NCCL group launch and its synchronisation, seconds
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
