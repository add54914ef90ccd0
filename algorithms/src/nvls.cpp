// NVLS AllReduce: every GPU's data is reduced in the NVSwitch and multicast back, as NCCL's
// NVLS algorithm does on H100-class NVSwitch systems (multimem.ld_reduce / multimem.st).
//
// The schedule uses one switch rank, s = n (Schedule::num_switch_ranks = 1; see schedule.hpp for
// what a switch rank is). The buffer is cut into C = pipeline_chunks chunks and pipelined: in
// round k every GPU reduces chunk k into the switch and the switch multicasts chunk k-1 (reduced
// in round k-1) to every GPU, so the switch's reduction of one chunk overlaps its multicast of
// the one before, as NCCL pipelines NVLS. Rounds 0..C, one phase "nvls":
//
//     round 0:      g -> s reduce chunk 0                         (every GPU g)
//     round k:      g -> s reduce chunk k,   s -> g copy chunk k-1  (1 <= k < C)
//     round C:                               s -> g copy chunk C-1
//
// Each GPU sends and receives once per round (one port). The switch enters round k+1 only when
// all n contributions of round k have arrived, so a late GPU holds the multicast of chunk 0 and,
// through it, everything after: time = delay + (C + 1) (alpha/2 + (s/C) beta), each transfer
// using one NVLink direction of one GPU (models/src/closed_form.cpp).
#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace collsim {

std::string nvls_unsupported(Rank n, const NConstraintContext& context) {
  if (context.switch_reduction && !*context.switch_reduction) {
    return "the topology's NVSwitch cannot reduce in the network (its file does not set 'switch_reduction: true')";
  }
  // One switch rank: the GPUs must share one node's NVSwitch. Across nodes NCCL runs NVLS with a
  // tree between the nodes, which is nvls_tree (nvls_tree.cpp).
  if (context.gpus_per_node && n > *context.gpus_per_node) {
    return fmt::format("the {} GPUs span several nodes of {}; nvls reduces in one node's NVSwitch (nvls_tree runs across nodes)", n,
                       *context.gpus_per_node);
  }
  return "";
}

std::uint32_t nvls_depth(const AlgorithmOptions& options) {
  // The pipeline costs (C + 1) (alpha/2 + s / (C B_eff)), least at C* = sqrt(2 s / (alpha B_eff)).
  // Never below 16: NCCL cuts the buffer over its 16 NVLS channels, and at small sizes, where C*
  // would be 1 or 2, the fused kernel still streams 128 KiB steps rather than a whole buffer at a
  // time. Capped so a huge buffer on a tiny latency cannot make a schedule of millions of rounds.
  constexpr double kMinDepth = 16;
  constexpr double kMaxDepth = 1024;
  const double effective_Bps = options.network_bandwidth_Bps * options.switch_efficiency;
  const double best = std::sqrt(2 * options.size_bytes / (options.network_latency_s * effective_Bps));
  return static_cast<std::uint32_t>(std::clamp(std::round(best), kMinDepth, kMaxDepth));
}

Schedule generate_nvls(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t chunks = options.pipeline_chunks;
  COLLSIM_ASSERT(chunks > 0, "generate_schedule() fills in the default pipeline depth");
  Schedule s;
  s.n = n;
  s.num_chunks = chunks;
  s.num_switch_ranks = 1;
  const Rank sw = n;
  Phase& phase = s.add_phase("nvls");
  phase.reserve(static_cast<std::size_t>(2) * n * chunks);
  for (std::uint32_t k = 0; k <= chunks; ++k) {
    phase.begin_round();
    for (Rank g = 0; g < n; ++g) {
      if (k < chunks) phase.add(g, sw, k, 1, Op::Reduce);
      if (k > 0) phase.add(sw, g, k - 1, 1, Op::Copy);
    }
  }
  return s;
}

}  // namespace collsim
