#include "collsim/algorithms/registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"

namespace collsim {

namespace {

// Where generate_schedule() puts what a hierarchical schedule built for the last unit late calls
// `label` (a node among the nodes, or a GPU's local index inside its node), when unit `late` is
// late instead: label count - 1 goes to `late`. Blocks of `block` consecutive units (the nodes
// under one leaf; the GPUs sharing one NIC) are rotated as wholes and the units inside each block
// rotated, a symmetry of the cluster when every block is full, so the run takes the time it takes
// with rank n-1 late. Why not a swap of two units: the trees number neighbouring nodes in order,
// so their subtrees are runs of nodes under one leaf, and a swap moved two nodes into other
// leaves' runs; on oversubscribed leaves the time then depended on which rank was late (143
// against 110 ms, 8 x 24 GPUs on 2:1, 4 GiB). Inside a node, a swap of local indices moved two
// GPUs between the groups that share a NIC (0.1 % with 2 NICs for 8 GPUs). A partial last block
// (or none known) makes it a rotation of all the units, which keeps neighbours together but for
// one pair.
Rank block_preserving_map(Rank label, Rank late, Rank count, std::uint32_t block) {
  if (block == 0 || block >= count || count % block != 0) return (label + late + 1) % count;
  const Rank blocks = count / block;
  const Rank to_block = (label / block + late / block + 1) % blocks;
  const Rank to_slot = (label % block + late % block + 1) % block;
  return to_block * block + to_slot;
}

// Pipeline depth of the three trees when the options give none. One value for all three, so
// that tree results compare at equal pipelining.
constexpr std::uint32_t kTreePipelineChunks = 8;
// NVLS pipeline depth when the buffer size is not known (nvls_depth() otherwise): one piece per
// NVLS channel of NCCL on H100 (16).
constexpr std::uint32_t kNvlsPipelineChunks = 16;

// Adapts a generator file's constraint on n to SupportFn for an algorithm that has no node
// structure, so it ignores the topology's node size.
template <std::string (*Unsupported)(Rank)>
std::string flat(Rank n, const NConstraintContext& /*context*/) {
  return Unsupported(n);
}

// The node size comes from the topology in use; without one there is no node structure.
std::string hierarchical_constraint(Rank n, const NConstraintContext& context) {
  return hierarchical_unsupported(n, context.gpus_per_node.value_or(0));
}

std::string stragglar_cluster_constraint(Rank n, const NConstraintContext& context) {
  return stragglar_cluster_unsupported(n, context.gpus_per_node.value_or(0));
}

// nccl_tree: chunks per node slice (half per tree of the channel). Pipelining wants many more
// chunks per tree than the up and down depth of about 2 (G + log2 N) rounds that fill and drain it.
constexpr std::uint32_t kNcclTreePipelineChunks = 64;

// nvls_tree: pieces of the buffer (half per tree) when the buffer size is not known; callers that
// know it get nvls_tree_depth, which on 128 H100 nodes goes from 12 at 1 MiB to 138 at 1 GiB.
constexpr std::uint32_t kNvlsTreePipelineChunks = 64;

// Chunks per slice of stragglar_cluster (one per tree and pipeline step) when the buffer size is
// not known (callers that know it get stragglar_cluster_depth): near the best depth at 1 GiB on
// 128 H100 nodes; every step costs two network latencies, which small buffers feel.
constexpr std::uint32_t kStragglarClusterSliceChunks = 64;

constexpr std::string_view kStragglarPaper =
    "Devraj, Ding, Vijaya Kumar, Kleinberg, Singh: Accelerating AllReduce with a Persistent Straggler "
    "(arXiv 2505.23523, 2025)";
constexpr std::string_view kMpichPaper =
    "Thakur, Rabenseifner, Gropp: Optimization of Collective Communication Operations in MPICH (IJHPCA 2005)";

}  // namespace

void set_sizing(AlgorithmOptions& options, const Topology& topology, double size_bytes) {
  options.size_bytes = size_bytes;
  options.network_latency_s = topology.link.latency_s;
  options.network_bandwidth_Bps = topology.link.bandwidth_Bps;
  options.switch_efficiency = topology.switch_reduction_efficiency;
  if (topology.kind == TopologyKind::Cluster) {
    options.nvlink_bandwidth_Bps = topology.cluster.nvlink_bandwidth_Bps;
    options.gpus_per_nic = gpus_per_nic_of(topology);
  }
}

std::uint32_t gpus_per_node_of(const Topology& topology) {
  return topology.kind == TopologyKind::Cluster ? topology.cluster.gpus_per_node : 0;
}

std::uint32_t nodes_per_leaf_of(const Topology& topology) {
  return topology.kind == TopologyKind::Cluster ? topology.cluster.nodes_per_leaf : 0;
}

std::uint32_t gpus_per_nic_of(const Topology& topology) {
  if (topology.kind != TopologyKind::Cluster) return 1;
  return std::max<std::uint32_t>(topology.cluster.gpus_per_node / std::max<std::uint32_t>(topology.cluster.nics(), 1), 1);
}

NConstraintContext topology_context(const Topology& topology) {
  NConstraintContext context;
  if (const std::uint32_t gpus = gpus_per_node_of(topology); gpus > 0) context.gpus_per_node = gpus;
  context.switch_reduction = topology.switch_reduction;
  return context;
}

const char* algorithm_role_name(AlgorithmRole role) {
  return role == AlgorithmRole::Studied ? "studied" : "baseline";
}

const std::vector<AlgorithmInfo>& all_algorithms() {
  static const std::vector<AlgorithmInfo> kAlgorithms{
      {.name = "stragglar",
       .summary = "ReduceScatter among the ready ranks during the delay, then synthesized completion rounds",
       .reference = kStragglarPaper,
       .supported_n = "every n >= 2",
       .role = AlgorithmRole::Studied,
       .straggler_aware = true,
       .n_constraint = &flat<&stragglar_unsupported>,
       .generate = &generate_stragglar,
       .closed_form = &stragglar_closed_form},
      {.name = "stragglar_online",
       .summary = "StragglAR relabelled at run time for whoever arrives last (k late ranks folded in as they come)",
       .reference = kStragglarPaper,
       .supported_n = "every n >= 2 (late ranks 1..n-1)",
       .role = AlgorithmRole::Studied,
       .straggler_aware = true,
       .n_constraint = &flat<&stragglar_online_unsupported>,
       .generate = &generate_stragglar_online,
       .closed_form = &stragglar_online_closed_form,
       .relabel_at_run_time = true},
      {.name = "ring",
       .summary = "ring ReduceScatter + ring AllGather over n chunks",
       .reference = "Patarasuk, Yuan: Bandwidth optimal all-reduce algorithms for clusters of workstations (JPDC 2009)",
       .supported_n = "every n >= 2",
       .n_constraint = &flat<&ring_unsupported>,
       .generate = &generate_ring,
       .closed_form = &ring_closed_form,
       .closed_form_any_late_rank = true,
       .nccl_candidate = true,
       .nccl_name = "Ring"},
      {.name = "recursive_halving_doubling",
       .summary = "Rabenseifner: recursive-halving ReduceScatter + recursive-doubling AllGather",
       .reference = "Rabenseifner: Optimization of collective reduction operations (ICCS 2004); for n not a power "
                    "of two, Rabenseifner, Traff: More efficient reduction algorithms for non-power-of-two number "
                    "of processors (EuroPVM/MPI 2004) and Bruck et al.'s dissemination rounds in groups of 3 or 9",
       .supported_n = "every n >= 2 (3-2 elimination of the ranks beyond the largest power of two)",
       .n_constraint = &flat<&recursive_halving_doubling_unsupported>,
       .generate = &generate_recursive_halving_doubling,
       .closed_form = &recursive_halving_doubling_closed_form},
      {.name = "recursive_halving_doubling_fold",
       .summary = "recursive halving/doubling as MPICH runs it: extra ranks fold their whole buffer in",
       .reference = kMpichPaper,
       .supported_n = "every n >= 2 (extra ranks fold into the largest power of two)",
       .n_constraint = &flat<&recursive_halving_doubling_fold_unsupported>,
       .generate = &generate_recursive_halving_doubling_fold,
       .closed_form = &recursive_halving_doubling_fold_closed_form},
      {.name = "recursive_doubling",
       .summary = "log2 n rounds of full-buffer pairwise exchange",
       .reference = kMpichPaper,
       .supported_n = "every n >= 2 (extra ranks fold into the largest power of two)",
       .n_constraint = &flat<&recursive_doubling_unsupported>,
       .generate = &generate_recursive_doubling,
       .closed_form = &recursive_doubling_closed_form},
      {.name = "binomial_tree",
       .summary = "pipelined binomial-tree reduce to rank 0, then pipelined binomial broadcast",
       .reference = "Thakur, Rabenseifner, Gropp (IJHPCA 2005), segmented as Open MPI's pipelined binomial collectives",
       .supported_n = "every n >= 2",
       .default_pipeline_chunks = kTreePipelineChunks,
       .n_constraint = &flat<&binomial_tree_unsupported>,
       .generate = &generate_binomial_tree,
       .closed_form = &binomial_tree_closed_form},
      {.name = "double_binary_tree",
       .summary = "NCCL's two complementary pipelined binary trees, half the buffer each",
       .reference = "Sanders, Speck, Traeff: Two-tree algorithms for full bandwidth broadcast, reduction and scan "
                    "(Parallel Computing 2009); NCCL 2.4",
       .supported_n = "every n >= 2",
       .default_pipeline_chunks = kTreePipelineChunks,
       .even_depth_because = "each of the two trees carries half of the chunks",
       .n_constraint = &flat<&double_binary_tree_unsupported>,
       .generate = &generate_double_binary_tree,
       .closed_form = &double_binary_tree_closed_form,
       .nccl_candidate = true,
       .nccl_name = "Tree"},
      {.name = "nvls",
       .summary = "NVLS: every GPU reduces into the NVSwitch, which multicasts the sum back, pipelined over chunks",
       .reference = "NVIDIA NCCL 2.17+ NVLS algorithm (NVLink SHARP: multimem reductions in the H100 NVSwitch)",
       .supported_n = "every n >= 2 GPUs of one NVSwitch that reduces in the network (topology switch_reduction: true)",
       .needs_switch_reduction = true,
       .default_pipeline_chunks = kNvlsPipelineChunks,
       .depth_for = &nvls_depth,
       .n_constraint = &nvls_unsupported,
       .generate = &generate_nvls,
       .closed_form = &nvls_closed_form,
       .closed_form_any_late_rank = true,
       .nccl_candidate = true,
       .nccl_simple_only = true,
       .nccl_name = "NVLS"},
      {.name = "direct",
       .summary = "AllReduce among the ready ranks, full-buffer exchange with the straggler, doubling broadcast",
       .reference = kStragglarPaper,
       .supported_n = "every n >= 2",
       .straggler_aware = true,
       .n_constraint = &flat<&direct_unsupported>,
       .generate = &generate_direct,
       .closed_form = &direct_closed_form},
      {.name = "straggler_tree",
       .summary = "pipelined tree reduce among the ready ranks, straggler joins at the root, pipelined broadcast",
       .reference = "the tree baseline asked for by the reviewers of Devraj et al. (arXiv 2505.23523)",
       .supported_n = "every n >= 2",
       .straggler_aware = true,
       .default_pipeline_chunks = kTreePipelineChunks,
       .n_constraint = &flat<&straggler_tree_unsupported>,
       .generate = &generate_straggler_tree,
       .closed_form = &straggler_tree_closed_form},
      {.name = "hierarchical",
       .summary = "ring ReduceScatter inside each node, ring AllReduce across nodes on each NIC rail, ring AllGather inside each node",
       .reference = "Traff, Hunold: Decomposing MPI collectives for exploiting multi-lane communication (CLUSTER 2020); "
                    "Jia et al.: Highly scalable deep learning training system with mixed-precision (2018)",
       .supported_n = "n = nodes x GPUs per node of a cluster topology",
       .hierarchical = true,
       .n_constraint = &hierarchical_constraint,
       .generate = &generate_hierarchical,
       .closed_form = &hierarchical_closed_form},
      {.name = "hierarchical_rhd",
       .summary = "ring ReduceScatter inside each node, recursive halving/doubling across nodes on each NIC rail, ring "
                  "AllGather inside each node",
       .reference = "Traff, Hunold: Decomposing MPI collectives for exploiting multi-lane communication (CLUSTER 2020); "
                    "Rabenseifner: Optimization of collective reduction operations (ICCS 2004)",
       .supported_n = "n = nodes x GPUs per node of a cluster topology",
       .hierarchical = true,
       .n_constraint = &hierarchical_constraint,
       .generate = &generate_hierarchical_rhd,
       .closed_form = &hierarchical_rhd_closed_form},
      {.name = "ring_multichannel",
       .summary = "NCCL's multi-channel ring: one ring over every GPU per NIC rail, 1/G of the buffer each, "
                  "NVLink chains inside nodes",
       .reference = "Patarasuk, Yuan: Bandwidth optimal all-reduce algorithms for clusters of workstations (JPDC "
                    "2009); NVIDIA NCCL rings, one channel per NIC",
       .supported_n = "n = nodes x GPUs per node of a cluster topology",
       .hierarchical = true,
       .n_constraint = &hierarchical_constraint,
       .generate = &generate_ring_multichannel,
       .nccl_candidate = true},
      {.name = "nccl_tree",
       .summary = "NCCL's tree: NVLink chains inside nodes, a double binary tree across them per NIC rail, "
                  "pipelined reduce up and broadcast down",
       .reference = "Sanders, Speck, Traeff: Two-tree algorithms for full bandwidth broadcast, reduction and scan "
                    "(Parallel Computing 2009); NCCL 2.4 trees with intra-node chains",
       .supported_n = "n = nodes x GPUs per node of a cluster topology",
       .hierarchical = true,
       .default_pipeline_chunks = kNcclTreePipelineChunks,
       .even_depth_because = "each of a channel's two trees carries half of them",
       .n_constraint = &hierarchical_constraint,
       .generate = &generate_nccl_tree,
       .nccl_candidate = true},
      {.name = "nvls_tree",
       .summary = "NCCL's NVLS + tree: reduce-scatter through each node's NVSwitch, a double binary tree across the "
                  "nodes per NIC rail, all-gather by switch multicast, pipelined",
       .reference = "NVIDIA NCCL 2.18+ NVLSTree algorithm (NVLink SHARP inside nodes, trees between them); Sanders, "
                    "Speck, Traeff: Two-tree algorithms for full bandwidth broadcast, reduction and scan (Parallel "
                    "Computing 2009)",
       .supported_n = "n = nodes x GPUs per node of a cluster topology whose NVSwitches reduce (switch_reduction: true)",
       .hierarchical = true,
       .needs_switch_reduction = true,
       .default_pipeline_chunks = kNvlsTreePipelineChunks,
       .depth_for = &nvls_tree_depth,
       .even_depth_because = "two trees carry half each",
       .n_constraint = &nvls_tree_unsupported,
       .generate = &generate_nvls_tree,
       .nccl_candidate = true,
       .nccl_simple_only = true},
      {.name = "stragglar_cluster",
       .summary = "while one GPU is late the others reduce everything else (nodes, then two trees per rail); then a "
                  "pipelined two-tree broadcast per rail from its node, spread over NVLink as it lands",
       .reference = "collsim's own (docs/stragglar_cluster.md), after Devraj et al. (arXiv 2505.23523) and the two "
                    "trees of Sanders, Speck, Traeff (Parallel Computing 2009)",
       .supported_n = "n = nodes x GPUs per node of a cluster topology",
       .role = AlgorithmRole::Studied,
       .straggler_aware = true,
       .hierarchical = true,
       .default_pipeline_chunks = kStragglarClusterSliceChunks,
       .depth_for = &stragglar_cluster_depth,
       .even_depth_because = "chunks per slice: one per tree and step",
       .n_constraint = &stragglar_cluster_constraint,
       .generate = &generate_stragglar_cluster},
      {.name = "nccl",
       .summary = "NCCL's own choice: the candidate algorithm (ring and double_binary_tree; nvls where the switch reduces; "
                  "ring_multichannel, nccl_tree and nvls_tree on clusters) and protocol with the least predicted time "
                  "for the run's size, topology and link model, run fused",
       .reference = "NCCL src/graph/tuning.cc (per-algorithm, per-protocol latency and bandwidth; minimum predicted time)",
       .supported_n = "every n >= 2",
       .n_constraint = &flat<&ring_unsupported>,
       .generate = &generate_ring,
       .closed_form = &ring_closed_form,
       .closed_form_any_late_rank = true,
       .chosen_per_run = true},
  };
  return kAlgorithms;
}

std::string AlgorithmInfo::pipeline_depth_error(std::uint32_t depth) const {
  if (even_depth_because.empty() || depth % 2 == 0) return "";
  return fmt::format("{}: pipeline_chunks = {} must be even ({})", name, depth, even_depth_because);
}

std::string algorithm_names() {
  std::string names;
  for (const auto& a : all_algorithms()) names += fmt::format("{}{}", names.empty() ? "" : ", ", a.name);
  return names;
}

const AlgorithmInfo* find_algorithm_or_null(std::string_view name) {
  for (const auto& a : all_algorithms()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const AlgorithmInfo& find_algorithm(std::string_view name) {
  if (const AlgorithmInfo* info = find_algorithm_or_null(name)) return *info;
  throw ConfigError(fmt::format("unknown algorithm '{}' (known: {})", quote_excerpt(name), algorithm_names()));
}

Schedule generate_schedule(std::string_view name, const AlgorithmOptions& options) {
  const AlgorithmInfo& info = find_algorithm(name);
  if (options.n < 2) {
    throw ScheduleError(fmt::format("{}: n = {} is not supported (n must be at least 2)", name, options.n));
  }
  NConstraintContext context;
  if (options.gpus_per_node > 0) context.gpus_per_node = options.gpus_per_node;
  if (const std::string why = info.unsupported_reason(options.n, context); !why.empty()) {
    throw ScheduleError(fmt::format("{}: n = {} is not supported: {}", name, options.n, why));
  }
  const Rank straggler = options.straggler.value_or(options.n - 1);
  if (straggler >= options.n) {
    throw ScheduleError(fmt::format("{}: straggler rank {} is out of range for n = {} (valid: 0..{})",
                                    name, straggler, options.n, options.n - 1));
  }
  AlgorithmOptions filled = options;
  if (filled.pipeline_chunks == 0) {
    const bool sized = options.size_bytes > 0 && options.network_latency_s > 0 && options.network_bandwidth_Bps > 0;
    filled.pipeline_chunks = info.depth_for != nullptr && sized ? info.depth_for(options) : info.default_pipeline_chunks;
  }
  if (const std::string why = info.pipeline_depth_error(filled.pipeline_chunks); !why.empty()) throw ScheduleError(why);
  Schedule schedule = info.generate(filled);
  schedule.algorithm = std::string(info.name);
  // A row relabelled at run time keeps the labels it was built with (late ranks n-k..n-1).
  if (info.schedule_depends_on_straggler()) {
    schedule.straggler = options.n - 1;
    if (straggler != options.n - 1) {
      // Give the requested straggler rank n-1's role: flat rows swap the two ranks (every other
      // rank keeps its id), hierarchical rows move whole nodes and NIC groups (below).
      std::vector<Rank> new_rank_of(options.n);
      std::iota(new_rank_of.begin(), new_rank_of.end(), Rank{0});
      const std::uint32_t g = options.gpus_per_node;
      if (info.hierarchical && g > 0) {
        // Keep nodes, NIC groups and leaves whole (NVLink steps stay inside nodes, NIC steps on
        // rails): nodes move by leaf blocks and local indices by NIC groups, the same map on
        // every node, so the schedule meets the fabric as it does with rank n-1 late.
        const Rank nodes = options.n / g, node = straggler / g, local = straggler % g;
        for (Rank r = 0; r < options.n; ++r) {
          const Rank to_node = block_preserving_map(r / g, node, nodes, options.nodes_per_leaf);
          const Rank to_local = block_preserving_map(r % g, local, g, options.gpus_per_nic);
          new_rank_of[r] = to_node * g + to_local;
        }
      } else {
        std::swap(new_rank_of[straggler], new_rank_of[options.n - 1]);
      }
      schedule.relabel(new_rank_of);
    }
  }
  return schedule;
}

std::vector<Rank> run_time_relabelling(const Schedule& schedule, std::span<const Rank> arrival_order) {
  const Rank n = schedule.n;
  const std::uint32_t k = schedule.late_ranks;
  if (k < 1 || k >= n) {
    throw ScheduleError(fmt::format("the {} schedule expects {} late ranks; it must be 1..{} for n = {}",
                                    schedule.algorithm, k, n - 1, n));
  }
  std::vector<bool> seen(n, false);
  for (const Rank r : arrival_order) {
    if (r >= n || seen[r]) break;
    seen[r] = true;
  }
  if (arrival_order.size() != n || std::find(seen.begin(), seen.end(), false) != seen.end()) {
    throw ScheduleError(fmt::format("run-time relabelling of {}: the arrival order is not a permutation of 0..{}",
                                    schedule.algorithm, n - 1));
  }
  const Rank m = n - k;
  std::vector<Rank> new_rank_of(n);
  std::vector<bool> early(n, false);
  for (Rank i = 0; i < m; ++i) early[arrival_order[i]] = true;
  for (Rank j = m; j < n; ++j) new_rank_of[j] = arrival_order[j];
  Rank spare = m;  // early ranks whose number is a late label take the early labels left over
  for (Rank label = 0; label < m; ++label) {
    if (early[label]) {
      new_rank_of[label] = label;
      continue;
    }
    while (!early[spare]) ++spare;
    new_rank_of[label] = spare++;
  }
  return new_rank_of;
}

ClosedFormResult closed_form_time(std::string_view name, ClosedFormInput input) {
  const AlgorithmInfo& info = find_algorithm(name);
  if (!info.has_closed_form()) throw ScheduleError(fmt::format("{} has no closed form (use the replay engine)", name));
  if (input.pipeline_chunks == 0) input.pipeline_chunks = info.default_pipeline_chunks;
  return info.closed_form(input);
}

}  // namespace collsim
