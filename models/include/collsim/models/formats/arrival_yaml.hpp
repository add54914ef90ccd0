// YAML form of arrival models and delay distributions.
//
// Durations accept human units ("5ms", "20 us", "0.5s"); a bare number is seconds.
//
// Distribution (anywhere a `delay` or `jitter` is expected; a plain duration means constant):
//   {distribution: constant, value: 5ms}
//   {distribution: uniform, min: 0us, max: 20us}
//   {distribution: truncated_normal, mean: 5ms, stddev: 1ms, lo: 0s, hi: 10ms}
//        (alias `normal`; lo defaults to 0, hi to inf)
//   {distribution: exponential, mean: 2ms, shift: 1ms}              (shift defaults to 0)
//   {distribution: lognormal, median: 6.97ms, mean: 9.50ms}
//   {distribution: lognormal, median: 6.97ms, sigma: 0.787}
//   {distribution: lognormal, mu: -4.966, sigma: 0.787}              (mu = mean of ln(delay / 1 s))
//   {distribution: pareto, scale: 1ms, shape: 2.5}                   (P(X > x) = (scale / x)^shape)
//   {distribution: empirical, file: delays.csv, column: delay_ms, unit: ms}
//        (column and unit optional; see read_delay_samples_csv; a relative file is resolved
//        against base_dir, normally the YAML file's directory)
//   {distribution: empirical, samples: [1.1ms, 6.97ms, 22.45ms]}
//
// Arrival model (the value of an `arrival:` key):
//   {model: none}                                      everyone at 0 (jitter allowed)
//   {model: explicit, arrival: [0, 0, 1ms, 0]}         one time per rank (jitter allowed)
//   {model: stragglers,
//    stragglers: [{rank: 7, delay: 5ms}, {rank: 3, delay: {distribution: exponential, mean: 2ms}}]}
//   {model: stragglers, rank: 7, delay: 5ms}           one straggler, short form
//   {model: stragglers, ranks: [3, 7], delay: {...}}   several, each drawing from the same delay
//   model `distribution` is a synonym of `stragglers` (reads well with a drawn delay):
//   {model: distribution, rank: 7, delay: {distribution: lognormal, median: 6.97ms, mean: 9.50ms}}
//   {model: trace, file: job.csv}                      observed arrivals (arrival_trace.hpp), read
//        here; a relative file is resolved against base_dir; trial t replays iteration t mod count
//   {model: trace, file: job.csv, iteration: 12}       only the iteration labelled 12
//   {model: trace, file: job.json, communicator: 0x7f8c496ae9f661, skip_incomplete: true}
//        ArrivalTraceOptions: one communicator of an Inspector file; drop incomplete iterations
// Optional keys:
//   jitter: <distribution>          added independently to every rank (any model)
//   persistence: 0.9                stragglers only: probability the identity stays (default 1)
//   persistence_mode: markov        stragglers only: markov (default) | anchored, see PersistenceMode
//
// Every error is a ConfigError naming the key path ("arrival.stragglers[1].delay.median"), the
// value as written and the line (yaml-cpp Mark, 1-based): unknown keys, wrong node types,
// malformed or negative durations, ranks that are not non-negative integers or (when n is known)
// out of range, parameters a distribution rejects.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "collsim/models/arrival.hpp"
#include "collsim/models/distribution.hpp"

namespace YAML {
class Node;
}

namespace collsim {

/// Parses a distribution node (a map as above, or a scalar duration = constant).
/// `path` names the node in messages. Throws ConfigError.
DelayDistribution parse_distribution_yaml(const YAML::Node& node, std::string_view path,
                                          const std::filesystem::path& base_dir = {});

/// Parses an arrival model and validates it (ArrivalSpec::validate, and validate(n) when n is
/// given, in which case out-of-range ranks are reported with their line). Throws ConfigError.
ArrivalSpec parse_arrival_yaml(const YAML::Node& node, std::string_view path = "arrival",
                               std::optional<std::uint32_t> n = std::nullopt,
                               const std::filesystem::path& base_dir = {});

/// The resolved form for result files: every parameter explicit, times in seconds (bare
/// numbers), empirical samples inline. parse_*_yaml of the output gives back an equal model.
YAML::Node distribution_to_yaml(const DelayDistribution& distribution);
YAML::Node arrival_to_yaml(const ArrivalSpec& spec);

}  // namespace collsim
