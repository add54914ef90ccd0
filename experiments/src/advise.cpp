#include "collsim/experiments/advise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/study_plan.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/json.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/nccl_choice.hpp"

namespace collsim {
namespace {

bool is_studied(std::string_view algorithm) { return find_algorithm(algorithm).role == AlgorithmRole::Studied; }

void require_single(std::size_t count, std::string_view key) {
  if (count != 1) {
    throw ConfigError(fmt::format("advise: needs exactly one value of '{}', got {} (use collsim run for sweeps)", key, count));
  }
}

// Completion time of one algorithm with one straggler (rank n-1) late by d, with the engine,
// schedule and topology built once.
class DelayProbe {
 public:
  DelayProbe(const ExperimentSpec& spec, const std::string& algorithm, Engine& engine) : engine_(engine) {
    const Rank n = spec.n.front();
    AlgorithmOptions options;
    options.n = n;
    options.straggler = n - 1;
    options.pipeline_chunks = spec.pipeline_chunks;
    options.late_ranks = spec.late_ranks;
    config_.size_bytes = spec.sizes_bytes.front();
    config_.topology = topology_at(spec, 0, n, config_.size_bytes);
    options.gpus_per_node = gpus_per_node_of(config_.topology);
    options.nodes_per_leaf = nodes_per_leaf_of(config_.topology);
    set_sizing(options, config_.topology, config_.size_bytes);
    config_.start = spec.starts.front();
    config_.execution = execution_at(spec, config_.size_bytes);
    config_.arrival_s.assign(n, 0.0);
    std::string chosen = algorithm;
    if (find_algorithm(algorithm).chosen_per_run) {  // `nccl`: as the runner runs it
      const NcclChoice choice =
          choose_nccl(n, config_.size_bytes, config_.topology, spec.link_model.get(), config_.execution);
      chosen = choice.algorithm;
      config_.topology = choice.topology;
      config_.execution = choice.execution;
    }
    schedule_ = generate_schedule(chosen, options);
  }
  double time_s(double delay_s) {
    config_.arrival_s.back() = delay_s;
    return engine_.run(schedule_, config_).time_s;
  }

 private:
  Engine& engine_;
  Schedule schedule_;
  RunConfig config_;
};

// Competition ranks ("1, 1, 3") of values sorted ascending by `order`, ties sharing a rank.
template <class Value>
void assign_tied_ranks(const std::vector<std::size_t>& order, Value value, std::vector<std::size_t>& rank) {
  for (std::size_t r = 0; r < order.size(); ++r) {
    const bool tied = r > 0 && advise_ties(value(order[r]), value(order[r - 1]));
    rank[order[r]] = tied ? rank[order[r - 1]] : r + 1;
  }
}

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (std::size_t i = 0; i < names.size(); ++i) {
    text += i == 0 ? "" : (i + 1 == names.size() ? " or " : ", ");
    text += names[i];
  }
  return text;
}

}  // namespace

bool advise_ties(double a_s, double b_s) {
  return std::fabs(a_s - b_s) <= kAdviseTieRelative * std::max(std::fabs(a_s), std::fabs(b_s));
}

AdviseResult advise(AdviseRequest request, const EngineFactory& engines) {
  ExperimentSpec& spec = request.spec;
  if (spec.name.empty()) spec.name = "advise";
  require_single(spec.n.size(), "n");
  require_single(spec.sizes_bytes.size(), "size");
  require_single(spec.topologies.size(), "topology");
  require_single(spec.engines.size(), "engine");
  require_single(spec.starts.size(), "start");
  require_single(spec.arrivals.size(), "arrival");
  if (spec.algorithms.empty()) {
    // Every algorithm that supports n here; hierarchical ones on a cluster topology.
    const NConstraintContext context = node_context_at(spec, 0, spec.n.front());
    for (const auto& info : all_algorithms()) {
      if (info.unsupported_reason(spec.n.front(), context).empty()) spec.algorithms.emplace_back(info.name);
    }
  }
  validate(spec);

  AdviseResult result;
  result.spec = spec;
  const SweepGrid grid(spec);
  // As run refuses a study: a mistyped -n (advise takes up to 2^20) grew for minutes and ended in
  // "out of memory", naming nothing, or in the kernel's OOM killer.
  const StudyPlan plan = plan_study(grid, engines);
  const std::string refusal =
      run_memory_refusal(plan, request.memory_limit, "advise", "lower -n or leave that algorithm out of --algorithms");
  if (!refusal.empty()) throw ConfigError(refusal);
  RunnerOptions options;
  options.engine_factory = engines;
  if (plan.cpu_s >= request.progress_min_cpu_s) options.progress = request.progress;
  const StudyResult study = run_study(grid, options);

  const std::size_t ring = grid.baseline(0);
  std::vector<double> ring_times;
  for (const auto& t : study.points[ring].trials) ring_times.push_back(t.time_s);
  const double ring_mean = summarize(ring_times).mean;
  // Per algorithm: the share of trials whose last rank was not the one its schedule was built for.
  std::map<std::string, double> moved_share;
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const PointResult& p = study.points[i];
    if (!p.active) continue;
    std::vector<double> times, delays;
    std::size_t moved = 0;
    for (const auto& t : p.trials) {
      times.push_back(t.time_s);
      delays.push_back(t.delay_s);
      moved += t.straggler_moved ? 1 : 0;
    }
    moved_share[spec.algorithms[grid.point(i).algorithm]] =
        p.trials.empty() ? 0.0 : static_cast<double>(moved) / static_cast<double>(p.trials.size());
    AdviseEntry e;
    e.algorithm = spec.algorithms[grid.point(i).algorithm];
    e.time = summarize(times);
    e.speedup_vs_ring = ring_mean / e.time.mean;
    result.ranking.push_back(e);
    result.mean_delay_s = summarize(delays).mean;
  }
  std::stable_sort(result.ranking.begin(), result.ranking.end(),
                   [](const AdviseEntry& a, const AdviseEntry& b) { return a.time.mean < b.time.mean; });
  std::vector<std::size_t> by_p99(result.ranking.size());
  for (std::size_t i = 0; i < by_p99.size(); ++i) by_p99[i] = i;
  std::stable_sort(by_p99.begin(), by_p99.end(), [&](std::size_t a, std::size_t b) {
    return result.ranking[a].time.p99 < result.ranking[b].time.p99;
  });
  std::vector<std::size_t> ranks(by_p99.size());
  assign_tied_ranks(by_p99, [&](std::size_t i) { return result.ranking[i].time.p99; }, ranks);
  for (std::size_t i = 0; i < ranks.size(); ++i) result.ranking[i].rank_by_p99 = ranks[i];
  std::vector<std::size_t> by_mean(result.ranking.size());
  for (std::size_t i = 0; i < by_mean.size(); ++i) by_mean[i] = i;
  assign_tied_ranks(by_mean, [&](std::size_t i) { return result.ranking[i].time.mean; }, ranks);
  for (std::size_t i = 0; i < ranks.size(); ++i) result.ranking[i].rank_by_mean = ranks[i];
  result.best = result.ranking.front().algorithm;
  for (const auto& e : result.ranking) {
    if (e.rank_by_mean == 1) result.tied_best.push_back(e.algorithm);
  }
  result.best_by_p99 = result.ranking[by_p99.front()].algorithm;
  for (const auto& e : result.ranking) {
    if (!is_studied(e.algorithm)) {
      result.best_baseline = e.algorithm;
      break;
    }
  }
  // The studied algorithm the critical delay is about: the fastest one when the spec lists
  // several (StragglAR, and stragglar_cluster on clusters).
  for (const auto& e : result.ranking) {
    if (is_studied(e.algorithm)) {
      result.studied = e.algorithm;
      break;
    }
  }

  if (!result.studied.empty() && !result.best_baseline.empty()) {
    result.studied_compared = true;
    const std::string& engine_name = spec.engine_at(0, 0);
    auto engine = engines ? engines(engine_name) : make_engine(engine_name);
    DelayProbe studied(spec, result.studied, *engine);
    DelayProbe baseline(spec, result.best_baseline, *engine);
    // Beating means faster by more than a tie: an exact tie at every delay has no critical delay.
    const auto beats = [&](double d) {
      const double s = studied.time_s(d), b = baseline.time_s(d);
      return s < b && !advise_ties(s, b);
    };
    // StragglAR's advantage grows with the delay until phase 1 is hidden, then stays constant,
    // so searching up to a few collective times finds the crossing if there is one.
    const double scale = std::max(baseline.time_s(0.0), 1e-9);
    result.critical_search_limit_s = 64 * scale;
    if (beats(0.0)) {
      result.critical_delay_s = 0.0;
    } else {
      double lo = 0, hi = scale / 64;
      while (hi <= result.critical_search_limit_s && !beats(hi)) {
        lo = hi;
        hi *= 2;
      }
      if (hi <= result.critical_search_limit_s) {
        for (int i = 0; i < 200 && hi - lo > 1e-12 + 1e-9 * hi; ++i) {
          const double mid = 0.5 * (lo + hi);
          (beats(mid) ? hi : lo) = mid;
        }
        result.critical_delay_s = hi;
      }
    }
  }

  const AdviseEntry& best = result.ranking.front();
  const auto find_entry = [&](const std::string& name) -> const AdviseEntry* {
    for (const auto& e : result.ranking) {
      if (e.algorithm == name) return &e;
    }
    return nullptr;
  };
  if (result.tied_best.size() > 1) {
    result.recommendation = fmt::format(
        "Use any of {}: they tie at {} on average ({:.2f}x vs ring); none is faster than the others here",
        join_names(result.tied_best), format_duration(best.time.mean), best.speedup_vs_ring);
    const bool p99_elsewhere = std::find(result.tied_best.begin(), result.tied_best.end(), result.best_by_p99) ==
                               result.tied_best.end();
    result.recommendation += p99_elsewhere ? fmt::format("; {} has the lowest p99.", result.best_by_p99) : ".";
  } else if (is_studied(best.algorithm) && !result.best_baseline.empty()) {
    const AdviseEntry& runner_up = *find_entry(result.best_baseline);
    const double gain = runner_up.time.mean / best.time.mean;
    result.recommendation = fmt::format(
        "Use {}: it finishes in {} on average, {:.2f}x faster than the best baseline {} (p99 {} vs {}){}.",
        best.algorithm, format_duration(best.time.mean), gain, runner_up.algorithm,
        format_duration(best.time.p99), format_duration(runner_up.time.p99),
        result.critical_delay_s ? fmt::format(", and it wins whenever the straggler is more than {} late",
                                              format_duration(*result.critical_delay_s))
                                : std::string());
    // "1.00x faster" was a recommendation all the same (StragglAR against NVLS on a DGX H100:
    // 0.1 %), where the model's own error on real machines is several percent.
    if (gain < 1 + kSmallMargin) {
      result.recommendation += fmt::format(
          " The margin, {:.2f} %, is smaller than the model's error on real machines (a few %): {} is as good a "
          "choice.", 100.0 * (gain - 1), runner_up.algorithm);
    }
  } else {
    std::string why;
    const double moved = result.studied.empty() ? 0.0 : moved_share[result.studied];
    if (result.studied_compared && result.critical_delay_s && result.mean_delay_s > *result.critical_delay_s &&
        moved > 0) {
      // The critical delay is probed with the expected rank late: it cannot explain a loss to a
      // late GPU the schedule was not built for (an iteration of a trace whose last rank is not
      // the trace's usual one).
      why = fmt::format("{} wins above {} of delay when the late GPU is the one its schedule is built for, but here "
                        "another GPU was last in {:.0f}% of the trials",
                        result.studied, format_duration(*result.critical_delay_s), 100.0 * moved);
    } else if (result.studied_compared && result.critical_delay_s) {
      why = fmt::format("{} needs a straggler delay above {} to win and the mean delay here is {}", result.studied,
                        format_duration(*result.critical_delay_s), format_duration(result.mean_delay_s));
    } else if (result.studied_compared) {
      why = fmt::format("{} does not beat it at any delay up to {} at this size and topology", result.studied,
                        format_duration(result.critical_search_limit_s));
    } else {
      why = "it has the lowest mean completion time";
    }
    result.recommendation = fmt::format("Use {}: {} ({} on average, {:.2f}x vs ring){}.", best.algorithm, why,
                                        format_duration(best.time.mean), best.speedup_vs_ring,
                                        result.best_by_p99 != best.algorithm
                                            ? fmt::format("; {} has the lowest p99", result.best_by_p99)
                                            : std::string());
  }
  return result;
}

std::string advise_text(const AdviseResult& r) {
  const ExperimentSpec& spec = r.spec;
  std::string out = fmt::format("advise: n={}, {} per rank, topology {}, engine {}, start {}\n", spec.n.front(),
                                format_size(spec.sizes_bytes.front()), spec.topologies.front().label, spec.engines.front(),
                                start_mode_name(spec.starts.front()));
  out += fmt::format("arrival: {}; {} trial{}, seed {}, mean straggler delay {}\n\n", spec.arrivals.front().label,
                     spec.trials, spec.trials == 1 ? "" : "s", spec.seed, format_duration(r.mean_delay_s));
  // The name column fits the longest name (recursive_halving_doubling_fold is 31 characters).
  std::size_t name_width = 28;
  for (const AdviseEntry& e : r.ranking) name_width = std::max(name_width, e.algorithm.size() + 1);
  out += fmt::format("{:>4}  {:<{}} {:>12} {:>12} {:>12} {:>8} {:>8}\n", "rank", "algorithm", name_width, "mean", "p50",
                     "p99", "vs ring", "p99 rank");
  for (std::size_t i = 0; i < r.ranking.size(); ++i) {
    const AdviseEntry& e = r.ranking[i];
    out += fmt::format("{:>4}  {:<{}} {:>12} {:>12} {:>12} {:>7.3f}x {:>8}\n", e.rank_by_mean, e.algorithm, name_width,
                       format_duration(e.time.mean), format_duration(e.time.p50), format_duration(e.time.p99),
                       e.speedup_vs_ring, e.rank_by_p99);
  }
  out += "\n";
  if (r.studied_compared) {
    if (r.critical_delay_s) {
      out += fmt::format("critical delay: {} beats {} when one straggler is more than {} late\n", r.studied,
                         r.best_baseline, format_duration(*r.critical_delay_s));
    } else {
      out += fmt::format("critical delay: none; {} does not beat {} at any delay up to {}\n", r.studied, r.best_baseline,
                         format_duration(r.critical_search_limit_s));
    }
  }
  out += r.recommendation + "\n";
  return out;
}

std::string advise_json(const AdviseResult& r) {
  const ExperimentSpec& spec = r.spec;
  std::string tied_json;
  for (const auto& name : r.tied_best) {
    // Two appends: `const char* + std::string` here trips a false GCC 12 -Wrestrict warning.
    if (!tied_json.empty()) tied_json += ',';
    tied_json += json_string(name);
  }
  std::string ranking;
  for (const auto& e : r.ranking) {
    ranking += fmt::format(
        "{}{{\"algorithm\":{},\"mean_time_s\":{},\"p50_time_s\":{},\"p99_time_s\":{},\"speedup_vs_ring\":{},"
        "\"rank_by_mean\":{},\"rank_by_p99\":{}}}",
        ranking.empty() ? "" : ",", json_string(e.algorithm), json_number(e.time.mean), json_number(e.time.p50),
        json_number(e.time.p99), json_number(e.speedup_vs_ring), e.rank_by_mean, e.rank_by_p99);
  }
  return fmt::format(
      "{{\"topology\":{},\"n\":{},\"size_bytes\":{},\"engine\":{},\"start\":\"{}\",\"arrival\":{},\"trials\":{},"
      "\"seed\":{},\"mean_delay_s\":{},\"ranking\":[{}],\"best\":{},\"tied_best\":[{}],\"best_by_p99\":{},\"best_baseline\":{},"
      "\"studied\":{},\"critical_delay_s\":{},\"critical_search_limit_s\":{},\"recommendation\":{}}}\n",
      json_string(spec.topologies.front().label), spec.n.front(), json_number(spec.sizes_bytes.front()),
      json_string(spec.engines.front()), start_mode_name(spec.starts.front()), json_string(spec.arrivals.front().label),
      spec.trials, spec.seed, json_number(r.mean_delay_s), ranking, json_string(r.best), tied_json, json_string(r.best_by_p99),
      r.best_baseline.empty() ? "null" : json_string(r.best_baseline), r.studied.empty() ? "null" : json_string(r.studied),
      r.critical_delay_s ? json_number(*r.critical_delay_s) : "null", json_number(r.critical_search_limit_s),
      json_string(r.recommendation));
}

}  // namespace collsim
