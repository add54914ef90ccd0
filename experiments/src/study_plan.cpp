#include "collsim/experiments/study_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

StudyPlan plan_study(const SweepGrid& grid, const EngineFactory& factory) {
  const ExperimentSpec& spec = grid.spec();
  StudyPlan plan;
  plan.points = grid.num_points();
  plan.work_units = make_units(grid).size();
  // Topologies are keyed as the runner caches them: a model file with size regimes gives each
  // size its own links.
  std::map<std::tuple<std::size_t, Rank, double, double, double>, Topology> topologies;
  std::set<std::pair<std::size_t, Rank>> arrivals_checked;
  // (algorithm, n, topology, size): hierarchical rows need the node size, pipelined ones size
  // their depth from the buffer and the link (size 0 for the rows that do not).
  std::map<std::tuple<std::size_t, std::size_t, Rank, double, double, double, double>, ScheduleEstimate> estimates;
  std::map<std::string, std::unique_ptr<Engine>> engines;
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    if (grid.skipped(i)) continue;
    const Point p = grid.point(i);
    const Rank n = spec.n[p.n];
    const double size = spec.sizes_bytes[p.size];
    ++plan.active_points;
    plan.runs += spec.trials;
    const LinkModel link = link_at(spec, size);
    const auto key = std::tuple{p.topology, n, link.latency_s, link.bandwidth_Bps, link.gamma_s_per_byte};
    auto topology = topologies.find(key);
    if (topology == topologies.end()) {
      try {
        topology = topologies.emplace(key, topology_at(spec, p.topology, n, size)).first;
      } catch (const ConfigError& e) {
        throw ConfigError(fmt::format("{}topology '{}' with n = {}, size {} bytes: {}", spec.where("topology"),
                                      quote_excerpt(spec.topologies[p.topology].label, 200), n, size, e.what()));
      }
    }
    if (arrivals_checked.emplace(p.arrival, n).second) arrival_for(spec.arrivals[p.arrival], n).validate(n, "arrival");
    const std::string& engine = spec.engine_at(p.engine, p.topology);
    const std::string& algorithm = spec.algorithms[p.algorithm];
    const bool sized = find_algorithm(algorithm).depth_for != nullptr;
    const auto estimate_key = std::tuple_cat(std::tuple{p.algorithm}, key, std::tuple{sized ? size : 0.0});
    auto known = estimates.find(estimate_key);
    if (known == estimates.end()) {
      AlgorithmOptions options;
      options.n = n;
      options.pipeline_chunks = spec.pipeline_chunks;
      options.late_ranks = spec.late_ranks;
      options.gpus_per_node = gpus_per_node_of(topology->second);
      set_sizing(options, topology->second, size);
      known = estimates.emplace(estimate_key, estimate_schedule(algorithm, options).value_or(ScheduleEstimate{})).first;
    }
    plan.cpu_s += static_cast<double>(spec.trials) *
                  (kCpuPerRun_s + known->second.transfers * cpu_s_per_transfer(engine));
    auto made = engines.find(engine);
    if (made == engines.end()) {
      auto e = factory ? factory(engine) : make_engine(engine);
      if (!e) throw ConfigError(fmt::format("{}engine '{}' is not available", spec.where("engine"), engine));
      made = engines.emplace(engine, std::move(e)).first;
      plan.engines.push_back(engine);
    }
    plan.max_schedule_bytes = std::max(plan.max_schedule_bytes, schedule_bytes(known->second.transfers));
    if (const double bytes = run_bytes(known->second, *made->second, topology->second); bytes > plan.max_run_bytes) {
      plan.max_run_bytes = bytes;
      plan.largest_run = fmt::format("{} at n = {} on {} ({})", spec.algorithms[p.algorithm], n,
                                     spec.topologies[p.topology].label, engine);
    }
  }
  plan.topologies = topologies.size();
  plan.journal_bytes = journal_bytes(static_cast<double>(plan.work_units), static_cast<double>(plan.runs));
  return plan;
}

RunMemoryLimit run_memory_limit(const std::optional<std::string>& option) {
  RunMemoryLimit limit;
  if (option) {
    limit.bytes = memory_cap_bytes(*option, "--max-run-memory", physical_memory_bytes());
    limit.name = fmt::format("--max-run-memory {}", *option);
    limit.from_option = true;
  } else {
    limit.bytes = physical_memory_bytes();
    limit.name = fmt::format("this machine's {} of memory", rough_size(limit.bytes));
  }
  return limit;
}

std::string run_memory_refusal(const StudyPlan& plan, const RunMemoryLimit& limit, std::string_view command,
                               std::string_view remedy) {
  if (limit.bytes <= 0 || plan.max_run_bytes <= limit.bytes) return {};
  return fmt::format("{}: the largest run, {}, needs about {} (estimated: its schedule, and the engine's index of it "
                     "where the engine builds one), above {}; {}",
                     command, plan.largest_run, rough_size(plan.max_run_bytes), limit.name, remedy);
}

}  // namespace collsim
