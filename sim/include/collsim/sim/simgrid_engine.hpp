// The simgrid engine: executes any schedule on a SimGrid 3.32 flow-level network built from the
// topology (max-min bandwidth sharing on every directed link), configured as an exact
// alpha-beta model: network/model:CM02, network/crosstraffic:0, network/TCP-gamma:0, latency
// and bandwidth factors 1. A transfer of m bytes alone on its route therefore takes
// sum(route latencies) + m / min(route bandwidths).
//
// Timing semantics (identical to the replay engine, see replay_engine.hpp):
//  * a transfer starts when both endpoints have reached its round, not before either
//    endpoint's arrival, and in barrier mode not before every participant of its phase has
//    arrived;
//  * the sender is done when the data has arrived; a `reduce` receiver is done m * gamma later
//    (topology.link.gamma_s_per_byte);
//  * a rank's next round starts when all of its transfers of the current round are done.
//
// Each run() happens in a forked child process (SimGrid keeps global state that cannot be
// reset within one process) and its result comes back through a pipe, so run() may be called
// any number of times, also from several threads at once. This header exposes no SimGrid type.
#pragma once

#include <memory>

#include "collsim/sim/engine.hpp"

namespace collsim {

/// An engine named "simgrid". Its run() throws ConfigError when the config does not fit the
/// schedule (checked_arrivals in run_checks.hpp), ScheduleError for a malformed transfer
/// (rank >= n, src == dst, chunks out of range), and InternalError if the simulation process
/// fails (fork/pipe errors, SimGrid aborting). Memory, in the child process: 8 bytes per
/// transfer (per-rank transfer lists) plus SimGrid's state for the flows in flight, plus 40
/// bytes per transfer with record_trace (also in the caller); topologies whose routes are not
/// {up(src), down(dst)} (all but nvswitch) also get an n x n SimGrid routing table (8 n^2
/// bytes). Time: SimGrid costs several microseconds per transfer (see simgrid_bench).
std::unique_ptr<Engine> make_simgrid_engine();

}  // namespace collsim
