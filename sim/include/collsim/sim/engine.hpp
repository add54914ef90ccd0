// The engine interface: execute a schedule with byte sizes, link costs and arrival times attached.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/link_model.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

/// Everything an engine needs besides the schedule.
struct RunConfig {
  double size_bytes = 0;            ///< buffer per rank; a chunk is size_bytes / num_chunks
  Topology topology;                ///< links and routes; topology.n must equal schedule.n
  StartMode start = StartMode::Eager;
  std::vector<double> arrival_s;    ///< per rank arrival time (seconds, >= 0); empty = all 0
  ExecutionCosts execution;         ///< launch overheads (none by default)
  /// Schedules relabelled at run time (stragglar_online): seconds the present ranks take to agree
  /// on who is late, >= 0. nullopt = the default: one flag write plus one read, 2 x the route
  /// latency between ranks 0 and n-1 (docs/stragglar_online.md).
  std::optional<double> agreement_s;
  bool record_trace = false;        ///< fill RunResult::trace
  /// The replay engine's approximate mode (0, the default: exact). > 0: after a bandwidth solve,
  /// flows that start or finish within this many seconds are applied without one (a new flow
  /// moves at the rate of flows like it, a finished one's share stays unused) and the next solve
  /// takes them in; see README "Approximate mode". Other engines are exact and ignore it.
  double reshare_interval_s = 0;
};

/// One executed transfer, for traces and tests.
struct TransferRecord {
  std::uint32_t phase = 0;
  std::uint32_t round = 0;          ///< round index within the phase
  Transfer transfer;
  double start_s = 0;               ///< both endpoints ready (rendezvous)
  double end_s = 0;                 ///< data applied at the receiver (incl. gamma for reduce)
};

struct RunResult {
  std::string engine;
  std::vector<double> finish_s;     ///< per rank: when its last round completed (>= arrival)
  double first_arrival_s = 0;
  double last_arrival_s = 0;
  double time_s = 0;                ///< last finish - first arrival
  double time_after_last_arrival_s = 0; ///< last finish - last arrival
  std::size_t transfers = 0;        ///< transfers simulated
  std::vector<TransferRecord> trace;///< only when RunConfig::record_trace
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  /// Executes `schedule`. Throws ConfigError when the config does not fit the schedule
  /// (rank counts, negative arrival) or the engine cannot model the topology.
  virtual RunResult run(const Schedule& schedule, const RunConfig& config) = 0;
  /// Whether run() on `topology` may build the event-driven index of the schedule's rank-rounds
  /// (event_index_bytes) beside the schedule, for a schedule in which some rank sends or
  /// receives more than once in a round (`shares_ports`) or not. Memory estimates before a run
  /// count it: on a flat 16,384-GPU ring it is as large as the schedule.
  virtual bool builds_event_index(const Topology& /*topology*/, bool /*shares_ports*/) const { return false; }
  /// Whether run() has an approximate mode for RunConfig::reshare_interval_s > 0 (replay); the
  /// other engines are exact and would ignore it, so the commands refuse it for them.
  virtual bool has_reshare_interval() const { return false; }
  /// Whether run() takes any per-rank arrival times (the closed forms model at most one late
  /// rank, so a measure that moves every rank's arrival cannot use them).
  virtual bool takes_any_arrivals() const { return true; }
};

/// Bytes of the event-driven engines' index of a schedule whose ranks take part in
/// `rank_rounds` rank-rounds (a rank's share of one round), `listed_transfers` of the transfers
/// counted once per endpoint in rank-rounds with three or more.
double event_index_bytes(double rank_rounds, double listed_transfers);

/// "closed_form" | "replay" | "simgrid". Throws ConfigError for an unknown name (listing the
/// known ones) or an engine not built into this binary. "auto" is not an engine: pass it
/// through resolve_engine_name() first.
std::unique_ptr<Engine> make_engine(std::string_view name);

/// The engine name that means "the fastest engine that models the topology exactly". Since the
/// replay engine shares bandwidth max-min fairly on every topology (oversubscribed fabrics
/// included), that is always "replay"; specs written when replay declined oversubscribed
/// fabrics (and auto picked simgrid there) keep working.
inline constexpr std::string_view kAutoEngine = "auto";

/// The engine that runs when `name` is chosen: "replay" for kAutoEngine, any other name unchanged
/// (not checked). Never throws.
std::string_view resolve_engine_name(std::string_view name);

}  // namespace collsim
