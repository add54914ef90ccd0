#include "collsim/experiments/runner.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/checkpoint.hpp"
#include "collsim/models/arrival.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/nccl_choice.hpp"

namespace collsim {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

// Schedules by (algorithm, n, straggler rank), least recently used evicted past a byte budget.
// A schedule is generated once per process and reused by every trial, size, topology, engine
// and start mode: generation costs far more than a replay at large n.
class ScheduleCache {
 public:
  ScheduleCache(const ExperimentSpec& spec, std::size_t budget_bytes) : spec_(spec), budget_(budget_bytes) {}

  // `sizing` (what set_sizing() fills: buffer size and network numbers) only for rows whose depth
  // depends on them, so the other rows keep one entry for every size and topology. All of it is
  // passed on and keyed, or a study sizes a pipeline unlike `simulate` (NVLink, shared NICs).
  const Schedule& get(const std::string& algorithm, Rank n, Rank straggler, std::uint32_t gpus_per_node,
                      std::uint32_t nodes_per_leaf, const AlgorithmOptions& sizing, double& generate_s) {
    const Key key{algorithm,
                  n,
                  straggler,
                  gpus_per_node,
                  nodes_per_leaf,
                  sizing.size_bytes,
                  sizing.network_latency_s,
                  sizing.network_bandwidth_Bps,
                  sizing.switch_efficiency,
                  sizing.nvlink_bandwidth_Bps,
                  sizing.gpus_per_nic};
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->key == key) {
        entries_.splice(entries_.begin(), entries_, it);
        return *entries_.front().schedule;
      }
    }
    const auto start = Clock::now();
    AlgorithmOptions options = sizing;
    options.n = n;
    options.straggler = straggler;
    options.pipeline_chunks = spec_.pipeline_chunks;
    options.late_ranks = spec_.late_ranks;
    options.gpus_per_node = gpus_per_node;
    options.nodes_per_leaf = nodes_per_leaf;
    auto schedule = std::make_unique<Schedule>(generate_schedule(algorithm, options));
    generate_s += seconds_since(start);
    const std::size_t bytes = schedule->memory_bytes();
    entries_.push_front(Entry{key, std::move(schedule), bytes});
    used_ += bytes;
    // Keep the newest entry even when it alone exceeds the budget.
    while (used_ > budget_ && entries_.size() > 1) {
      used_ -= entries_.back().bytes;
      entries_.pop_back();
    }
    return *entries_.front().schedule;
  }

 private:
  struct Key {
    std::string algorithm;  // a row of the spec, or the row an `nccl` point chose
    Rank n;
    Rank straggler;
    std::uint32_t gpus_per_node;
    std::uint32_t nodes_per_leaf;
    double size_bytes, network_latency_s, network_bandwidth_Bps, switch_efficiency, nvlink_bandwidth_Bps;
    std::uint32_t gpus_per_nic;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    std::unique_ptr<const Schedule> schedule;
    std::size_t bytes;
  };
  const ExperimentSpec& spec_;
  std::size_t budget_;
  std::size_t used_ = 0;
  std::list<Entry> entries_;
};

// Runs work units in this process; owns the per-process caches.
class Executor {
 public:
  Executor(const SweepGrid& grid, const RunnerOptions& options)
      : grid_(grid), spec_(grid.spec()), schedules_(grid.spec(), options.schedule_cache_bytes) {
    // Create every engine now, so an engine missing from this build fails before any work.
    for (std::size_t t = 0; t < spec_.topologies.size(); ++t) {
      for (std::size_t e = 0; e < spec_.engines.size(); ++e) {
        const std::string& name = spec_.engine_at(e, t);
        if (engines_.find(name) != engines_.end()) continue;
        auto engine = options.engine_factory ? options.engine_factory(name) : make_engine(name);
        if (!engine) throw ConfigError(fmt::format("engine '{}' is not available", name));
        engines_.emplace(name, std::move(engine));
      }
    }
  }

  /// `reference_elsewhere`: another point of the study is this point's no-delay reference
  /// (no_delay_references), so the reference is not simulated here unless already cached.
  UnitResult run(const WorkUnit& unit, bool reference_elsewhere) {
    const Point p = grid_.point(unit.point);
    const Rank n = spec_.n[p.n];
    const AlgorithmInfo& info = find_algorithm(spec_.algorithms[p.algorithm]);
    UnitResult out;
    out.unit = unit.id;
    out.point = unit.point;
    out.trial_begin = unit.trial_begin;
    out.trial_end = unit.trial_end;
    out.time_no_delay_s = std::numeric_limits<double>::quiet_NaN();
    const auto start = Clock::now();

    RunConfig config;
    config.size_bytes = spec_.sizes_bytes[p.size];
    config.topology = topology(p);
    config.start = spec_.starts[p.start];
    config.agreement_s = spec_.agreement_s;
    config.reshare_interval_s = spec_.reshare_interval_s;
    config.execution = execution_at(spec_, config.size_bytes);
    // `nccl` runs the candidate and protocol NCCL's tuner would pick for this point, fused.
    std::string algorithm = spec_.algorithms[p.algorithm];
    if (info.chosen_per_run) {
      const NcclChoice& choice = nccl_choice(unit.point, n, config);
      algorithm = choice.algorithm;
      config.topology = choice.topology;
      config.execution = choice.execution;
    }
    // The row that runs: the spec's, or the one `nccl` chose (hierarchical on a cluster).
    const AlgorithmInfo& ran = find_algorithm(algorithm);
    Engine& engine = *engines_.at(spec_.engine_at(p.engine, p.topology));
    ArrivalProcess process(arrival_for(spec_.arrivals[p.arrival], n), n, arrival_seed(spec_.seed, p.arrival, n));
    // Straggler-oblivious schedules do not depend on the straggler: one cache entry for all.
    const auto straggler_of = [&](const std::vector<std::uint32_t>& expected) -> Rank {
      return ran.schedule_depends_on_straggler() ? process.spec().schedule_straggler(expected).value_or(n - 1) : n - 1;
    };
    // The cache key's parts that do not change from trial to trial, worked out once per unit:
    // hierarchical schedules depend on the node size (flat ones share one entry), and rows whose
    // depth follows the buffer (depth_for) on the size and network.
    const std::uint32_t gpus = ran.hierarchical ? gpus_per_node_of(config.topology) : 0;
    const std::uint32_t leaf_nodes = ran.hierarchical ? nodes_per_leaf_of(config.topology) : 0;
    AlgorithmOptions sizing;
    if (ran.depth_for != nullptr && spec_.pipeline_chunks == 0) {
      set_sizing(sizing, config.topology, config.size_bytes);
    }
    // A hierarchical row moves a late GPU's role by whole NIC groups (generate_schedule).
    if (ran.hierarchical) sizing.gpus_per_nic = gpus_per_nic_of(config.topology);
    const auto schedule_for = [&](const std::vector<std::uint32_t>& expected) -> const Schedule& {
      return schedules_.get(algorithm, n, straggler_of(expected), gpus, leaf_nodes, sizing, out.generate_s);
    };
    const auto no_delay_key = [&](Rank straggler) {
      return std::make_tuple(p.algorithm, p.n, p.size, p.topology, p.engine, p.start, straggler);
    };

    bool any_delay = false;
    out.trials.reserve(unit.trial_end - unit.trial_begin);
    for (std::uint32_t t = unit.trial_begin; t < unit.trial_end; ++t) {
      Arrivals arrivals = process.at(t);
      const Rank schedule_straggler = straggler_of(arrivals.expected_stragglers);
      const Schedule& schedule = schedule_for(arrivals.expected_stragglers);
      TrialResult trial;
      trial.straggler_moved = arrivals.straggler_moved();
      const auto latest = std::max_element(arrivals.arrival_s.begin(), arrivals.arrival_s.end());
      const auto earliest = std::min_element(arrivals.arrival_s.begin(), arrivals.arrival_s.end());
      trial.straggler = static_cast<std::uint32_t>(latest - arrivals.arrival_s.begin());
      trial.delay_s = *latest - *earliest;
      any_delay = any_delay || trial.delay_s > 0;
      config.arrival_s = std::move(arrivals.arrival_s);
      const RunResult r = engine.run(schedule, config);
      trial.time_s = r.time_s;
      trial.time_after_last_arrival_s = r.time_after_last_arrival_s;
      trial.transfers = r.transfers;
      out.trials.push_back(trial);
      // A trial where everyone arrives at 0 is the no-delay run of a later delayed point (a
      // delay sweep starting at 0): remember it rather than simulate it again, which matters
      // when one run takes minutes (SimGrid at thousands of GPUs).
      if (std::all_of(config.arrival_s.begin(), config.arrival_s.end(), [](double a) { return a == 0.0; })) {
        no_delay_s_.emplace(no_delay_key(schedule_straggler), r.time_s);
      }
    }
    if (any_delay) {
      // The no-delay time is shared by every arrival model of the same configuration: a delay
      // sweep pays for it once per process, not once per delay.
      const std::vector<std::uint32_t> expected = process.spec().expected_stragglers();
      const auto key = no_delay_key(straggler_of(expected));
      if (auto it = no_delay_s_.find(key); it != no_delay_s_.end()) {
        out.time_no_delay_s = it->second;
      } else if (!reference_elsewhere) {
        const Schedule& schedule = schedule_for(expected);
        config.arrival_s.assign(n, 0.0);
        out.time_no_delay_s = engine.run(schedule, config).time_s;
        no_delay_s_.emplace(key, out.time_no_delay_s);
      }
    }
    out.wall_s = seconds_since(start) - out.generate_s;
    out.peak_rss_bytes = peak_rss_bytes();
    return out;
  }

 private:
  const Topology& topology(const Point& p) {
    const Rank n = spec_.n[p.n];
    const LinkModel link = link_at(spec_, spec_.sizes_bytes[p.size]);
    const auto key = std::make_tuple(p.topology, n, link.latency_s, link.bandwidth_Bps, link.gamma_s_per_byte);
    if (auto it = topologies_.find(key); it != topologies_.end()) return it->second;
    if (topologies_.size() > 64) topologies_.clear();
    return topologies_.emplace(key, topology_at(spec_, p.topology, n, spec_.sizes_bytes[p.size])).first->second;
  }

  const SweepGrid& grid_;
  const ExperimentSpec& spec_;
  ScheduleCache schedules_;
  std::map<std::size_t, NcclChoice> nccl_choices_;  // by point: the choice ignores trials and arrivals

  const NcclChoice& nccl_choice(std::size_t point, Rank n, const RunConfig& config) {
    if (auto it = nccl_choices_.find(point); it != nccl_choices_.end()) return it->second;
    return nccl_choices_
        .emplace(point, choose_nccl(n, config.size_bytes, config.topology, spec_.link_model.get(), config.execution))
        .first->second;
  }
  std::map<std::string, std::unique_ptr<Engine>, std::less<>> engines_;  ///< by resolved name
  std::map<std::tuple<std::size_t, Rank, double, double, double>, Topology> topologies_;
  std::map<std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, Rank>, double>
      no_delay_s_;
};

std::string encode_error(int rank, std::string_view what) { return fmt::format("E {}: {}", rank, what); }

}  // namespace

std::filesystem::path checkpoint_path(const std::filesystem::path& dir) { return dir / "checkpoint.journal"; }

StudyResult run_study(const SweepGrid& grid, const RunnerOptions& options) {
  const auto start = Clock::now();
  std::unique_ptr<WorkSplit> local;
  WorkSplit* split = options.split;
  if (split == nullptr) {
    local = make_single_process_split();
    split = local.get();
  }
  const bool root = split->rank() == 0;
  const std::vector<WorkUnit> units = make_units(grid);
  const std::vector<std::size_t> references = no_delay_references(grid);

  StudyResult result;
  result.units_total = units.size();
  result.processes = split->size();
  std::vector<std::optional<UnitResult>> done(units.size());
  std::unique_ptr<Checkpoint> checkpoint;
  // finished[i] == '1' when unit i is in the checkpoint; the root decides, everyone follows.
  std::string finished(units.size(), '0');
  if (root && !options.checkpoint_dir.empty()) {
    checkpoint = std::make_unique<Checkpoint>(checkpoint_path(options.checkpoint_dir), study_fingerprint(grid.spec()));
    for (UnitResult& u : checkpoint->load()) {
      if (u.unit >= units.size() || units[u.unit].point != u.point || units[u.unit].trial_begin != u.trial_begin ||
          units[u.unit].trial_end != u.trial_end || finished[u.unit] == '1') {
        continue;  // not this plan's unit, or one already read (a run appends each unit once)
      }
      finished[u.unit] = '1';
      done[u.unit] = std::move(u);
    }
    result.checkpoint_discarded = checkpoint->discarded();
  }
  split->broadcast(finished);

  std::vector<std::size_t> remaining;
  double total_work = 0, done_work = 0;
  std::size_t total_trials = 0, done_trials = 0;
  for (const auto& u : units) {
    total_work += u.work;
    total_trials += u.trial_end - u.trial_begin;
    if (finished[u.id] == '1') {
      done_work += u.work;
      done_trials += u.trial_end - u.trial_begin;
      ++result.units_resumed;
    } else {
      remaining.push_back(u.id);
    }
  }
  if (root && options.progress) options.progress->start(total_work, done_work, total_trials, done_trials);

  std::size_t expected_remote = 0;
  const auto accept = [&](UnitResult&& u) {
    COLLSIM_ASSERT(u.unit < units.size() && !done[u.unit], "each unit is reported once");
    // Saved before the sink hears of it: a sink that throws (a test stopping the run) leaves
    // every unit it was told about in the checkpoint, as a crash right after it would.
    if (checkpoint) checkpoint->append(u);
    if (options.progress) options.progress->advance(units[u.unit].work, u.trials.size());
    done[u.unit] = std::move(u);
  };
  const auto handle_message = [&](const std::string& message) {
    if (message.starts_with("E ")) throw Error(fmt::format("rank {}", std::string_view(message).substr(2)));
    accept(decode_unit(message));
    --expected_remote;
  };

  Executor executor(grid, options);
  try {
    for (std::size_t k = 0; k < remaining.size(); ++k) {
      if (static_cast<int>(k % static_cast<std::size_t>(split->size())) != split->rank()) {
        if (root) ++expected_remote;
        continue;
      }
      const WorkUnit& unit = units[remaining[k]];
      UnitResult u = executor.run(unit, references[unit.point] != kNoReference);
      if (root) {
        accept(std::move(u));
        while (auto message = split->receive(false)) handle_message(*message);
      } else {
        split->send_to_root(encode_unit(u));
      }
    }
  } catch (const std::exception& e) {
    if (!root) {
      split->send_to_root(encode_error(split->rank(), e.what()));
      split->finish_sends();
    }
    throw;
  }
  if (!root) {
    split->finish_sends();
    result.wall_s = seconds_since(start);
    return result;
  }
  while (expected_remote > 0) handle_message(*split->receive(true));
  if (options.progress) options.progress->finish();

  result.complete = true;
  result.points.resize(grid.num_points());
  for (auto& p : result.points) {
    p.time_no_delay_s = std::numeric_limits<double>::quiet_NaN();
    p.resumed = true;
  }
  for (std::size_t i = 0; i < units.size(); ++i) {
    COLLSIM_ASSERT(done[i].has_value(), "every unit has a result");
    UnitResult& u = *done[i];
    PointResult& p = result.points[u.point];
    p.active = true;
    p.trials.insert(p.trials.end(), u.trials.begin(), u.trials.end());
    if (std::isnan(p.time_no_delay_s)) p.time_no_delay_s = u.time_no_delay_s;
    p.wall_s += u.wall_s;
    p.generate_s += u.generate_s;
    p.peak_rss_bytes = std::max(p.peak_rss_bytes, u.peak_rss_bytes);
    for (const auto& t : u.trials) p.transfers += t.transfers;
    p.resumed = p.resumed && u.resumed;
  }
  // A delayed point whose no-delay reference is another point's run (it may have run in
  // another process) takes it from that point's first trial: the same engine, schedule and
  // config, so the same number a local run would give.
  for (std::size_t i = 0; i < result.points.size(); ++i) {
    PointResult& p = result.points[i];
    if (!p.active || !std::isnan(p.time_no_delay_s) || references[i] == kNoReference) continue;
    const PointResult& reference = result.points[references[i]];
    COLLSIM_ASSERT(reference.active && !reference.trials.empty(), "a no-delay reference point ran");
    p.time_no_delay_s = reference.trials.front().time_s;
  }
  for (auto& p : result.points) p.resumed = p.active && p.resumed;
  result.wall_s = seconds_since(start);
  return result;
}

}  // namespace collsim
