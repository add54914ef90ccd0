// Closed forms of the two-level cluster algorithms (hierarchical, hierarchical_rhd): the flat
// formula of the per-rail AllReduce across the nodes, between the intra-node rings. See
// closed_form.hpp for why the composition is exact on a contention-free cluster.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

ClosedFormResult two_level(const ClosedFormInput& in, ClosedFormFn across, const char* name) {
  const std::uint32_t g = std::max<std::uint32_t>(in.gpus_per_node, 1);
  if (in.n < 2 || in.n % g != 0) {
    throw ConfigError(fmt::format("closed form of {}: n = {} is not a whole number of nodes of {} GPUs (n >= 2)", name,
                                  in.n, g));
  }
  if (g > 1 && (!(in.node_link.latency_s >= 0) || !std::isfinite(in.node_link.latency_s) ||
                !(in.node_link.bandwidth_Bps > 0) || !std::isfinite(in.node_link.bandwidth_Bps))) {
    throw ConfigError(fmt::format("closed form of {}: the intra-node link has latency {} s and bandwidth {} B/s "
                                  "(latency >= 0, bandwidth > 0, both finite)",
                                  name, in.node_link.latency_s, in.node_link.bandwidth_Bps));
  }
  const std::uint32_t nodes = in.n / g;
  const std::uint32_t intra_rounds = g - 1;
  // One ring round moves one slice (S / G) between neighbours over NVLink; only the
  // ReduceScatter's receivers reduce. The gamma of `link` is the GPUs', inside nodes too.
  const double slice = in.size_bytes / g;
  const double ring_round = in.node_link.latency_s + slice / (g > 1 ? in.node_link.bandwidth_Bps : 1.0);
  const double intra_s = intra_rounds * (2 * ring_round + slice * in.link.gamma_s_per_byte);

  ClosedFormResult result;
  if (nodes == 1) {
    // Both rings take the late GPU: it starts the first round of its node late by the delay.
    if (!(in.delay_s >= 0) || !std::isfinite(in.delay_s) || !(in.size_bytes >= 0) || !std::isfinite(in.size_bytes)) {
      throw ConfigError(fmt::format("closed form of {}: size_bytes = {}, delay_s = {} (finite and >= 0)", name,
                                    in.size_bytes, in.delay_s));
    }
    result.collective_s = intra_s;
    result.time_s = in.delay_s + intra_s;
  } else {
    ClosedFormInput flat = in;
    flat.n = nodes;
    flat.size_bytes = slice;
    flat.gpus_per_node = 0;
    flat.schedule_rounds = 0;
    const ClosedFormResult across_nodes = across(flat);
    result.collective_s = intra_s + across_nodes.collective_s;
    result.time_s = intra_s + across_nodes.time_s;
    result.rounds = across_nodes.rounds;
  }
  result.rounds += 2 * intra_rounds;
  result.time_after_last_arrival_s = result.time_s - in.delay_s;
  if (in.schedule_rounds != 0 && in.schedule_rounds != result.rounds) {
    throw ScheduleError(fmt::format("closed form of {}: the schedule has {} rounds, but one for {} nodes of {} GPUs has "
                                    "{} (was it built for another node size?)",
                                    name, in.schedule_rounds, nodes, g, result.rounds));
  }
  return result;
}

}  // namespace

ClosedFormResult hierarchical_closed_form(const ClosedFormInput& input) {
  return two_level(input, &ring_closed_form, "hierarchical");
}

ClosedFormResult hierarchical_rhd_closed_form(const ClosedFormInput& input) {
  return two_level(input, &recursive_halving_doubling_closed_form, "hierarchical_rhd");
}

}  // namespace collsim
