// The points of a study (the cartesian product of its sweep axes), the work units they are cut
// into, and the seeds of their trials.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collsim/experiments/spec.hpp"

namespace collsim {

/// One point of the sweep: an index into each axis of the spec.
struct Point {
  std::size_t index = 0;
  std::size_t n = 0, topology = 0, engine = 0, start = 0, size = 0, arrival = 0, algorithm = 0;
};

/// The points of a validated spec, nested (outermost first) as n, topology, engine, start, size,
/// arrival, algorithm. n outermost keeps the schedules of one n together (the runner caches
/// them); algorithm innermost puts every algorithm of a scenario next to its ring baseline.
class SweepGrid {
 public:
  explicit SweepGrid(const ExperimentSpec& spec);

  std::size_t num_points() const { return total_; }
  /// The point with this index (0 <= index < num_points()).
  Point point(std::size_t index) const;
  /// The point that differs from `index` only in its algorithm, which is `algorithm`.
  std::size_t with_algorithm(std::size_t index, std::size_t algorithm) const;
  /// Index of the baseline point of the point (the spec's `baseline:`, ring by default; itself for the baseline).
  std::size_t baseline(std::size_t index) const { return with_algorithm(index, baseline_algorithm_); }
  /// True when the point is skipped because its algorithm does not support its n
  /// (skip_unsupported: true).
  bool skipped(std::size_t index) const;
  /// Points that run.
  std::size_t num_active_points() const;
  /// Points that share everything but the algorithm form a scenario; its number.
  std::size_t scenario(std::size_t index) const { return index / algorithms_; }
  std::size_t num_scenarios() const { return total_ / algorithms_; }
  std::size_t num_algorithms() const { return algorithms_; }

  const ExperimentSpec& spec() const { return *spec_; }

 private:
  const ExperimentSpec* spec_;
  std::size_t algorithms_ = 1, arrivals_ = 1, sizes_ = 1, starts_ = 1, engines_ = 1, topologies_ = 1, ns_ = 1;
  std::size_t total_ = 0;
  std::size_t baseline_algorithm_ = 0;
  std::vector<bool> unsupported_;  ///< [(algorithm * topologies + topology) * ns + n]
};

/// Seed of the arrival process of (arrival model, n): every algorithm, size, topology, engine and
/// start mode of a study sees the same arrivals in trial t (common random numbers), and the
/// value does not depend on the execution order or the number of MPI ranks. Trial t's arrivals
/// are make_arrivals(arrival_for(choice, n), n, t, arrival_seed(...)).
std::uint64_t arrival_seed(std::uint64_t spec_seed, std::size_t arrival_index, Rank n);

/// A contiguous block of trials of one point: the unit of work handed to a process.
struct WorkUnit {
  std::size_t id = 0;            ///< index in make_units()' result
  std::size_t point = 0;
  std::uint32_t trial_begin = 0;
  std::uint32_t trial_end = 0;   ///< exclusive
  double work = 0;               ///< cost estimate (for progress and ETA), arbitrary units
};

/// Trials per unit for n ranks: about 4 million simulated transfers per unit, at most 1000
/// trials. A function of the spec only, so a resumed run cuts the same units.
std::uint32_t trials_per_unit(Rank n, std::uint32_t trials);

/// The units of every active point, in point order, trials ascending.
std::vector<WorkUnit> make_units(const SweepGrid& grid);

/// For each point, another point whose runs are its no-delay reference (for
/// hidden_delay_fraction), or kNoReference: a point of the same algorithm, n, size, topology,
/// engine and start mode, for the same expected straggler, whose every trial has every rank
/// arriving at 0 (a `delays: [0, ...]` sweep has one). The runner then takes the reference from
/// that point's first trial instead of simulating it again in every process that runs a delayed
/// point of the scenario: under MPI the delayed and the delay-0 point run side by side.
/// Points that are themselves all-zero, and points without such a sibling, get kNoReference.
inline constexpr std::size_t kNoReference = static_cast<std::size_t>(-1);
std::vector<std::size_t> no_delay_references(const SweepGrid& grid);

}  // namespace collsim
