// The closed_form engine: turns arrival times into the single straggler delay the formulas
// take, and refuses inputs the formulas do not describe instead of returning a wrong number.
#include "collsim/sim/closed_form_engine.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/run_checks.hpp"
#include "execution_core.hpp"

namespace collsim {

RunResult ClosedFormEngine::run(const Schedule& given, const RunConfig& config) {
  // The common entry relabels run-time schedules for the rank that is actually late, so the
  // straggler checks below see the rank it was relabelled for.
  const detail::RunPlan plan(given, config);
  const Schedule& schedule = plan.schedule();
  const std::vector<double>& arrivals = plan.arrival_s();
  const Topology& topo = config.topology;
  if (schedule.late_ranks > 1) {
    throw ConfigError(fmt::format(
        "the closed_form engine models one late rank; the {} schedule expects {} (use --engine replay)",
        schedule.algorithm, schedule.late_ranks));
  }
  // A run-time relabelled schedule waits for the agreement at a gate while its ranks launch, so
  // the two overlap rather than add: no formula here says by how much.
  if (config.execution.launch_s > 0 && plan.relabelled_at_run_time()) {
    throw ConfigError(fmt::format(
        "the closed_form engine cannot charge a launch overhead ({}) to {}: its agreement gate overlaps the "
        "launch (use --engine replay)",
        format_duration(config.execution.launch_s), schedule.algorithm));
  }
  if (config.execution.launch_s > 0 && config.execution.style == ExecutionStyle::P2pRounds) {
    throw ConfigError(fmt::format(
        "the closed_form engine has no per-round launch overheads ({} per launch, p2p_rounds execution); use "
        "--engine replay",
        format_duration(config.execution.launch_s)));
  }
  const AlgorithmInfo* row = find_algorithm_or_null(schedule.algorithm);
  // Two-level formulas (hierarchical rows) hold on a cluster where nothing but a GPU's own
  // NVLink and NIC can limit a flow: 1:1 fabric, a NIC per GPU, whole nodes.
  const bool contention_free_cluster = topo.kind == TopologyKind::Cluster && topo.links_owned_by_endpoints() &&
                                       schedule.n % topo.cluster.gpus_per_node == 0;
  if (topo.kind != TopologyKind::NvSwitch && topo.kind != TopologyKind::FullMesh &&
      !(row != nullptr && row->hierarchical && contention_free_cluster)) {
    throw ConfigError(fmt::format(
        "the closed_form engine assumes a homogeneous any-to-any fabric (nvswitch or full_mesh), or for the "
        "hierarchical algorithms a cluster of whole nodes with a 1:1 fabric, a NIC per GPU and no PXN; topology '{}' is {} "
        "(use --engine replay or simgrid)", topo.name, topology_kind_name(topo.kind)));
  }
  const double base = *std::min_element(arrivals.begin(), arrivals.end());
  std::int64_t late = -1;
  for (Rank r = 0; r < schedule.n; ++r) {
    if (arrivals[r] == base) continue;
    if (late >= 0) {
      throw ConfigError(fmt::format(
          "the closed_form engine models one late rank; ranks {} and {} arrive {} s and {} s after the first "
          "(use --engine replay)", late, r, arrivals[static_cast<std::size_t>(late)] - base, arrivals[r] - base));
    }
    late = r;
  }
  if (late >= 0 && schedule.straggler >= 0 && late != schedule.straggler) {
    throw ConfigError(fmt::format(
        "the {} schedule was built for straggler rank {} but rank {} is the late one; its formula does not apply "
        "(use --engine replay)", schedule.algorithm, schedule.straggler, late));
  }
  // Fused: every rank launches once at its arrival, so the run is the formula's with every arrival
  // shifted by the launch, except that barrier gates open at the unshifted arrivals: with a late
  // rank in barrier mode the early ranks' phases may start before the shifted gate.
  const double launch_s = config.execution.launch_s;
  if (launch_s > 0 && late >= 0 && config.start == StartMode::Barrier) {
    throw ConfigError(fmt::format(
        "the closed_form engine charges a fused launch ({}) only when the ranks arrive together or start eagerly; "
        "rank {} is late in barrier mode (use --engine replay)",
        format_duration(launch_s), late));
  }
  const AlgorithmInfo& info = find_algorithm(schedule.algorithm);
  if (!info.has_closed_form()) {
    throw ScheduleError(fmt::format("{} has no closed form (use --engine replay)", schedule.algorithm));
  }
  // The eager formulas of oblivious algorithms place the late rank at n-1 unless the schedule is
  // symmetric under rotation (a table fact), in which case any late rank gives the same time.
  if (late >= 0 && schedule.straggler < 0 && config.start == StartMode::Eager && late != schedule.n - 1 &&
      !info.closed_form_any_late_rank) {
    throw ConfigError(fmt::format(
        "the eager closed form of {} assumes the late rank is {} (n-1), not {} (use --engine replay)",
        schedule.algorithm, schedule.n - 1, late));
  }

  ClosedFormInput input;
  input.n = schedule.n;
  input.size_bytes = config.size_bytes;
  input.link = topo.link;
  input.delay_s = late >= 0 ? arrivals[static_cast<std::size_t>(late)] - base : 0.0;
  input.start = config.start;
  // A pipelined schedule's num_chunks is its depth; the other formulas ignore the field.
  input.pipeline_chunks = info.default_pipeline_chunks > 0 ? schedule.num_chunks : 0;
  input.schedule_rounds = static_cast<std::uint32_t>(schedule.num_rounds());
  input.agreement_s = plan.agreement_s();
  input.switch_efficiency = topo.switch_reduction_efficiency;
  if (topo.kind == TopologyKind::Cluster) {
    input.gpus_per_node = topo.cluster.gpus_per_node;
    input.node_link = LinkModel{topo.cluster.nvlink_latency_s, topo.cluster.nvlink_bandwidth_Bps, topo.link.gamma_s_per_byte};
  }
  const ClosedFormResult formula = info.closed_form(input);

  RunResult result;
  result.engine = "closed_form";
  result.finish_s.assign(schedule.n, base + launch_s + formula.time_s);
  result.transfers = 0;
  summarize_run(result, arrivals);
  return result;
}

std::unique_ptr<Engine> make_closed_form_engine() { return std::make_unique<ClosedFormEngine>(); }

}  // namespace collsim
