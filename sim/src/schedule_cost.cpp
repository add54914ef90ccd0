#include "collsim/sim/schedule_cost.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

// A time and the critical-path counts that produced it under the evaluation parameters.
struct Timed {
  double t = 0;
  CostCoefficients c;
};

// The later of two times. Paths that tie at the evaluation point (always the case for a reduce
// and a copy when gamma = 0) are told apart by their counts, larger first, so the critical path is
// the one that stays longest when a parameter grows from there; otherwise a fit could never see
// gamma because the walk happened to follow the copy.
Timed later(const Timed& a, const Timed& b) {
  const double tolerance = 1e-12 * std::max(std::fabs(a.t), std::fabs(b.t));
  if (b.t > a.t + tolerance) return b;
  if (a.t > b.t + tolerance) return a;
  const auto key = [](const Timed& x) { return std::make_tuple(x.c.reduce_bytes, x.c.bytes, x.c.latency); };
  return key(b) > key(a) ? b : a;
}

Timed extend(const Timed& start, const LinkModel& at, double bytes, double reduce_bytes) {
  Timed out = start;
  out.c.latency += 1;
  out.c.bytes += bytes;
  out.c.reduce_bytes += reduce_bytes;
  out.t += at.latency_s + bytes / at.bandwidth_Bps + reduce_bytes * at.gamma_s_per_byte;
  return out;
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
  if (!(std::isfinite(size_bytes) && size_bytes >= 0)) {
    throw ConfigError(fmt::format("size_bytes = {} must be finite and non-negative", size_bytes));
  }
  COLLSIM_ASSERT(schedule.num_chunks > 0, "a schedule has at least one chunk");
  const double chunk_bytes = size_bytes / schedule.num_chunks;
  std::vector<Timed> ready(schedule.n);
  std::vector<Timed> next(schedule.n);
  std::vector<double> sent(schedule.n), received(schedule.n);
  for (const Phase& phase : schedule.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      const auto round = phase.round(r);
      std::fill(sent.begin(), sent.end(), 0.0);
      std::fill(received.begin(), received.end(), 0.0);
      for (const Transfer& x : round) {
        COLLSIM_ASSERT(x.src < schedule.n && x.dst < schedule.n, fmt::format("transfer {} -> {}", x.src, x.dst));
        sent[x.src] += x.chunk_count * chunk_bytes;
        received[x.dst] += x.chunk_count * chunk_bytes;
      }
      next = ready;
      for (const Transfer& x : round) {
        const double bytes = x.chunk_count * chunk_bytes;
        const Timed start = later(ready[x.src], ready[x.dst]);
        const double port_bytes = std::max(sent[x.src], received[x.dst]);
        const Timed arrived = extend(start, at, port_bytes, 0.0);
        next[x.src] = later(next[x.src], arrived);
        Timed applied = arrived;
        if (x.op == Op::Reduce) {
          applied.c.reduce_bytes += bytes;
          applied.t += bytes * at.gamma_s_per_byte;
        }
        next[x.dst] = later(next[x.dst], applied);
      }
      ready.swap(next);
    }
  }
  Timed last;
  for (const Timed& t : ready) last = later(last, t);
  return last.c;
}

}  // namespace collsim
