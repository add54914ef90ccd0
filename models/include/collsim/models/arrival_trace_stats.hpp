// Summaries of an arrival trace (`collsim arrivals`) and an arrival model fitted to it.
//
// Late-rank rule. In one iteration a rank is late when its delay exceeds the median delay of
// the iteration by more than max(k * 1.4826 * MAD, floor), MAD being the median absolute
// deviation of the iteration's delays. This is the Hampel identifier: 1.4826 * MAD estimates the
// standard deviation of the bulk without being pulled by the late ranks themselves (a mean and
// a standard deviation would be), and k = 3 is its usual cut. The floor keeps the microsecond
// jitter of well-synchronised ranks (MAD near 0) from counting as lateness; 100 us is a few
// percent of a large AllReduce (1 GiB over 450 GB/s NVLink takes ~5 ms), below which a
// straggler-aware schedule has little to win.
//
// Persistence of the late rank: the fraction of consecutive iterations (in label order) whose
// last rank (the latest arrival, lowest rank on a tie) is the same. Chance levels: 1/n if the
// last rank were uniform, and sum_r f_r^2 if it were drawn independently each iteration with the
// observed frequencies f_r.
#pragma once

#include <cstdint>
#include <vector>

#include "collsim/models/arrival.hpp"
#include "collsim/models/formats/arrival_trace.hpp"

namespace collsim {

struct LateRule {
  double mad_k = 3.0;        ///< cut in robust standard deviations (1.4826 * MAD)
  double floor_s = 100e-6;   ///< minimum lateness, seconds
  /// Throws ConfigError when k or the floor is negative or not finite.
  void validate() const;
};

/// Nearest-rank percentiles of a sample, seconds (0 for an empty sample).
struct Percentiles {
  double p50_s = 0, p90_s = 0, p99_s = 0, max_s = 0;
};

/// The smallest x such that at least p % of `values` are <= x (nearest rank, p in (0, 100]).
double nearest_rank_percentile(std::vector<double> values, double p);

struct ArrivalTraceSummary {
  std::uint32_t n = 0;
  std::size_t iterations = 0;
  LateRule rule;
  Percentiles spread;  ///< last minus first arrival of each iteration
  Percentiles gap;     ///< last minus second-to-last arrival of each iteration
  /// late_histogram[k]: iterations with exactly k late ranks (size n).
  std::vector<std::size_t> late_histogram;
  double mean_late_ranks = 0;
  std::vector<std::size_t> late_by_rank;  ///< iterations in which each rank is late
  /// Iterations in which each rank is last; one where all arrive together names nobody.
  std::vector<std::size_t> last_by_rank;
  /// Fraction of consecutive iteration pairs with the same last rank, over the pairs in which
  /// both iterations have one (NaN when there are none).
  double persistence = 0;
  std::size_t persistence_pairs = 0;  ///< the pairs persistence is taken over
  double chance_uniform = 0;    ///< 1 / n
  double chance_empirical = 0;  ///< sum over ranks of (their share of last_by_rank)^2
};

/// Ranks late in one iteration under `rule`, ascending.
std::vector<std::uint32_t> late_ranks(const std::vector<double>& delay_s, const LateRule& rule);

/// Summarises `trace` (at least one iteration). Throws ConfigError for an invalid rule.
ArrivalTraceSummary summarize_arrival_trace(const ArrivalTrace& trace, const LateRule& rule = {});

/// A stragglers-model ArrivalSpec for what-if studies beyond the trace, in Markov mode:
///  * k = the mean number of late ranks per iteration rounded to nearest, between 1 and n - 1;
///  * the stragglers are the k ranks most often late (then most often last, then lowest rank);
///  * their delay is the empirical distribution of the k largest delays of every iteration;
///  * jitter is the empirical distribution of the other delays (omitted when all are 0);
///  * persistence is the observed persistence of the last rank over consecutive iterations that
///    both have a late rank (1 when there are none), the Markov mode's probability of staying.
/// Throws ConfigError for an invalid rule.
ArrivalSpec fit_arrival_model(const ArrivalTrace& trace, const LateRule& rule = {});

}  // namespace collsim
