// Chrome / Perfetto trace JSON of one simulated run (opens in ui.perfetto.dev).
#pragma once

#include <string>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {

/// Writes the trace of `result` (which must have been run with record_trace) to `path`
/// atomically (temporary file, then rename). One process per GPU ("GPU r") with a "send" and a
/// "recv" thread so full-duplex transfers do not overlap on one track; a slice per transfer side
/// (name "c<chunk> copy|reduce", args: peer, phase, round, bytes); an instant marker at every
/// rank's arrival and at the first transfer of each phase on each rank. Times in microseconds.
/// Throws ConfigError if the file cannot be written or the result has no trace.
void write_chrome_trace(const std::string& path, const Schedule& schedule, const RunResult& result,
                        const std::vector<double>& arrival_s, double size_bytes);

/// The same trace as a string (for tests and small runs).
std::string chrome_trace_json(const Schedule& schedule, const RunResult& result,
                              const std::vector<double>& arrival_s, double size_bytes);

}  // namespace collsim
