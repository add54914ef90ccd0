// Compact command-line forms of delay distributions and stragglers, for `collsim simulate`.
//
//   --distribution KIND:KEY=VALUE[,KEY=VALUE...]
//       the same kinds, keys and units as YAML (arrival_yaml.hpp), e.g.
//       lognormal:median=6.97ms,mean=9.5ms    uniform:min=0,max=20us    pareto:scale=1ms,shape=2.5
//       truncated_normal:mean=5ms,stddev=1ms,hi=8ms   empirical:file=delays.csv,column=delay_ms
//       constant:5ms (a single value without KEY= is the constant's value), or just 5ms.
//   --stragglers RANK[:DELAY][,RANK[:DELAY]...]
//       e.g. 3:5ms,7:2ms. A rank without ":DELAY" draws from the default delay (normally the
//       --distribution or --delay flag), e.g. --stragglers 3,7 --distribution exponential:mean=2ms.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "collsim/models/arrival.hpp"
#include "collsim/models/distribution.hpp"

namespace collsim {

/// Parses the --distribution form. `what` names the flag in messages. Relative empirical files
/// are relative to the working directory. Throws ConfigError naming `what`, the key and the text.
DelayDistribution parse_distribution_cli(std::string_view text, std::string_view what = "--distribution");

/// Parses the --stragglers form. Ranks are not range-checked here (n may not be known yet;
/// ArrivalSpec::validate(n) does it). Throws ConfigError naming `what` and the offending entry:
/// empty entry, a rank that is not a non-negative integer, a malformed or negative delay, a rank
/// given twice, or a rank without delay when default_delay is empty.
std::vector<StragglerSpec> parse_stragglers_cli(std::string_view text,
                                                const std::optional<DelayDistribution>& default_delay = std::nullopt,
                                                std::string_view what = "--stragglers");

/// Parses a probability in [0, 1] such as the --persistence value. Throws ConfigError.
double parse_probability(std::string_view text, std::string_view what = "--persistence");

}  // namespace collsim
