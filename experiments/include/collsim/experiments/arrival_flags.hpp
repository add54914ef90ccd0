// The arrival flags of `collsim simulate` and `collsim advise`: one declaration, one parser, one
// set of rules, so both commands accept the same command lines.
//
//   --delay TIME            constant delay of the straggler (default: nobody is late)
//   --straggler RANK        the late rank (default n-1)
//   --distribution KIND:KEY=VALUE[,KEY=VALUE...]
//       the straggler's delay drawn from a distribution, with the kinds, keys and units of YAML
//       (arrival_yaml.hpp), e.g. lognormal:median=6.97ms,mean=9.5ms   uniform:min=0,max=20us
//       pareto:scale=1ms,shape=2.5   empirical:file=delays.csv,column=delay_ms   constant:5ms
//       (a single value without KEY= is the constant's value), or just 5ms.
//   --stragglers RANK[:DELAY][,RANK[:DELAY]...]
//       several late ranks, e.g. 3:5ms,7:2ms. A rank without ":DELAY" draws from --delay or
//       --distribution, e.g. --stragglers 3,7 --distribution exponential:mean=2ms.
//   --jitter KIND:KEY=VALUE,...   delay added independently to every rank
//   --persistence P         probability that a straggler keeps its identity between iterations
//   --arrival YAML          a whole arrival model as inline YAML (arrival_yaml.hpp format)
//
// Pairs that contradict each other are errors naming both flags: --delay with --distribution,
// --stragglers with --straggler, --arrival with any of --delay/--distribution/--stragglers/
// --straggler.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/arrival.hpp"
#include "collsim/models/distribution.hpp"

namespace collsim {

class ArgParser;

/// Declares the arrival flags above on `parser` (no defaults: an absent flag means "not given").
void declare_arrival_flags(ArgParser& parser);

/// The arrival model the flags describe for n ranks, validated against n, or nullopt when no
/// flag but possibly --straggler was given (nobody is late). `command` prefixes messages.
/// Throws ConfigError naming the flag(s) and the value.
std::optional<ArrivalSpec> arrival_from_flags(const ArgParser& parser, Rank n, std::string_view command);

/// Parses the --distribution form. `what` names the flag in messages. Relative empirical files
/// are relative to the working directory. Throws ConfigError naming `what`, the key and the text.
DelayDistribution parse_distribution_cli(std::string_view text, std::string_view what = "--distribution");

/// Parses the --stragglers form. Ranks are not range-checked here (ArrivalSpec::validate(n) does
/// it). Throws ConfigError naming `what` and the offending entry: empty entry, a rank that is not
/// a non-negative integer, a malformed or negative delay, a rank given twice, or a rank without
/// delay when default_delay is empty.
std::vector<StragglerSpec> parse_stragglers_cli(std::string_view text,
                                                const std::optional<DelayDistribution>& default_delay = std::nullopt,
                                                std::string_view what = "--stragglers");

/// Parses a probability in [0, 1] such as the --persistence value. Throws ConfigError.
double parse_probability(std::string_view text, std::string_view what = "--persistence");

}  // namespace collsim
