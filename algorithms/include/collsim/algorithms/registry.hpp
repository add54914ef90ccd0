// The algorithm registry: one entry per AllReduce algorithm, looked up by its name.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/closed_form.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

/// Options shared by every generator. Generators ignore what does not apply to them.
struct AlgorithmOptions {
  Rank n = 0;                          ///< number of ranks, >= 2
  std::optional<Rank> straggler;       ///< expected straggler; default n-1 (straggler-aware algorithms)
  /// Pipelined algorithms: pipeline depth in chunks; 0 = the row's default_pipeline_chunks
  /// (generate_schedule() fills it in, so generators always see the depth they build).
  std::uint32_t pipeline_chunks = 0;
  /// Hierarchical algorithms: GPUs per node of the topology in use; 0 = no node structure known.
  /// generate_schedule() passes it to the row's constraint on n.
  std::uint32_t gpus_per_node = 0;
  /// Hierarchical algorithms: nodes under one leaf switch of the cluster in use (0 = unknown).
  /// generate_schedule() keeps leaves whole when it moves the straggler's role to another rank.
  std::uint32_t nodes_per_leaf = 0;
  /// Buffer per rank (bytes) and the network's message latency (s) and per-NIC bandwidth (B/s),
  /// when the caller knows them (0 = unknown; set_sizing() fills them). A row with a
  /// size-dependent pipeline depth (AlgorithmInfo::depth_for) picks it from them when
  /// pipeline_chunks is 0; every other row ignores them.
  double size_bytes = 0;
  double network_latency_s = 0;
  double network_bandwidth_Bps = 0;
  /// Topology::switch_reduction_efficiency (set_sizing() fills it): nvls sizes its pipeline on
  /// the bandwidth its switch achieves.
  double switch_efficiency = 1.0;
  /// On a cluster (set_sizing() fills them): NVLink bandwidth per GPU and direction (B/s; 0 =
  /// unknown) and how many GPUs share one NIC (Topology cluster nics_per_node < GPUs per node).
  /// stragglar_cluster sizes its pipeline on the slower of a GPU's NIC share and its NVLink
  /// forwarding; generate_schedule() moves a late GPU's role by whole NIC groups.
  double nvlink_bandwidth_Bps = 0;
  std::uint32_t gpus_per_nic = 1;
  /// Algorithms relabelled at run time (stragglar_online): how many ranks are expected late,
  /// 1..n-1. The first n-late_ranks arrivals start without them. Others ignore it.
  std::uint32_t late_ranks = 1;
};

/// Sets options.size_bytes and the network numbers from `topology.link` (the inter-node NIC
/// path on a cluster, the one link class elsewhere).
void set_sizing(AlgorithmOptions& options, const Topology& topology, double size_bytes);

/// What an algorithm's constraint on n may look at besides n. Cluster algorithms will need
/// n = nodes x GPUs per node, so the constraint is given the node size of the topology in use
/// when the caller knows one. Today no caller does and no row reads it: every algorithm is
/// flat (see AlgorithmInfo::hierarchical).
struct NConstraintContext {
  std::optional<Rank> gpus_per_node;  ///< ranks per node of the topology; nullopt = no node structure known
  /// Whether the topology's NVSwitch reduces in the network (Topology::switch_reduction);
  /// nullopt = no topology known. Read by rows with needs_switch_reduction.
  std::optional<bool> switch_reduction;
};

/// What a constraint on n can know from `topology`: its node size and switch capability.
NConstraintContext topology_context(const Topology& topology);

/// The node size a hierarchical algorithm takes from `topology`: GPUs per node of a cluster, 0
/// for topologies without nodes (one NVSwitch or mesh).
std::uint32_t gpus_per_node_of(const Topology& topology);
/// Nodes under one leaf switch of a cluster `topology`; 0 for topologies without leaves.
std::uint32_t nodes_per_leaf_of(const Topology& topology);
/// GPUs sharing one NIC on a cluster `topology` (consecutive local indices); 1 otherwise.
std::uint32_t gpus_per_nic_of(const Topology& topology);

/// Generator of one algorithm. Generators build the schedule with the straggler at rank n-1;
/// generate_schedule() relabels for other straggler ranks.
using GeneratorFn = Schedule (*)(const AlgorithmOptions& options);
/// Returns an empty string if n is supported in this context, else the reason it is not.
using SupportFn = std::string (*)(Rank n, const NConstraintContext& context);

/// The part an algorithm plays in a comparison: collsim studies StragglAR against baselines.
/// `collsim advise` bisects the delay at which a studied algorithm overtakes the best baseline.
enum class AlgorithmRole : std::uint8_t { Studied, Baseline };

/// "studied" / "baseline".
const char* algorithm_role_name(AlgorithmRole role);

/// One row of the algorithm table: everything collsim knows about an algorithm. No code outside
/// the table tests an algorithm's name; it reads these fields instead.
struct AlgorithmInfo {
  std::string_view name;          ///< the one name used in YAML, CSV, plots and CUDA
  std::string_view summary;       ///< one line for --help and listings
  std::string_view reference;     ///< the paper (or system) the schedule follows
  std::string_view supported_n;   ///< human description of the constraint on n, e.g. "every n >= 2"
  AlgorithmRole role = AlgorithmRole::Baseline;
  bool straggler_aware = false;   ///< the schedule depends on which rank is late
  /// Built from per-node and cross-node steps of a cluster topology. No such algorithm exists
  /// yet; the field is here so that the engines and reports can tell them apart when one does.
  bool hierarchical = false;
  /// Runs only where the NVSwitch reduces in the network (NVLS): its schedule has switch ranks
  /// (schedule.hpp) and the engines refuse topologies without Topology::switch_reduction.
  bool needs_switch_reduction = false;
  /// Pipelined algorithms: the pipeline depth (chunks per buffer) used when the options give 0;
  /// their schedule's num_chunks is the depth (hierarchical rows: chunks per node slice, so
  /// num_chunks = depth x GPUs per node). 0 = not pipelined (num_chunks follows from n).
  std::uint32_t default_pipeline_chunks = 0;
  /// Pipelined rows whose best depth depends on the buffer: the depth for options (n, node size,
  /// size and network numbers all known), used instead of default_pipeline_chunks when the
  /// options give no depth but do give the sizing. nullptr = the default depth always.
  std::uint32_t (*depth_for)(const AlgorithmOptions& options) = nullptr;
  /// Pipelined rows whose depth must be even, and why (two trees carry half the chunks each);
  /// empty = any depth. Checked by pipeline_depth_error(), for the depth the user gave.
  std::string_view even_depth_because = {};
  SupportFn n_constraint = nullptr;
  GeneratorFn generate = nullptr;
  /// The alpha-beta formula (models/closed_form.hpp) of exactly this generator's schedule in
  /// both start modes; nullptr = none, and the closed_form engine refuses the algorithm.
  ClosedFormFn closed_form = nullptr;
  /// The eager formula holds whichever rank is late (the schedule is symmetric under rotation,
  /// as the ring). Otherwise it assumes the late rank is n-1 for oblivious algorithms.
  bool closed_form_any_late_rank = false;
  /// The schedule is built for late ranks n-k..n-1 (k = Schedule::late_ranks) and the engines'
  /// common entry relabels it for the ranks that actually arrive last (run_time_relabelling
  /// below), gating each phase on the modelled agreement (sim/src/execution_core.hpp, RunPlan).
  /// generate_schedule() then ignores AlgorithmOptions::straggler: who is late is not known when
  /// the schedule is built.
  bool relabel_at_run_time = false;
  /// NCCL runs this algorithm natively (Ring, Tree, NVLS; on clusters its multi-rail ring, tree
  /// and NVLS + tree): the rows the `nccl` choice picks among (those the topology supports).
  bool nccl_candidate = false;
  /// NCCL runs this candidate with its Simple protocol only (NVLS: the multimem reductions have
  /// no LL or LL128 variant, NCCL's tuner disables them), so `nccl` prices it under no other
  /// protocol regime.
  bool nccl_simple_only = false;
  /// NCCL's name for this algorithm (NCCL_ALGO values: "Ring", "Tree", "NVLS"), "" when NCCL has
  /// no such algorithm. A log that names NCCL_ALGO is explained through the row with this name.
  std::string_view nccl_name = {};
  /// The schedule is chosen per run, as NCCL's tuner does: the nccl_candidate row and protocol
  /// with the least predicted time for the run's n, size, topology and link model (see
  /// sim/nccl_choice.hpp). generate() alone, without size or model, gives ring.
  bool chosen_per_run = false;

  /// "" if n is supported in `context`, else the reason it is not (n_constraint).
  std::string unsupported_reason(Rank n, const NConstraintContext& context = {}) const {
    return n_constraint(n, context);
  }
  bool has_closed_form() const { return closed_form != nullptr; }
  /// The schedule must be generated for each expected straggler (straggler-aware and not
  /// relabelled at run time); otherwise one schedule serves every arrival pattern.
  bool schedule_depends_on_straggler() const { return straggler_aware && !relabel_at_run_time; }
  /// "" if `depth` chunks suit this row, else the message of the ScheduleError refusing it.
  std::string pipeline_depth_error(std::uint32_t depth) const;
};

/// Every registered algorithm, in a fixed order (StragglAR first, then the baselines).
const std::vector<AlgorithmInfo>& all_algorithms();

/// The names of all algorithms, comma separated (for error messages and --help).
std::string algorithm_names();

/// The row named `name`, or nullptr (for schedules built outside the table, e.g. in tests).
const AlgorithmInfo* find_algorithm_or_null(std::string_view name);

/// Looks an algorithm up by name. Throws ConfigError naming the unknown name and the known ones.
const AlgorithmInfo& find_algorithm(std::string_view name);

/// Generates the schedule of `name` for `options`. Throws ConfigError for an unknown name,
/// ScheduleError for n < 2, an unsupported n, a straggler rank >= n, or a pipeline depth the row
/// refuses (AlgorithmInfo::pipeline_depth_error).
Schedule generate_schedule(std::string_view name, const AlgorithmOptions& options);

/// The relabelling that runs a schedule of a relabel_at_run_time row for the ranks that actually
/// arrive last: `arrival_order` lists the n ranks in arrival order; the result maps each label to
/// a rank (Schedule::relabel). Late label n-k+j goes to arrival_order[n-k+j] (k =
/// schedule.late_ranks); early labels keep their rank where they can. Throws ScheduleError when
/// late_ranks is not in 1..n-1 or arrival_order is not a permutation of 0..n-1.
std::vector<Rank> run_time_relabelling(const Schedule& schedule, std::span<const Rank> arrival_order);

/// The closed form of `name` through its table row; pipeline_chunks 0 means the row's default.
/// Throws ConfigError for an unknown name, ScheduleError when the row has no closed form, and
/// what the formula throws (models/closed_form.hpp).
ClosedFormResult closed_form_time(std::string_view name, ClosedFormInput input);

}  // namespace collsim
