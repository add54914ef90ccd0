#include "collsim/sim/schedule_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "execution_core.hpp"

namespace collsim {
namespace {

// A time and the critical-path counts per link class that produced it under the evaluation
// parameters (fixed-size arrays: the walk copies these for every transfer).
struct Timed {
  double t = 0;
  std::array<double, kMaxLinkClasses> latency{};
  std::array<double, kMaxLinkClasses> bytes{};
  double reduce_bytes = 0;
  double launches = 0;
};

double sum(const std::array<double, kMaxLinkClasses>& values) {
  double total = 0;
  for (const double v : values) total += v;
  return total;
}

// The later of two times. Paths that tie at the evaluation point (always the case for a reduce
// and a copy when gamma = 0) are told apart by their counts, larger first, so the critical path is
// the one that stays longest when a parameter grows from there; otherwise a fit could never see
// gamma because the walk happened to follow the copy.
Timed later(const Timed& a, const Timed& b) {
  const double tolerance = 1e-12 * std::max(std::fabs(a.t), std::fabs(b.t));
  if (b.t > a.t + tolerance) return b;
  if (a.t > b.t + tolerance) return a;
  const auto key = [](const Timed& x) {
    return std::make_tuple(x.reduce_bytes, sum(x.bytes), sum(x.latency), x.launches);
  };
  return key(b) > key(a) ? b : a;
}

struct TimedAlgebra {
  using Time = Timed;
  static Timed later(const Timed& a, const Timed& b) { return collsim::later(a, b); }
  static Timed at_least(const Timed& t, double gate_s) { return collsim::later(t, Timed{gate_s, {}, {}, 0, 0}); }
  static Timed applied(Timed arrived, const Transfer& /*t*/, double reduced_bytes, double apply_s) {
    // Counted even at gamma = 0, so a fit sees it; 0 for a copy and for a switch's reduction.
    arrived.reduce_bytes += reduced_bytes;
    arrived.t += apply_s;
    return arrived;
  }
  static Timed launched(Timed t, double seconds) {
    t.t += seconds;
    t.launches += 1;
    return t;
  }
};

// The network of the cost walk: each transfer pays its route's latency and its bytes at the
// route's bottleneck, where a link that carries several transfers of one round charges each of
// them the link's total bytes of the round (fair sharing of a port by equal transfers that start
// together), and counts what it charged per link class.
class CountingNet {
 public:
  CountingNet(const Schedule& schedule, const Topology& topology, const detail::CostRules& rules)
      : s_(schedule), topo_(topology), rules_(rules), link_bytes_(topology.links.size(), 0.0),
        binding_(topology.links.size()) {
    for (std::size_t l = 0; l < binding_.size(); ++l) {
      binding_[l] = topology.never_binding(static_cast<std::uint32_t>(l)) ? 0 : 1;
    }
  }

  bool begin_round(std::uint32_t /*phase*/, std::uint32_t /*round*/, std::span<const Transfer> round) {
    for (const std::uint32_t l : touched_) link_bytes_[l] = 0.0;
    touched_.clear();
    routes_.resize(round.size());
    next_ = 0;
    for (std::size_t i = 0; i < round.size(); ++i) {
      const Transfer& x = round[i];
      COLLSIM_ASSERT(x.src < s_.num_ranks() && x.dst < s_.num_ranks(), fmt::format("transfer {} -> {}", x.src, x.dst));
      topo_.route_into(x.src, x.dst, routes_[i]);
      for (const std::uint32_t l : routes_[i]) {
        if (binding_[l] == 0) continue;
        if (link_bytes_[l] == 0.0) touched_.push_back(l);
        link_bytes_[l] += rules_.bytes(x);
      }
    }
    return true;
  }

  Timed arrive(const Transfer& x, Timed arrived) {
    const auto& links = topo_.links;
    const double bytes = rules_.bytes(x);
    double latency_s = 0;
    double byte_time_s = -1;
    std::uint32_t bottleneck = 0;
    double bottleneck_bytes = 0;
    for (const std::uint32_t l : routes_[next_++]) {
      const LinkSpec& link = links[l];
      latency_s += link.latency_s;
      arrived.latency[link.link_class] += link.latency_share;
      const double charged = binding_[l] != 0 ? link_bytes_[l] : bytes;
      const double time_s = charged / link.bandwidth_Bps;
      if (time_s > byte_time_s) {
        byte_time_s = time_s;
        bottleneck = l;
        bottleneck_bytes = charged;
      }
    }
    arrived.bytes[links[bottleneck].link_class] += bottleneck_bytes / links[bottleneck].bandwidth_multiple;
    arrived.t += latency_s + byte_time_s;
    return arrived;
  }

  void on_transfer(std::uint32_t, std::uint32_t, const Transfer&, const Timed&, const Timed&) {}

 private:
  const Schedule& s_;
  const Topology& topo_;
  const detail::CostRules& rules_;
  std::vector<double> link_bytes_;
  std::vector<std::uint8_t> binding_;
  std::vector<std::uint32_t> touched_;
  std::vector<std::vector<std::uint32_t>> routes_;
  std::size_t next_ = 0;
};

}  // namespace

Schedule collective_schedule(Collective collective, Rank n, std::string_view algorithm, std::optional<Rank> straggler) {
  if (n < 2) throw ConfigError(fmt::format("{}: n = {} must be at least 2", collective_name(collective), n));
  if (collective == Collective::SendRecv) {
    Schedule s;
    s.algorithm = "sendrecv";
    s.n = n;
    s.num_chunks = 1;
    Phase& phase = s.add_phase("sendrecv");
    phase.begin_round();
    for (Rank i = 0; i < n; ++i) phase.add(i, (i + 1) % n, 0, 1, Op::Copy);
    return s;
  }
  AlgorithmOptions options;
  options.n = n;
  options.straggler = straggler;
  return collective_part(generate_schedule(algorithm, options), collective);
}

Schedule collective_part(Schedule full, Collective collective) {
  if (collective == Collective::AllReduce) return full;
  const std::string_view wanted = collective_name(collective);
  Schedule part;
  part.algorithm = full.algorithm;
  part.n = full.n;
  part.num_chunks = full.num_chunks;
  part.straggler = full.straggler;
  part.ports = full.ports;
  std::vector<std::string> names;
  for (auto& phase : full.phases) {
    names.push_back(phase.name());
    if (phase.name() == wanted) part.phases.push_back(std::move(phase));
  }
  if (part.phases.empty()) {
    throw ScheduleError(fmt::format("{}: the {} schedule has no '{}' phase to explain a {} measurement (phases: {})",
                                    full.algorithm, full.algorithm, wanted, wanted, fmt::join(names, ", ")));
  }
  return part;
}

CostCoefficients schedule_cost_coefficients(const Schedule& schedule, double size_bytes, const LinkModel& at,
                                            const ExecutionCosts& execution) {
  // The nvswitch topology splits alpha into two exact halves and gives every port bandwidth B,
  // so the walk below charges alpha + max(port bytes) / B per transfer, the one-port model.
  Topology star = make_nvswitch(schedule.n, at);
  // A schedule that reduces in the switch (NVLS) is costed on a switch that can.
  star.switch_reduction = schedule.num_switch_ranks > 0;
  return schedule_cost_coefficients(schedule, size_bytes, star, execution).total();
}

ClassCostCoefficients schedule_cost_coefficients(const Schedule& schedule, double size_bytes, const Topology& topology,
                                                 const ExecutionCosts& execution) {
  if (!(std::isfinite(size_bytes) && size_bytes >= 0)) {
    throw ConfigError(fmt::format("size_bytes = {} must be finite and non-negative", size_bytes));
  }
  if (topology.n < schedule.n) {
    throw ConfigError(fmt::format("topology '{}' has {} GPUs; the {} schedule needs {}", topology.name, topology.n,
                                  schedule.algorithm, schedule.n));
  }
  const std::size_t classes = std::max<std::size_t>(1, topology.link_classes.size());
  if (classes > kMaxLinkClasses) {
    throw ConfigError(fmt::format("topology '{}' has {} link classes; calibration handles at most {}", topology.name,
                                  classes, kMaxLinkClasses));
  }
  COLLSIM_ASSERT(schedule.num_chunks > 0, "a schedule has at least one chunk");
  if (!(execution.launch_s >= 0) || !std::isfinite(execution.launch_s)) {
    throw ConfigError(fmt::format("launch_s = {} must be finite and non-negative", execution.launch_s));
  }
  const detail::CostRules rules = detail::cost_rules(schedule, size_bytes, topology, execution);
  CountingNet net(schedule, topology, rules);
  std::vector<Timed> ready(schedule.n);
  const std::vector<double> no_gates(schedule.phases.size(), 0.0);
  const bool swept = detail::dataflow_sweep<TimedAlgebra>(schedule, no_gates, rules, ready, net);
  COLLSIM_ASSERT(swept, "the cost walk times every round");
  Timed last;
  for (const Timed& t : ready) last = later(last, t);
  ClassCostCoefficients out;
  out.latency.assign(last.latency.begin(), last.latency.begin() + static_cast<std::ptrdiff_t>(classes));
  out.bytes.assign(last.bytes.begin(), last.bytes.begin() + static_cast<std::ptrdiff_t>(classes));
  out.reduce_bytes = last.reduce_bytes;
  out.launches = last.launches;
  return out;
}

}  // namespace collsim
