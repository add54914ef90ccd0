#include "collsim/experiments/sweep.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/arrival.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/random.hpp"

namespace collsim {
namespace {

// Sub-stream tag of arrival seeds (derive_seed). Fixed forever: changing it changes every result.
constexpr std::uint64_t kArrivalSeedStream = 0x617272697661ULL;  // "arriva"

// Transfers of one AllReduce of n ranks, roughly (ring and StragglAR move about 2n^2 messages).
double transfers_estimate(Rank n) { return 2.0 * static_cast<double>(n) * static_cast<double>(n); }

}  // namespace

SweepGrid::SweepGrid(const ExperimentSpec& spec) : spec_(&spec) {
  algorithms_ = spec.algorithms.size();
  arrivals_ = spec.arrivals.size();
  sizes_ = spec.sizes_bytes.size();
  starts_ = spec.starts.size();
  engines_ = spec.engines.size();
  topologies_ = spec.topologies.size();
  ns_ = spec.n.size();
  COLLSIM_ASSERT(algorithms_ > 0 && arrivals_ > 0 && sizes_ > 0 && starts_ > 0 && engines_ > 0 && topologies_ > 0 && ns_ > 0,
                 "SweepGrid needs a validated spec (every axis non-empty)");
  total_ = algorithms_ * arrivals_ * sizes_ * starts_ * engines_ * topologies_ * ns_;
  const auto baseline = std::find(spec.algorithms.begin(), spec.algorithms.end(), spec.baseline);
  COLLSIM_ASSERT(baseline != spec.algorithms.end(), "validate() adds the baseline");
  baseline_algorithm_ = static_cast<std::size_t>(baseline - spec.algorithms.begin());
  unsupported_.assign(algorithms_ * topologies_ * ns_, false);
  // Only hierarchical rows look at the node size: flat studies build no topology here.
  bool hierarchical = false;
  for (const auto& name : spec.algorithms) {
    const AlgorithmInfo& info = find_algorithm(name);
    hierarchical = hierarchical || info.hierarchical || info.needs_switch_reduction;
  }
  for (std::size_t t = 0; t < topologies_; ++t) {
    for (std::size_t i = 0; i < ns_; ++i) {
      const NConstraintContext context = hierarchical ? node_context_at(spec, t, spec.n[i]) : NConstraintContext{};
      for (std::size_t a = 0; a < algorithms_; ++a) {
        unsupported_[(a * topologies_ + t) * ns_ + i] =
            !find_algorithm(spec.algorithms[a]).unsupported_reason(spec.n[i], context).empty();
      }
    }
  }
}

Point SweepGrid::point(std::size_t index) const {
  COLLSIM_ASSERT(index < total_, "point index out of range");
  Point p;
  p.index = index;
  p.algorithm = index % algorithms_;
  index /= algorithms_;
  p.arrival = index % arrivals_;
  index /= arrivals_;
  p.size = index % sizes_;
  index /= sizes_;
  p.start = index % starts_;
  index /= starts_;
  p.engine = index % engines_;
  index /= engines_;
  p.topology = index % topologies_;
  index /= topologies_;
  p.n = index;
  return p;
}

std::size_t SweepGrid::with_algorithm(std::size_t index, std::size_t algorithm) const {
  return index - index % algorithms_ + algorithm;
}

bool SweepGrid::skipped(std::size_t index) const {
  const Point p = point(index);
  return unsupported_[(p.algorithm * topologies_ + p.topology) * ns_ + p.n];
}

std::size_t SweepGrid::num_active_points() const {
  std::size_t count = 0;
  for (std::size_t i = 0; i < total_; ++i) count += skipped(i) ? 0 : 1;
  return count;
}

std::uint64_t arrival_seed(std::uint64_t spec_seed, std::size_t arrival_index, Rank n) {
  return derive_seed(derive_seed(spec_seed, kArrivalSeedStream, arrival_index), kArrivalSeedStream, n);
}

std::uint32_t trials_per_unit(Rank n, std::uint32_t trials) {
  const double per_unit = 4e6 / transfers_estimate(n);
  const auto block = static_cast<std::uint32_t>(std::clamp(per_unit, 1.0, 1000.0));
  return std::min(block, std::max<std::uint32_t>(trials, 1));
}

std::vector<WorkUnit> make_units(const SweepGrid& grid) {
  std::vector<WorkUnit> units;
  const ExperimentSpec& spec = grid.spec();
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    if (grid.skipped(i)) continue;
    const Rank n = spec.n[grid.point(i).n];
    const std::uint32_t block = trials_per_unit(n, spec.trials);
    for (std::uint32_t b = 0; b < spec.trials; b += block) {
      WorkUnit u;
      u.id = units.size();
      u.point = i;
      u.trial_begin = b;
      u.trial_end = std::min(spec.trials, b + block);
      u.work = (u.trial_end - u.trial_begin) * transfers_estimate(n);
      units.push_back(u);
    }
  }
  return units;
}

std::vector<std::size_t> no_delay_references(const SweepGrid& grid) {
  const ExperimentSpec& spec = grid.spec();
  std::vector<std::size_t> reference(grid.num_points(), kNoReference);
  // The schedule a run uses depends on the expected straggler only for straggler-aware
  // algorithms (the runner's rule: ArrivalSpec::schedule_straggler, else n - 1).
  const auto schedule_straggler = [&](const Point& p, std::optional<std::uint32_t> expected) -> Rank {
    const Rank n = spec.n[p.n];
    return find_algorithm(spec.algorithms[p.algorithm]).schedule_depends_on_straggler() ? expected.value_or(n - 1) : n - 1;
  };
  // Per (arrival, n): whether every trial is all zeros, with the expected stragglers of trial 0
  // (all trials must expect the same ones) and the one a schedule is built for, and that one for
  // the model itself.
  struct ArrivalFacts {
    bool all_zero = false;
    std::vector<std::uint32_t> zero_expected;
    std::optional<std::uint32_t> zero_choice;
    std::optional<std::uint32_t> model_choice;
  };
  std::map<std::pair<std::size_t, std::size_t>, ArrivalFacts> facts;
  const auto facts_of = [&](const Point& p) -> const ArrivalFacts& {
    const auto key = std::make_pair(p.arrival, p.n);
    if (auto it = facts.find(key); it != facts.end()) return it->second;
    const Rank n = spec.n[p.n];
    ArrivalProcess process(arrival_for(spec.arrivals[p.arrival], n), n, arrival_seed(spec.seed, p.arrival, n));
    ArrivalFacts f;
    f.model_choice = process.spec().schedule_straggler(process.spec().expected_stragglers());
    f.all_zero = true;
    for (std::uint32_t t = 0; t < spec.trials && f.all_zero; ++t) {
      const Arrivals a = process.at(t);
      f.all_zero = std::all_of(a.arrival_s.begin(), a.arrival_s.end(), [](double x) { return x == 0.0; }) &&
                   (t == 0 || a.expected_stragglers == f.zero_expected);
      if (t == 0) f.zero_expected = a.expected_stragglers;
    }
    f.zero_choice = process.spec().schedule_straggler(f.zero_expected);
    return facts.emplace(key, std::move(f)).first->second;
  };
  using Scenario = std::tuple<std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, std::size_t, Rank>;
  const auto scenario = [](const Point& p, Rank straggler) {
    return Scenario{p.algorithm, p.n, p.size, p.topology, p.engine, p.start, straggler};
  };
  std::map<Scenario, std::size_t> zero_points;  // the first all-zero point of each scenario
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const Point p = grid.point(i);
    const ArrivalFacts& f = facts_of(p);
    if (f.all_zero) zero_points.emplace(scenario(p, schedule_straggler(p, f.zero_choice)), i);
  }
  for (std::size_t i = 0; i < grid.num_points(); ++i) {
    const Point p = grid.point(i);
    const ArrivalFacts& f = facts_of(p);
    if (f.all_zero) continue;
    if (auto it = zero_points.find(scenario(p, schedule_straggler(p, f.model_choice))); it != zero_points.end()) {
      reference[i] = it->second;
    }
  }
  return reference;
}

}  // namespace collsim
