#include "collsim/sim/nccl_choice.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/replay_engine.hpp"
#include "collsim/sim/schedule_cost.hpp"

namespace collsim {
namespace {

struct ProtocolCosts {
  std::string name;
  Topology topology;
  double launch_s = 0;
  bool simple = true;  ///< the Simple regime, or the run's own link (no regimes)
};

// One entry per protocol regime of the model (its link applied through the model at a size
// inside the regime's range), or the run's own link when the model has no regimes.
std::vector<ProtocolCosts> protocols_of(const Topology& topology, const ModelFile* model, double launch_s) {
  std::vector<ProtocolCosts> out;
  if (model == nullptr || model->regimes.empty()) {
    out.push_back({"model", topology, launch_s});
    return out;
  }
  for (const FittedRegime& r : model->regimes) {
    ProtocolCosts p{protocol_name(r.protocol), topology, r.launch_fitted || r.launch_s > 0 ? r.launch_s : launch_s,
                    r.protocol == Protocol::Simple};
    apply_model(*model, r.min_size_bytes, p.topology);
    out.push_back(std::move(p));
  }
  return out;
}

// Whether `full` can run `collective`: an AllReduce always, a ReduceScatter or AllGather through
// a phase of that name (ring's; ring_multichannel's on a cluster; not nvls's or the trees').
bool runs_collective(const Schedule& full, Collective collective) {
  return collective == Collective::AllReduce ||
         std::any_of(full.phases.begin(), full.phases.end(),
                     [&](const Phase& p) { return p.name() == collective_name(collective); });
}

}  // namespace

NcclChoice choose_nccl(Rank n, double size_bytes, const Topology& topology, const ModelFile* model,
                       const ExecutionCosts& execution, Collective collective) {
  const std::vector<ProtocolCosts> protocols = protocols_of(topology, model, execution.launch_s);
  const auto engine = make_replay_engine();
  NcclChoice best;
  bool found = false;
  for (const AlgorithmInfo& info : all_algorithms()) {
    // NVLS only where the switch reduces: the row's own constraint says so for this topology.
    if (!info.nccl_candidate || !info.unsupported_reason(n, topology_context(topology)).empty()) continue;
    // Built as the chosen run will be. Only a row whose depth follows the buffer and the link
    // (depth_for) differs from one protocol's link to the next; the others are built once.
    std::optional<Schedule> schedule;
    for (const ProtocolCosts& p : protocols) {
      if (info.nccl_simple_only && !p.simple) continue;
      if (!schedule || info.depth_for != nullptr) {
        AlgorithmOptions options;
        options.n = n;
        options.gpus_per_node = gpus_per_node_of(p.topology);
        set_sizing(options, p.topology, size_bytes);
        Schedule full = generate_schedule(info.name, options);
        if (!runs_collective(full, collective)) break;  // its phases do not depend on the link
        schedule = collective_part(std::move(full), collective);
      }
      RunConfig config;
      config.size_bytes = size_bytes;
      config.topology = p.topology;
      config.execution = ExecutionCosts{ExecutionStyle::Fused, p.launch_s};
      const double t = engine->run(*schedule, config).time_s;
      if (!found || t < best.predicted_s) {
        found = true;
        best.algorithm = std::string(info.name);
        best.protocol = p.name;
        best.predicted_s = t;
        best.topology = p.topology;
        best.execution = config.execution;
      }
    }
  }
  if (!found) {
    throw ConfigError(fmt::format("nccl: no NCCL candidate algorithm runs {} on n = {} ranks of topology '{}'",
                                  collective_name(collective), n, topology.name));
  }
  return best;
}

}  // namespace collsim
