// NVLS + tree AllReduce across H100-class nodes, as NCCL runs it (NCCL 2.18+ "NVLSTree"): inside
// every node a reduce-scatter through the node's NVSwitch (NVLink SHARP), across the nodes a
// double binary tree per NIC rail (Sanders, Speck & Traeff, Parallel Computing 2009; NCCL 2.4),
// then an all-gather through the switch (owner -> switch -> multicast), all pipelined.
//
// n = N nodes x G GPUs per node, rank = node * G + local; switch rank n + k is node k's NVSwitch
// (schedule.hpp). The buffer is P = pipeline_chunks pieces (even) of G chunks: chunk j * G + l is
// piece j of slice l, and local GPU l of every node owns slice l, so piece j of every slice is the
// contiguous range [j G, (j + 1) G). Pieces 2i and 2i + 1 form step i (i < C = P / 2); piece
// 2i + t crosses the nodes on tree t (A or B of double_binary_tree_node_parents), rail l carrying
// slice l: node k's GPU l talks only to GPU l of other nodes, so every NIC hop stays on its rail.
//
// Rounds of the one phase "nvls_tree" (T0 = 2; d = the node's depth in tree t, R = the tree's
// root start, start(k) the node's first send up, pipelined_tree.hpp):
//
//     round i:                every GPU reduces pieces 2i, 2i+1 (2G chunks) into its switch
//     round i + 1:            the switch sends GPU l its chunks of them (reduced over the node)
//     round T0 + i + start(k): GPU l of node k sends piece 2i+t up its rail's tree t (reduce)
//     round T0 + i + R + d(parent): the parent sends it down (copy)
//     round T0 + i + R + d:   GPU l, now holding the full sum, reduces it into the switch
//     round T0 + i + R + d + 1: the switch multicasts it to the node's other G - 1 GPUs
//
//        node k:  g0 g1 g2 g3 --reduce--> [NVSwitch k] --g_l's slice--> g_l   (reduce-scatter)
//                 g_l <==== rail l: tree A / tree B across the nodes ====>     (AllReduce)
//                 g_l --full sum--> [NVSwitch k] --multicast--> the others     (all-gather)
//
// The switch keeps nothing it has multicast (schedule.hpp), so the all-gather's pass through it
// starts a new sum. Each GPU's NIC carries 2 S / G per direction (a tree AllReduce of its slice);
// its NVLink carries S up and S / G down in the reduce-scatter, S / G up and (G - 1) S / G down in
// the all-gather. One GPU per node (G = 1) has nothing to reduce in a switch: the tree alone.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"
#include "pipelined_tree.hpp"

namespace collsim {

std::string nvls_tree_unsupported(Rank n, const NConstraintContext& context) {
  if (context.switch_reduction && !*context.switch_reduction) {
    return "the topology's NVSwitches cannot reduce in the network (its file does not set 'switch_reduction: true')";
  }
  return hierarchical_unsupported(n, context.gpus_per_node.value_or(0));
}

std::uint32_t nvls_tree_depth(const AlgorithmOptions& options) {
  const std::uint32_t g = std::max<std::uint32_t>(options.gpus_per_node, 1);
  const std::uint32_t nodes = std::max<std::uint32_t>(options.n / g, 2);
  // Fill and drain: the two switch rounds at either end and up and down the trees.
  const double fill = 4.0 + 2.0 * std::bit_width(nodes - 1);
  // Time ~ (C + fill) (alpha + S / (G C B)) for C steps: the constant of the bandwidth term is
  // fitted to replay on cluster_h100_1024 (8 MiB to 1 GiB: within 2% of the best even depth).
  // The node's pace: its G NICs carry 2 S / G each, each GPU's NVLink about S each way through
  // the switch (at its efficiency), so beyond 2 B_nv eff / G per NIC the NVLink binds and a
  // NIC-only bandwidth would size the pipeline too shallow (slower with faster NICs).
  // G GPUs sharing G / gpus_per_nic NICs have that many NICs' bandwidth, not G.
  double node_Bps = g * options.network_bandwidth_Bps / std::max<std::uint32_t>(options.gpus_per_nic, 1);
  if (g > 1 && options.nvlink_bandwidth_Bps > 0) {
    node_Bps = std::min(node_Bps, 2 * options.nvlink_bandwidth_Bps * options.switch_efficiency);
  }
  const double steps = std::sqrt(fill * options.size_bytes / (node_Bps * options.network_latency_s));
  // 128 steps bound the transfer count; beyond that, a step's latency outweighs its gain anyway.
  // About 12 transfers per GPU and step: at most 48 x 16,384 GPU-steps keeps 16,384 GPUs at
  // 9.8 M transfers (31-43 s of replay CPU, 0.4 GiB, 7.77 ms at 1 GiB against 7.43 ms at the 84
  // steps the formula asks for, 60 s of CPU); 4,096 GPUs and fewer are not capped.
  constexpr double kGpuSteps = 48.0 * 16384;
  const double cap = std::clamp(std::floor(kGpuSteps / std::max<Rank>(options.n, 1)), 1.0, 128.0);
  return 2 * static_cast<std::uint32_t>(std::clamp(std::round(steps), 1.0, cap));
}

Schedule generate_nvls_tree(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = hierarchical_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("nvls_tree: n = {} is not supported: {}", n, why));
  }
  const std::uint32_t pieces = options.pipeline_chunks;
  COLLSIM_ASSERT(pieces > 0 && pieces % 2 == 0, "generate_schedule() gives an even pipeline depth (table row)");
  if (static_cast<std::uint64_t>(pieces) * g > 0xFFFFFFu || 2ull * g > 0xFFFF) {
    throw ScheduleError(fmt::format("nvls_tree: pipeline_chunks = {} must give at most 2^24 chunks with {} GPUs per node",
                                    pieces, g));
  }
  const std::uint32_t steps = pieces / 2;
  const std::uint32_t nodes = n / g;
  const bool intra = g > 1;  // one GPU per node has nothing to reduce in its switch
  const std::uint32_t t0 = intra ? 2 : 0;
  const std::array<PipelinedTree, 2> trees{plan_pipelined_tree(double_binary_tree_node_parents(nodes, 0)),
                                           plan_pipelined_tree(double_binary_tree_node_parents(nodes, 1))};
  std::uint32_t rounds = 0;
  for (const PipelinedTree& tree : trees) {
    // The deepest node holds the last step complete from this round: it then passes it through
    // its switch in two more rounds (without switches, the broadcast into it was the last round).
    const std::uint32_t complete = t0 + steps - 1 + tree.root_start + tree.max_depth;
    rounds = std::max(rounds, intra ? complete + 2 : complete);
  }

  Schedule s;
  s.n = n;
  s.num_chunks = pieces * g;
  s.num_switch_ranks = intra ? nodes : 0;
  Phase& phase = s.add_phase("nvls_tree");
  std::vector<std::uint32_t> sends(n), receives(n);
  std::uint32_t ports = 1;
  const auto add = [&](Rank src, Rank dst, std::uint32_t chunk, std::uint32_t count, Op op) {
    phase.add(src, dst, chunk, count, op);
    if (src < n) ++sends[src];
    if (dst < n) ++receives[dst];
  };
  // The step taken in `round` by a transfer whose step 0 is in round `first`, if any.
  const auto step_of = [steps](std::uint32_t round, std::uint32_t first) -> std::optional<std::uint32_t> {
    if (round >= first && round - first < steps) return round - first;
    return std::nullopt;
  };
  for (std::uint32_t round = 0; round < rounds; ++round) {
    phase.begin_round();
    std::fill(sends.begin(), sends.end(), 0);
    std::fill(receives.begin(), receives.end(), 0);
    for (std::uint32_t k = 0; k < nodes; ++k) {
      const Rank sw = n + k;
      if (intra) {
        if (round < steps) {
          for (std::uint32_t l = 0; l < g; ++l) add(k * g + l, sw, 2 * round * g, 2 * g, Op::Reduce);
        }
        if (const auto i = step_of(round, 1); i) {
          for (std::uint32_t l = 0; l < g; ++l) {
            for (std::uint32_t t = 0; t < 2; ++t) add(sw, k * g + l, (2 * *i + t) * g + l, 1, Op::Copy);
          }
        }
      }
      for (std::uint32_t t = 0; t < 2; ++t) {
        const PipelinedTree& tree = trees[t];
        const Rank parent = tree.parent[k];
        for (std::uint32_t l = 0; l < g; ++l) {
          const Rank me = k * g + l;
          if (parent != kNoParent) {
            if (const auto i = step_of(round, t0 + tree.up_step(k, 0)); i) {
              add(me, parent * g + l, (2 * *i + t) * g + l, 1, Op::Reduce);
            }
            if (const auto i = step_of(round, t0 + tree.down_step(k, 0)); i) {
              add(parent * g + l, me, (2 * *i + t) * g + l, 1, Op::Copy);
            }
          }
          if (!intra) continue;
          if (const auto i = step_of(round, t0 + tree.complete_from(k, 0)); i) {
            add(me, sw, (2 * *i + t) * g + l, 1, Op::Reduce);
          }
          // The multicast of piece 2i+t: every GPU l gets the other GPUs' slices, in at most two ranges.
          if (const auto i = step_of(round, t0 + tree.complete_from(k, 0) + 1); i) {
            const std::uint32_t base = (2 * *i + t) * g;
            if (l > 0) add(sw, me, base, l, Op::Copy);
            if (l + 1 < g) add(sw, me, base + l + 1, g - 1 - l, Op::Copy);
          }
        }
      }
    }
    for (Rank r = 0; r < n; ++r) ports = std::max({ports, sends[r], receives[r]});
  }
  s.ports = ports;
  return s;
}

}  // namespace collsim
