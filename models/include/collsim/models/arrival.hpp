// Arrival models: when each rank reaches the collective in one iteration.
//
// An ArrivalSpec is plain data (from YAML, see formats/arrival_yaml.hpp, or the command line, experiments/arrival_flags.hpp).
// make_arrivals / ArrivalProcess turn it into per-rank arrival times in seconds, with the
// earliest arrival at 0 by convention.
//
// Randomness. Everything derives from one 64-bit seed through independent sub-streams
// (derive_seed): straggler delays of iteration i, jitter of iteration i, and straggler
// identities. So (spec, n, seed, iteration) always gives the same arrivals whatever order
// iterations are computed in, adding jitter does not change the straggler delays, and
// changing a delay distribution does not move the stragglers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/formats/arrival_trace.hpp"
#include "collsim/models/distribution.hpp"

namespace collsim {

enum class ArrivalModel {
  None,        ///< every rank arrives at 0 (plus jitter, if any)
  Explicit,    ///< arrival_s gives every rank's arrival time
  Stragglers,  ///< the ranks in `stragglers` arrive late by their delay distributions
  /// Observed arrivals (arrival_trace.hpp): iteration t replays trace iteration t mod count.
  /// Schedules are built for the rank most often last in the trace (what offline profiling
  /// would pick), so a late rank that moves shows up as straggler_moved.
  Trace,
};

/// How the straggler identity evolves when persistence < 1. With several stragglers each one
/// (in list order) stays or moves on its own draw, and a mover picks uniformly among the ranks no
/// straggler holds at that moment, so stragglers stay distinct. In both modes the fraction of
/// iterations whose straggler differs from the expected one tends to 1 - p (for one straggler).
enum class PersistenceMode {
  /// Each iteration the straggler stays where it was in the previous iteration with probability
  /// p, otherwise it moves to a uniformly random other rank. The schedule is assumed to be
  /// rebuilt for the last observed straggler, so the expected straggler of iteration i is the
  /// straggler of iteration i - 1 (the configured rank at i = 0).
  Markov,
  /// Each iteration independently: the configured rank with probability p, otherwise a uniformly
  /// random other rank. The schedule is built once, so the expected straggler is always the
  /// configured rank.
  Anchored,
};

std::string_view arrival_model_name(ArrivalModel model);          ///< "none", "explicit", "stragglers", "trace"
std::string_view persistence_mode_name(PersistenceMode mode);     ///< "markov", "anchored"

/// One late rank. A fixed delay is a constant distribution.
struct StragglerSpec {
  std::uint32_t rank = 0;
  DelayDistribution delay;
};

struct ArrivalSpec {
  ArrivalModel model = ArrivalModel::None;
  /// Explicit: the arrival time of every rank, seconds (>= 0); its size must equal n.
  std::vector<double> arrival_s;
  /// Stragglers: distinct ranks, at least one. Order matters for reproducibility: the delays of
  /// an iteration are drawn in this order.
  std::vector<StragglerSpec> stragglers;
  /// Trace: the observed arrivals (shared, read once) and the file they came from, as given
  /// (written back by arrival_to_yaml).
  std::shared_ptr<const ArrivalTrace> trace;
  std::string trace_file;
  /// Trace: how the file was read (communicator, skip_incomplete), written back with it.
  ArrivalTraceOptions trace_options;
  /// Trace: set when `trace` was reduced to this one iteration label (ArrivalTrace::only).
  std::optional<std::uint64_t> trace_iteration;
  /// Trace reduced to one iteration: the rank most often last in the whole trace, which is what
  /// offline profiling names and what a schedule is built for (the iteration's own last rank is
  /// known only after it ran). Set with trace_iteration, by reduce_to_iteration().
  std::optional<std::uint32_t> trace_profiled_last;
  /// Trace reduced to one iteration: that iteration's index in the whole trace. Jitter is drawn
  /// per trial, and trial 0 of the reduced trace draws what trial `trace_index` of the whole
  /// trace draws, so an iteration run alone takes the time it takes inside the trace.
  std::uint64_t trace_index = 0;
  /// Optional delay added independently to every rank (any model).
  std::optional<DelayDistribution> jitter;
  /// Stragglers: probability in [0, 1] that a straggler keeps its identity; 1 = always the same.
  double persistence = 1.0;
  PersistenceMode persistence_mode = PersistenceMode::Markov;

  /// Checks everything that does not depend on n. Throws ConfigError naming `what`.key and the
  /// value: persistence outside [0, 1] or set for a model without stragglers, an explicit list
  /// that is empty or has a negative/non-finite time, stragglers with the wrong model, no
  /// stragglers in the Stragglers model, or a rank listed twice.
  void validate(std::string_view what = "arrival") const;

  /// validate() plus the checks that need n (ranks): n >= 1, explicit list size == n, a trace's
  /// group size == n, straggler
  /// ranks < n, and fewer stragglers than ranks when persistence < 1 (a straggler needs
  /// somewhere to move). Throws ConfigError.
  void validate(std::uint32_t n, std::string_view what = "arrival") const;

  /// The ranks a schedule should be built for: the configured straggler ranks (Stragglers), the
  /// latest-arriving rank when it is strictly later than the earliest (Explicit; lowest rank on a
  /// tie), the rank most often last (Trace; in the whole trace when reduced to one iteration),
  /// else none.
  std::vector<std::uint32_t> expected_stragglers() const;

  /// Which entry of expected_stragglers() (and of Arrivals::expected_stragglers, in the same slot
  /// order) a straggler-aware schedule is built for: the straggler with the largest median delay,
  /// the first listed on a tie. The schedule hides the absence of one rank, and the latest one is
  /// the absence that costs most. 0 for the other models (one expected straggler at most).
  std::size_t schedule_slot() const;

  /// Trace: keeps only iteration `label` of `trace` (ArrivalTrace::only; throws its ConfigError),
  /// remembering the whole trace's most often last rank for expected_stragglers().
  void reduce_to_iteration(std::uint64_t label);

  /// expected[schedule_slot()]; nullopt when `expected` is empty.
  std::optional<std::uint32_t> schedule_straggler(const std::vector<std::uint32_t>& expected) const;

  /// One line for logs and result files, e.g.
  /// "stragglers(7: constant(5.000 ms); jitter uniform(...); persistence 0.9 markov)".
  std::string describe() const;
};

/// The arrivals of one iteration.
struct Arrivals {
  std::uint64_t iteration = 0;
  /// Per rank, seconds; the smallest is exactly 0.
  std::vector<double> arrival_s;
  /// The designated stragglers this iteration, in the order of ArrivalSpec::stragglers (a
  /// moved straggler keeps its slot and its delay distribution). For Explicit, as in
  /// ArrivalSpec::expected_stragglers(); for Trace, the last rank of the replayed iteration;
  /// empty for None.
  std::vector<std::uint32_t> stragglers;
  /// The ranks the schedule of this iteration was built for (see PersistenceMode), slot order.
  std::vector<std::uint32_t> expected_stragglers;

  /// True when a straggler is not where the schedule expected it. False when every rank arrives
  /// together: nobody is late, so nobody moved (a trace's tie names rank 0 only by convention).
  bool straggler_moved() const;
  /// Latest arrival, seconds.
  double max_arrival_s() const;
};

/// Generates the arrivals of a sequence of iterations of one run. Keeps the identity chain of
/// the Markov mode, so computing iterations 0..I-1 costs O(I) in total in any order.
class ArrivalProcess {
 public:
  /// Validates spec for n (throws ConfigError, see ArrivalSpec::validate).
  ArrivalProcess(ArrivalSpec spec, std::uint32_t n, std::uint64_t seed);

  /// The arrivals of `iteration` (0-based). Same (spec, n, seed, iteration) -> same result.
  Arrivals at(std::uint64_t iteration);

  /// The straggler ranks of `iteration` (slot order) without drawing any delays.
  std::vector<std::uint32_t> stragglers_at(std::uint64_t iteration);

  const ArrivalSpec& spec() const { return spec_; }
  std::uint32_t n() const { return n_; }
  std::uint64_t seed() const { return seed_; }

 private:
  // Identities of iteration i and the reference they were drawn from (the expected stragglers).
  std::vector<std::uint32_t> identities(std::uint64_t iteration, std::vector<std::uint32_t>* expected);

  ArrivalSpec spec_;
  std::uint32_t n_;
  std::uint64_t seed_;
  std::vector<std::uint32_t> configured_;
  // Markov chain cache: chain_[i * k + j] is slot j's rank in iteration i, for i < computed.
  std::vector<std::uint32_t> chain_;
  Rng chain_rng_;
};

/// The arrivals of one iteration of a run with the given seed. Equivalent to
/// ArrivalProcess(spec, n, seed).at(iteration); prefer ArrivalProcess for many iterations
/// with persistence < 1 in Markov mode (this function replays the identity chain from 0).
/// Throws ConfigError if spec is invalid for n.
Arrivals make_arrivals(const ArrivalSpec& spec, std::uint32_t n, std::uint64_t iteration, std::uint64_t seed);

/// `arrival_s` with every rank moved later by its own uniform draw in [0, max_s) (from `seed`),
/// then shifted so that the first arrival is exactly 0 again (so relative to the first, a rank
/// moves by less than max_s either way): the inputs of a run a hair away from the given one, to
/// measure how much the model amplifies a tiny difference (measure_sensitivity). max_s >= 0
/// (asserted).
std::vector<double> nudged_arrivals(const std::vector<double>& arrival_s, std::uint64_t seed, double max_s);

}  // namespace collsim
