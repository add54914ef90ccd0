#include "collsim/models/arrival_trace_stats.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

// Scales a MAD to the standard deviation of a normal bulk.
constexpr double kMadToSigma = 1.4826;

double median(std::vector<double> values) {
  const std::size_t m = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(m), values.end());
  const double upper = values[m];
  if (values.size() % 2 == 1) return upper;
  return 0.5 * (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(m)));
}

Percentiles percentiles(const std::vector<double>& values) {
  return {nearest_rank_percentile(values, 50), nearest_rank_percentile(values, 90),
          nearest_rank_percentile(values, 99), nearest_rank_percentile(values, 100)};
}

// Delays of one iteration in descending order.
std::vector<double> descending(std::vector<double> delay_s) {
  std::sort(delay_s.begin(), delay_s.end(), std::greater<>());
  return delay_s;
}

}  // namespace

void LateRule::validate() const {
  if (!(std::isfinite(mad_k) && mad_k >= 0)) {
    throw ConfigError(fmt::format("late rule: k = {} must be finite and >= 0", mad_k));
  }
  if (!(std::isfinite(floor_s) && floor_s >= 0)) {
    throw ConfigError(fmt::format("late rule: floor = {} s must be finite and >= 0", floor_s));
  }
}

double nearest_rank_percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::clamp<std::size_t>(rank, 1, values.size()) - 1];
}

std::vector<std::uint32_t> late_ranks(const std::vector<double>& delay_s, const LateRule& rule) {
  const double center = median(delay_s);
  std::vector<double> deviation;
  deviation.reserve(delay_s.size());
  for (double d : delay_s) deviation.push_back(std::abs(d - center));
  const double threshold = std::max(rule.mad_k * kMadToSigma * median(deviation), rule.floor_s);
  std::vector<std::uint32_t> late;
  for (std::size_t r = 0; r < delay_s.size(); ++r) {
    if (delay_s[r] - center > threshold) late.push_back(static_cast<std::uint32_t>(r));
  }
  return late;
}

ArrivalTraceSummary summarize_arrival_trace(const ArrivalTrace& trace, const LateRule& rule) {
  rule.validate();
  COLLSIM_ASSERT(trace.size() > 0 && trace.n >= 2, "a parsed trace has iterations and a group of >= 2 ranks");
  ArrivalTraceSummary s;
  s.n = trace.n;
  s.iterations = trace.size();
  s.rule = rule;
  s.late_histogram.assign(trace.n, 0);
  s.late_by_rank.assign(trace.n, 0);
  s.last_by_rank.assign(trace.n, 0);
  std::vector<double> spreads, gaps;
  std::size_t total_late = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const std::vector<double> sorted = descending(trace.delay_s[i]);
    spreads.push_back(sorted.front() - sorted.back());
    gaps.push_back(sorted[0] - sorted[1]);
    const auto late = late_ranks(trace.delay_s[i], rule);
    // At most n - 1 ranks can exceed the median, so the histogram index is in range.
    ++s.late_histogram[late.size()];
    total_late += late.size();
    for (std::uint32_t r : late) ++s.late_by_rank[r];
    // An iteration where all arrive together has no last rank (as for most_often_last).
    if (!trace.all_tied(i)) ++s.last_by_rank[trace.last_rank(i)];
  }
  s.spread = percentiles(spreads);
  s.gap = percentiles(gaps);
  s.mean_late_ranks = static_cast<double>(total_late) / static_cast<double>(trace.size());
  // Over consecutive pairs of iterations that both have a late rank (none with one iteration).
  std::size_t same = 0;
  for (std::size_t i = 1; i < trace.size(); ++i) {
    if (trace.all_tied(i) || trace.all_tied(i - 1)) continue;
    ++s.persistence_pairs;
    same += trace.last_rank(i) == trace.last_rank(i - 1) ? 1 : 0;
  }
  s.persistence = s.persistence_pairs == 0 ? std::numeric_limits<double>::quiet_NaN()
                                           : static_cast<double>(same) / static_cast<double>(s.persistence_pairs);
  s.chance_uniform = 1.0 / static_cast<double>(trace.n);
  const std::size_t named = std::accumulate(s.last_by_rank.begin(), s.last_by_rank.end(), std::size_t{0});
  for (std::size_t count : s.last_by_rank) {
    const double f = named == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(named);
    s.chance_empirical += f * f;
  }
  return s;
}

ArrivalSpec fit_arrival_model(const ArrivalTrace& trace, const LateRule& rule) {
  const ArrivalTraceSummary summary = summarize_arrival_trace(trace, rule);
  const auto k = static_cast<std::size_t>(
      std::clamp<double>(std::round(summary.mean_late_ranks), 1.0, static_cast<double>(trace.n - 1)));
  std::vector<std::uint32_t> order(trace.n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (summary.late_by_rank[a] != summary.late_by_rank[b]) return summary.late_by_rank[a] > summary.late_by_rank[b];
    return summary.last_by_rank[a] > summary.last_by_rank[b];
  });
  std::vector<double> late_samples, other_samples;
  for (const auto& delays : trace.delay_s) {
    const std::vector<double> sorted = descending(delays);
    late_samples.insert(late_samples.end(), sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k));
    other_samples.insert(other_samples.end(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
  }
  const std::string source = fmt::format("fit of {}", trace.source);
  ArrivalSpec spec;
  spec.model = ArrivalModel::Stragglers;
  const DelayDistribution delay = DelayDistribution::empirical(late_samples, source);
  for (std::size_t j = 0; j < k; ++j) spec.stragglers.push_back({order[j], delay});
  if (std::any_of(other_samples.begin(), other_samples.end(), [](double d) { return d > 0; })) {
    spec.jitter = DelayDistribution::empirical(other_samples, source);
  }
  spec.persistence = std::isnan(summary.persistence) ? 1.0 : summary.persistence;
  spec.persistence_mode = PersistenceMode::Markov;
  spec.validate(trace.n, "fitted arrival model");
  return spec;
}

}  // namespace collsim
