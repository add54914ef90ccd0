#include "collsim/models/arrival.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

// Sub-stream tags for derive_seed. Fixed forever: changing one changes every result.
constexpr std::uint64_t kDelayStream = 1;
constexpr std::uint64_t kJitterStream = 2;
constexpr std::uint64_t kMarkovStream = 3;
constexpr std::uint64_t kAnchoredStream = 4;

// One persistence step, slot by slot: a slot keeps its rank with probability p, otherwise it
// takes a uniformly random rank that no slot holds right now (so never its own, and stragglers
// stay distinct). One draw per slot plus the draws of uniform_index for each move.
void step_identities(std::vector<std::uint32_t>& ranks, std::uint32_t n, double p, Rng& rng) {
  const auto k = static_cast<std::uint32_t>(ranks.size());
  for (std::size_t j = 0; j < ranks.size(); ++j) {
    if (uniform01(rng) < p) continue;
    std::vector<std::uint32_t> taken = ranks;
    std::sort(taken.begin(), taken.end());
    // The idx-th free rank: walk up past every taken rank at or below the candidate.
    auto candidate = static_cast<std::uint32_t>(uniform_index(rng, n - k));
    for (std::uint32_t t : taken) {
      if (t <= candidate) ++candidate;
    }
    ranks[j] = candidate;
  }
}

}  // namespace

std::string_view arrival_model_name(ArrivalModel model) {
  switch (model) {
    case ArrivalModel::None: return "none";
    case ArrivalModel::Explicit: return "explicit";
    case ArrivalModel::Stragglers: return "stragglers";
    case ArrivalModel::Trace: return "trace";
  }
  return "unknown";
}

std::string_view persistence_mode_name(PersistenceMode mode) {
  switch (mode) {
    case PersistenceMode::Markov: return "markov";
    case PersistenceMode::Anchored: return "anchored";
  }
  return "unknown";
}

void ArrivalSpec::validate(std::string_view what) const {
  if (!(persistence >= 0.0 && persistence <= 1.0)) {
    throw ConfigError(fmt::format("{}.persistence = {} must be a probability in [0, 1]", what, persistence));
  }
  if (model != ArrivalModel::Stragglers && persistence != 1.0) {
    throw ConfigError(fmt::format("{}.persistence = {} needs model 'stragglers' (model is '{}')", what,
                                  persistence, arrival_model_name(model)));
  }
  if (model != ArrivalModel::Explicit && !arrival_s.empty()) {
    throw ConfigError(fmt::format("{}.arrival (a list of {} times) needs model 'explicit' (model is '{}')",
                                  what, arrival_s.size(), arrival_model_name(model)));
  }
  if (model != ArrivalModel::Stragglers && !stragglers.empty()) {
    throw ConfigError(fmt::format("{}.stragglers ({} given) needs model 'stragglers' (model is '{}')", what,
                                  stragglers.size(), arrival_model_name(model)));
  }
  if ((model == ArrivalModel::Trace) != (trace != nullptr)) {
    throw ConfigError(model == ArrivalModel::Trace
                          ? fmt::format("{}: model 'trace' needs a trace file (file: ...)", what)
                          : fmt::format("{}: a trace ('{}') needs model 'trace' (model is '{}')", what, trace->source,
                                        arrival_model_name(model)));
  }
  if (model == ArrivalModel::Explicit) {
    if (arrival_s.empty()) throw ConfigError(fmt::format("{}.arrival: the explicit list is empty", what));
    for (std::size_t r = 0; r < arrival_s.size(); ++r) {
      if (!(std::isfinite(arrival_s[r]) && arrival_s[r] >= 0.0)) {
        throw ConfigError(fmt::format("{}.arrival[{}] = {} s must be finite and >= 0", what, r, arrival_s[r]));
      }
    }
  }
  if (model == ArrivalModel::Stragglers) {
    if (stragglers.empty()) {
      throw ConfigError(fmt::format("{}.stragglers: model 'stragglers' needs at least one straggler", what));
    }
    std::set<std::uint32_t> seen;
    for (std::size_t j = 0; j < stragglers.size(); ++j) {
      if (!seen.insert(stragglers[j].rank).second) {
        throw ConfigError(fmt::format("{}.stragglers[{}].rank = {} is listed twice", what, j, stragglers[j].rank));
      }
    }
  }
}

void ArrivalSpec::validate(std::uint32_t n, std::string_view what) const {
  validate(what);
  if (n == 0) throw ConfigError(fmt::format("{}: the number of ranks must be at least 1", what));
  if (model == ArrivalModel::Explicit && arrival_s.size() != n) {
    throw ConfigError(fmt::format("{}.arrival has {} entries but there are n = {} ranks", what,
                                  arrival_s.size(), n));
  }
  if (model == ArrivalModel::Trace && trace->n != n) {
    throw ConfigError(fmt::format("{}: the trace '{}' has a group of {} ranks but n = {}", what, trace->source,
                                  trace->n, n));
  }
  for (std::size_t j = 0; j < stragglers.size(); ++j) {
    if (stragglers[j].rank >= n) {
      throw ConfigError(fmt::format("{}.stragglers[{}].rank = {} is out of range for n = {} ranks (0..{})",
                                    what, j, stragglers[j].rank, n, n - 1));
    }
  }
  if (persistence < 1.0 && stragglers.size() >= n) {
    throw ConfigError(fmt::format("{}.persistence = {} < 1 needs fewer stragglers ({}) than ranks (n = {})",
                                  what, persistence, stragglers.size(), n));
  }
}

std::vector<std::uint32_t> ArrivalSpec::expected_stragglers() const {
  std::vector<std::uint32_t> ranks;
  if (model == ArrivalModel::Stragglers) {
    for (const auto& s : stragglers) ranks.push_back(s.rank);
  } else if (model == ArrivalModel::Explicit && !arrival_s.empty()) {
    const auto [lo, hi] = std::minmax_element(arrival_s.begin(), arrival_s.end());
    if (*hi > *lo) ranks.push_back(static_cast<std::uint32_t>(hi - arrival_s.begin()));
  } else if (model == ArrivalModel::Trace && trace && trace->size() > 0) {
    ranks.push_back(trace_profiled_last.value_or(trace->most_often_last()));
  }
  return ranks;
}

void ArrivalSpec::reduce_to_iteration(std::uint64_t label) {
  COLLSIM_ASSERT(model == ArrivalModel::Trace && trace != nullptr, "reduce_to_iteration needs a trace");
  auto one = std::make_shared<const ArrivalTrace>(trace->only(label));
  if (!trace_iteration) {
    trace_index = static_cast<std::uint64_t>(std::find(trace->iterations.begin(), trace->iterations.end(), label) -
                                              trace->iterations.begin());
  }
  if (!trace_profiled_last) trace_profiled_last = trace->most_often_last();  // the whole trace's, not a part's
  trace = std::move(one);
  trace_iteration = label;
}

std::size_t ArrivalSpec::schedule_slot() const {
  if (model != ArrivalModel::Stragglers) return 0;
  // The median, not the mean: a heavy tail (a Pareto with an infinite mean) must not outbid a
  // rank that is later most of the time. Of two ranks, the one with the larger median is the
  // later one more often when the other's delay is a constant.
  std::size_t slot = 0;
  for (std::size_t j = 1; j < stragglers.size(); ++j) {
    if (stragglers[j].delay.quantile(0.5) > stragglers[slot].delay.quantile(0.5)) slot = j;
  }
  return slot;
}

std::optional<std::uint32_t> ArrivalSpec::schedule_straggler(const std::vector<std::uint32_t>& expected) const {
  if (expected.empty()) return std::nullopt;
  const std::size_t slot = schedule_slot();
  COLLSIM_ASSERT(slot < expected.size(), "expected stragglers in another slot order than the spec's");
  return expected[slot];
}

std::string ArrivalSpec::describe() const {
  std::string text;
  switch (model) {
    case ArrivalModel::None:
      text = "none(";
      break;
    case ArrivalModel::Explicit: {
      text = "explicit(";
      for (std::size_t r = 0; r < arrival_s.size(); ++r) {
        text += fmt::format("{}{}", r == 0 ? "" : ", ", format_duration(arrival_s[r]));
      }
      break;
    }
    case ArrivalModel::Stragglers: {
      text = "stragglers(";
      for (std::size_t j = 0; j < stragglers.size(); ++j) {
        text += fmt::format("{}rank {}: {}", j == 0 ? "" : ", ", stragglers[j].rank, stragglers[j].delay.describe());
      }
      break;
    }
    case ArrivalModel::Trace:
      text = trace ? fmt::format("trace({}: {} iteration{} of {} ranks", trace_file.empty() ? trace->source : trace_file,
                                 trace->size(), trace->size() == 1 ? "" : "s", trace->n)
                   : "trace(";
      break;
  }
  if (jitter) text += fmt::format("; jitter {}", jitter->describe());
  if (model == ArrivalModel::Stragglers) {
    text += fmt::format("; persistence {:g} {}", persistence, persistence_mode_name(persistence_mode));
  }
  return text + ")";
}

bool Arrivals::straggler_moved() const {
  if (!arrival_s.empty() && std::all_of(arrival_s.begin(), arrival_s.end(), [&](double a) { return a == arrival_s.front(); })) {
    return false;
  }
  return stragglers != expected_stragglers;
}

double Arrivals::max_arrival_s() const {
  return arrival_s.empty() ? 0.0 : *std::max_element(arrival_s.begin(), arrival_s.end());
}

ArrivalProcess::ArrivalProcess(ArrivalSpec spec, std::uint32_t n, std::uint64_t seed)
    : spec_(std::move(spec)),
      n_(n),
      seed_(seed),
      configured_(spec_.expected_stragglers()),
      chain_rng_(derive_seed(seed, kMarkovStream, 0)) {
  spec_.validate(n);
}

std::vector<std::uint32_t> ArrivalProcess::identities(std::uint64_t iteration,
                                                      std::vector<std::uint32_t>* expected) {
  const std::size_t k = configured_.size();
  if (spec_.model != ArrivalModel::Stragglers || spec_.persistence >= 1.0) {
    if (expected) *expected = configured_;
    return configured_;
  }
  if (spec_.persistence_mode == PersistenceMode::Anchored) {
    Rng rng(derive_seed(seed_, kAnchoredStream, iteration));
    std::vector<std::uint32_t> ranks = configured_;
    step_identities(ranks, n_, spec_.persistence, rng);
    if (expected) *expected = configured_;
    return ranks;
  }
  // Markov: extend the cached chain up to `iteration`. Iteration i steps from i - 1, and
  // iteration 0 from the configured ranks.
  while (chain_.size() / k <= iteration) {
    std::vector<std::uint32_t> ranks =
        chain_.empty() ? configured_ : std::vector<std::uint32_t>(chain_.end() - static_cast<std::ptrdiff_t>(k), chain_.end());
    step_identities(ranks, n_, spec_.persistence, chain_rng_);
    chain_.insert(chain_.end(), ranks.begin(), ranks.end());
  }
  const auto at = [&](std::uint64_t i) {
    const auto begin = chain_.begin() + static_cast<std::ptrdiff_t>(i * k);
    return std::vector<std::uint32_t>(begin, begin + static_cast<std::ptrdiff_t>(k));
  };
  if (expected) *expected = iteration == 0 ? configured_ : at(iteration - 1);
  return at(iteration);
}

std::vector<std::uint32_t> ArrivalProcess::stragglers_at(std::uint64_t iteration) {
  return identities(iteration, nullptr);
}

namespace {

// Every delay lies within kMaxDuration_s (1 hour), as every parsed duration and trace does: a
// heavier tail (pareto shape 0.01, lognormal sigma 20, exponential mean 3000 s) drew delays of
// 1e11 s or more, whose completion times kept no digit of the collective after the arrival.
void check_drawn_delay(double delay_s, const DelayDistribution& from, std::string_view role, std::uint32_t rank,
                       std::uint64_t iteration) {
  if (delay_s <= kMaxDuration_s) return;
  throw ConfigError(fmt::format("{} {} drew {:.6g} s for rank {} in trial {}, more than {} s (1 hour), the longest "
                                "delay collsim takes; its tail is too heavy (a larger shape, or a smaller scale, "
                                "median, mean or sigma)",
                                role, from.describe(), delay_s, rank, iteration, kMaxDuration_s));
}

// Each part is checked as drawn, but a straggler's delay plus its jitter (or an explicit or traced
// arrival plus jitter) can still pass the hour together; the range holds for the sum too.
void check_summed_delays(const std::vector<double>& arrival_s, std::uint64_t iteration) {
  for (std::size_t r = 0; r < arrival_s.size(); ++r) {
    if (arrival_s[r] <= kMaxDuration_s) continue;
    throw ConfigError(
        fmt::format("rank {} in trial {} arrives {:.6g} s after the first rank (its delay, explicit or "
                    "traced arrival plus its jitter), more than {} s (1 hour), the longest delay collsim "
                    "takes",
                    r, iteration, arrival_s[r], kMaxDuration_s));
  }
}

}  // namespace

Arrivals ArrivalProcess::at(std::uint64_t iteration) {
  Arrivals result;
  result.iteration = iteration;
  result.arrival_s = spec_.model == ArrivalModel::Explicit ? spec_.arrival_s : std::vector<double>(n_, 0.0);
  result.stragglers = identities(iteration, &result.expected_stragglers);
  if (spec_.model == ArrivalModel::Trace) {
    const std::size_t replayed = static_cast<std::size_t>(iteration % spec_.trace->size());
    result.arrival_s = spec_.trace->delay_s[replayed];
    result.stragglers = {spec_.trace->last_rank(replayed)};
  }
  if (spec_.model == ArrivalModel::Stragglers) {
    Rng rng(derive_seed(seed_, kDelayStream, iteration));
    for (std::size_t j = 0; j < spec_.stragglers.size(); ++j) {
      const double delay_s = spec_.stragglers[j].delay.sample(rng);
      check_drawn_delay(delay_s, spec_.stragglers[j].delay, "delay", result.stragglers[j], iteration);
      result.arrival_s[result.stragglers[j]] += delay_s;
    }
  }
  if (spec_.jitter) {
    Rng rng(derive_seed(seed_, kJitterStream, iteration + spec_.trace_index));
    for (std::size_t r = 0; r < result.arrival_s.size(); ++r) {
      const double jitter_s = spec_.jitter->sample(rng);
      check_drawn_delay(jitter_s, *spec_.jitter, "jitter", static_cast<std::uint32_t>(r), iteration);
      result.arrival_s[r] += jitter_s;
    }
  }
  const double earliest = *std::min_element(result.arrival_s.begin(), result.arrival_s.end());
  for (double& t : result.arrival_s) t -= earliest;
  check_summed_delays(result.arrival_s, iteration);
  return result;
}

Arrivals make_arrivals(const ArrivalSpec& spec, std::uint32_t n, std::uint64_t iteration, std::uint64_t seed) {
  ArrivalProcess process(spec, n, seed);
  return process.at(iteration);
}

std::vector<double> nudged_arrivals(const std::vector<double>& arrival_s, std::uint64_t seed, double max_s) {
  COLLSIM_ASSERT(max_s >= 0, "nudged_arrivals: negative max_s");
  Rng rng(seed);
  std::vector<double> out(arrival_s);
  for (double& a : out) a += max_s * uniform01(rng);
  if (!out.empty()) {
    const double first = *std::min_element(out.begin(), out.end());
    for (double& a : out) a -= first;
  }
  return out;
}

}  // namespace collsim
