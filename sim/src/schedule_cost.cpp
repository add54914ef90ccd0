#include "collsim/sim/schedule_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

// A time and the critical-path counts per link class that produced it under the evaluation
// parameters (fixed-size arrays: the walk copies these for every transfer).
struct Timed {
  double t = 0;
  std::array<double, kMaxLinkClasses> latency{};
  std::array<double, kMaxLinkClasses> bytes{};
  double reduce_bytes = 0;
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
  const auto key = [](const Timed& x) { return std::make_tuple(x.reduce_bytes, sum(x.bytes), sum(x.latency)); };
  return key(b) > key(a) ? b : a;
}

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
  Schedule full = generate_schedule(algorithm, options);
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
                                    algorithm, algorithm, wanted, wanted, fmt::join(names, ", ")));
  }
  return part;
}

CostCoefficients schedule_cost_coefficients(const Schedule& schedule, double size_bytes, const LinkModel& at) {
  // The nvswitch topology splits alpha into two exact halves and gives every port bandwidth B,
  // so the walk below charges alpha + max(port bytes) / B per transfer, the one-port model.
  return schedule_cost_coefficients(schedule, size_bytes, make_nvswitch(schedule.n, at)).total();
}

ClassCostCoefficients schedule_cost_coefficients(const Schedule& schedule, double size_bytes, const Topology& topology) {
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
  const double chunk_bytes = size_bytes / schedule.num_chunks;
  const double gamma = topology.link.gamma_s_per_byte;
  const auto& links = topology.links;
  std::vector<std::uint8_t> binding(links.size());
  for (std::size_t l = 0; l < links.size(); ++l) binding[l] = topology.never_binding(static_cast<std::uint32_t>(l)) ? 0 : 1;
  std::vector<double> link_bytes(links.size(), 0.0);
  std::vector<std::uint32_t> touched;
  std::vector<std::vector<std::uint32_t>> routes;
  std::vector<Timed> ready(schedule.n);
  std::vector<Timed> next(schedule.n);
  for (const Phase& phase : schedule.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      const auto round = phase.round(r);
      for (const std::uint32_t l : touched) link_bytes[l] = 0.0;
      touched.clear();
      routes.resize(round.size());
      for (std::size_t i = 0; i < round.size(); ++i) {
        const Transfer& x = round[i];
        COLLSIM_ASSERT(x.src < schedule.n && x.dst < schedule.n, fmt::format("transfer {} -> {}", x.src, x.dst));
        topology.route_into(x.src, x.dst, routes[i]);
        for (const std::uint32_t l : routes[i]) {
          if (binding[l] == 0) continue;
          if (link_bytes[l] == 0.0) touched.push_back(l);
          link_bytes[l] += x.chunk_count * chunk_bytes;
        }
      }
      next = ready;
      for (std::size_t i = 0; i < round.size(); ++i) {
        const Transfer& x = round[i];
        const double bytes = x.chunk_count * chunk_bytes;
        Timed arrived = later(ready[x.src], ready[x.dst]);
        double latency_s = 0;
        double byte_time_s = -1;
        std::uint32_t bottleneck = 0;
        double bottleneck_bytes = 0;
        for (const std::uint32_t l : routes[i]) {
          const LinkSpec& link = links[l];
          latency_s += link.latency_s;
          arrived.latency[link.link_class] += link.latency_share;
          const double charged = binding[l] != 0 ? link_bytes[l] : bytes;
          const double time_s = charged / link.bandwidth_Bps;
          if (time_s > byte_time_s) {
            byte_time_s = time_s;
            bottleneck = l;
            bottleneck_bytes = charged;
          }
        }
        arrived.bytes[links[bottleneck].link_class] += bottleneck_bytes / links[bottleneck].bandwidth_multiple;
        arrived.t += latency_s + byte_time_s;
        next[x.src] = later(next[x.src], arrived);
        Timed applied = arrived;
        if (x.op == Op::Reduce) {
          applied.reduce_bytes += bytes;
          applied.t += bytes * gamma;
        }
        next[x.dst] = later(next[x.dst], applied);
      }
      ready.swap(next);
    }
  }
  Timed last;
  for (const Timed& t : ready) last = later(last, t);
  ClassCostCoefficients out;
  out.latency.assign(last.latency.begin(), last.latency.begin() + static_cast<std::ptrdiff_t>(classes));
  out.bytes.assign(last.bytes.begin(), last.bytes.begin() + static_cast<std::ptrdiff_t>(classes));
  out.reduce_bytes = last.reduce_bytes;
  return out;
}

}  // namespace collsim
