// stragglar_cluster: StragglAR's insight carried to a multi-node cluster. While one GPU is late,
// every other GPU reduces everything that does not need it; when it arrives, its contribution is
// pushed through one pipelined broadcast per NIC rail, rooted at the straggler's node, and spread
// inside every node as it lands. Our own design for collsim (docs/stragglar_cluster.md); the
// trees are the two complementary binary trees of NCCL's double binary tree (Sanders, Speck,
// Traeff, Parallel Computing 2009), the delay-hiding idea that of Devraj et al. (arXiv 2505.23523).
//
// n = N nodes x G GPUs; rank = node * G + l. The straggler is rank n-1: GPU G-1 of node N-1 (the
// "late node"); its other GPUs are the "peers". Slice l of the buffer (2P chunks) travels on rail
// l; step j of a slice is its chunks 2j (tree A) and 2j+1 (tree B). The N-1 other ("ready")
// nodes form trees A and B, two heap-shaped binary trees with each node inner in at most one
// (heap_tree_pair.hpp: numbered in order, so subtrees are runs of neighbouring nodes); on rail l
// both trees hang below the late node's GPU l, the rail's "top".
//
//   before the straggler arrives                     after it arrives (chunk c in round c, step j
//                                                    of the trees in period j+1: rounds 2j+2, 2j+3)
//   ready nodes: ring ReduceScatter of slices        straggler -> peer l: its chunk c of slice l
//   late node:   peers ring-RS slices 0..G-2,        keeper(c) -> straggler: chunk c of slice G-1
//                gather slice G-1 (chunk c at a      top of rail l: final chunk c -> its node's
//                "keeper" peer, c mod (G-1))         GPUs; final step j -> both tree roots
//   rails: pipelined reduce up trees A and B,        tree node at depth d: step j in period
//          one period per level, into the top        j+1+d, to its children in the next; every
//          (rail G-1: into the keepers)              G-1 steps, the block to the other GPUs of
//                                                    its node, one GPU per round in rotation
//
// Tree messages use the slot (round of the period) given by the edge's colour, as in NCCL's
// double binary tree, so every NIC sends and receives one chunk per round. Rail G-1's top is
// the straggler itself; it hands each final chunk of slice G-1 to its keeper, which forwards it
// to the other peers (so the straggler sends S, not 2 S, over NVLink). With one GPU per node, or
// one node, the schedule is flat StragglAR (see generate_stragglar_cluster). After
// the arrival every NIC carries one slice (S/G bytes), the lower bound (every other node must
// receive S bytes that depend on the straggler through its G NICs), in about P + D + 2 periods
// (D the trees' depth). ports = the most transfers a rank starts in one round (a rank drives its
// NVLink and its NIC at once).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"
#include "heap_tree_pair.hpp"

namespace collsim {
namespace {

std::uint32_t depth_of(std::uint32_t p) { return static_cast<std::uint32_t>(std::bit_width(p + 1)) - 1; }

std::uint32_t height_of(std::uint32_t p, std::uint32_t size) {
  std::uint32_t h = 0;
  for (std::uint64_t q = p; 2 * q + 1 < size; q = 2 * q + 1) ++h;
  return h;
}

// A phase built from transfers tagged with their round, emitted in round order.
struct RoundBuffer {
  std::vector<std::vector<Transfer>> rounds;
  void add(std::size_t round, Rank src, Rank dst, std::uint32_t chunk, std::uint32_t count, Op op) {
    if (rounds.size() <= round) rounds.resize(round + 1);
    rounds[round].push_back({src, dst, chunk, static_cast<std::uint16_t>(count), op});
  }
  void emit(Phase& phase) const {
    std::size_t total = 0;
    for (const auto& r : rounds) total += r.size();
    phase.reserve(total);
    for (const auto& r : rounds) {
      if (r.empty()) continue;
      phase.begin_round();
      for (const Transfer& t : r) phase.add(t.src, t.dst, t.chunk_begin, t.chunk_count, t.op);
    }
  }
};

// The most sends or receives one rank has in one round of `s`.
std::uint32_t ports_used(const Schedule& s) {
  std::vector<std::uint32_t> sends(s.n, 0), recvs(s.n, 0);
  std::uint32_t most = 1;
  for (const Phase& phase : s.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      for (const Transfer& t : phase.round(r)) {
        most = std::max({most, ++sends[t.src], ++recvs[t.dst]});
      }
      for (const Transfer& t : phase.round(r)) sends[t.src] = recvs[t.dst] = 0;
    }
  }
  return most;
}

}  // namespace

std::string stragglar_cluster_unsupported(Rank n, std::uint32_t gpus_per_node) {
  return hierarchical_unsupported(n, gpus_per_node);
}

std::uint32_t stragglar_cluster_depth(const AlgorithmOptions& options) {
  const std::uint32_t g = std::max<std::uint32_t>(options.gpus_per_node, 1);
  const std::uint32_t nodes = std::max<std::uint32_t>(options.n / g, 2);
  const double depth = std::bit_width(nodes - 1);
  // A round after the arrival moves one chunk through each GPU's NIC, shared by gpus_per_nic
  // GPUs, and G-1 chunks over its NVLink (the block swaps of the ready nodes): the slower of
  // the two sets the pace. Sizing on the NIC alone made faster NICs slower once NVLink bound
  // (4.35 ms at 1600 Gb/s against 3.95 ms at 800 Gb/s, 12 x 8 GPUs, 1 GiB, 30 ms late).
  double per_gpu_Bps = options.network_bandwidth_Bps / std::max<std::uint32_t>(options.gpus_per_nic, 1);
  if (g > 1 && options.nvlink_bandwidth_Bps > 0) per_gpu_Bps = std::min(per_gpu_Bps, options.nvlink_bandwidth_Bps / (g - 1));
  const double slice_time_s = options.size_bytes / (g * per_gpu_Bps);
  const double steps = std::sqrt((depth + 2) * slice_time_s / (2 * options.network_latency_s));
  // 64 steps bound the transfer count; beyond that, a step's latency outweighs its gain anyway.
  return 2 * static_cast<std::uint32_t>(std::clamp(std::round(steps), 1.0, 64.0));
}

Schedule generate_stragglar_cluster(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = stragglar_cluster_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("stragglar_cluster: n = {} is not supported: {}", n, why));
  }
  const std::uint32_t nodes = n / g;
  if (nodes == 1 || g == 1) {
    // One node: nothing crosses a NIC, and StragglAR itself is the answer. One GPU per node: a
    // node-level StragglAR is StragglAR over the GPUs, and the trees lose to it there (each
    // root hands its sums to the straggler and feeds its children, 1.5 slices on its NIC after
    // the arrival): 65.65 against 53.84 ms at 96 nodes, 74.46 against 60.13 ms at 6, 1 GiB, 30 ms
    // late (docs/stragglar_cluster.md).
    AlgorithmOptions flat = options;
    flat.gpus_per_node = 0;
    return generate_stragglar(flat);
  }
  const std::uint32_t slice_chunks = options.pipeline_chunks;
  COLLSIM_ASSERT(slice_chunks > 0 && slice_chunks % 2 == 0, "generate_schedule() gives an even pipeline depth (table row)");
  if (slice_chunks > 0xFFFF || static_cast<std::uint64_t>(slice_chunks) * g > 0xFFFFFFFFull) {
    throw ScheduleError(fmt::format("stragglar_cluster: pipeline_chunks = {} must be at most 65534", slice_chunks));
  }
  const std::uint32_t steps = slice_chunks / 2;
  const std::uint32_t ready = nodes - 1;  // nodes 0..ready-1; node `ready` is the late node
  const Rank straggler = n - 1;
  const Rank late_base = ready * g;
  const std::uint32_t peers = g - 1;
  // The peer that collects chunk c of slice G-1 (the straggler's rail) before the arrival.
  auto keeper = [late_base, peers](std::uint32_t c) { return late_base + c % peers; };
  auto rank = [g](std::uint32_t node, std::uint32_t l) { return node * g + l; };
  auto chunk = [slice_chunks](std::uint32_t l, std::uint32_t c) { return l * slice_chunks + c; };
  // Tree t (0 = A, 1 = B): heap position p holds ready node trees.vertex_at[t][p].
  const HeapTreePair trees = heap_tree_pair(ready);
  auto node_at = [&trees](int t, std::uint32_t p) { return trees.vertex_at[t][p]; };

  Schedule s;
  s.n = n;
  s.num_chunks = g * slice_chunks;
  s.straggler = straggler;

  // Phase 1: every ready node reduce-scatters its G slices; the late node's peers reduce-scatter
  // slices 0..G-2 among themselves and gather each chunk of slice G-1 at its keeper.
  {
    std::vector<std::vector<Rank>> members(nodes);
    std::vector<RingSpec> rings;
    for (std::uint32_t node = 0; node < nodes; ++node) {
      const std::uint32_t size = node < ready ? g : g - 1;
      for (std::uint32_t l = 0; l < size; ++l) members[node].push_back(rank(node, l));
    }
    for (const auto& m : members) {
      if (m.size() > 1) rings.push_back(RingSpec{m, 0, slice_chunks});
    }
    if (!rings.empty()) append_rings_reduce_scatter(s.add_phase("intra_reduce_scatter"), rings);
    if (peers >= 2) {
      // Chunk c of slice G-1 gathers at peer keeper(c): in round q-1 every peer i sends the
      // chunks kept by peer i+q (mod peers), so no chunk is written twice in one round.
      RoundBuffer last;
      for (std::uint32_t q = 1; q < peers; ++q) {
        for (std::uint32_t i = 0; i < peers; ++i) {
          const std::uint32_t owner = (i + q) % peers;
          for (std::uint32_t c = owner; c < slice_chunks; c += peers) {
            last.add(q - 1, late_base + i, late_base + owner, chunk(g - 1, c), 1, Op::Reduce);
          }
        }
      }
      last.emit(s.add_phase("late_node_reduce_last_slice"));
    }
  }

  std::vector<std::uint32_t> height[2], depth[2];  // per ready node, per tree
  for (int t = 0; t < 2; ++t) {
    height[t].resize(ready);
    depth[t].resize(ready);
    for (std::uint32_t p = 0; p < ready; ++p) {
      height[t][node_at(t, p)] = height_of(p, ready);
      depth[t][node_at(t, p)] = depth_of(p);
    }
  }
  // Tree edges are used in periods of two rounds, in the slot given by the edge's colour (as in
  // NCCL's double binary tree): the edge from ready node v to its parent in tree t has colour
  // trees.colour[t][v]. Siblings differ, and so do a node's two parent edges and the two roots'
  // edges to the rail's top (heap_tree_pair.hpp): every NIC sends and receives at most one tree
  // message per round. That keeps each round at one chunk per NIC and keeps the engines'
  // bandwidth sharing local (NICs taking two flows at once chained every node of a rail into one
  // sharing problem).
  auto colour = [&trees](int t, std::uint32_t v) -> std::uint32_t { return trees.colour[t][v]; };
  auto root_of = [&](int t) { return node_at(t, 0); };

  // Phase 2: on every rail, pipelined reduce up both trees into the rail's top, a peer. Rail
  // G-1's top is the straggler: its roots hand chunk c to keeper(c) instead, spreading that
  // extra NIC load over the peers, so that every peer holds what it adds before the arrival.
  // A node of height h reports step j in period j + h, after its children (height <= h-1).
  {
    RoundBuffer up;
    for (std::uint32_t l = 0; l < g; ++l) {
      for (int t = 0; t < 2; ++t) {
        for (std::uint32_t p = 0; p < ready; ++p) {
          const std::uint32_t node = node_at(t, p);
          const bool root = p == 0;
          for (std::uint32_t j = 0; j < steps; ++j) {
            const std::uint32_t c = 2 * j + static_cast<std::uint32_t>(t);
            const Rank dst = !root ? rank(node_at(t, (p - 1) / 2), l) : l == g - 1 ? keeper(c) : late_base + l;
            up.add(2 * (j + height[t][node]) + colour(t, node), rank(node, l), dst, chunk(l, c), 1, Op::Reduce);
          }
        }
      }
    }
    up.emit(s.add_phase("inter_reduce"));
  }

  // Phase 3, after the arrival. Chunk c = 2j + t of every slice is final at its top after round
  // c (the straggler adds its part over NVLink one chunk per round); the tops send step j down
  // in period j + 1, and a ready node at depth d of tree t receives it in period j + 1 + d.
  {
    RoundBuffer done;
    for (std::uint32_t c = 0; c < slice_chunks; ++c) {
      for (std::uint32_t l = 0; l < peers; ++l) done.add(c, straggler, late_base + l, chunk(l, c), 1, Op::Reduce);
      done.add(c, keeper(c), straggler, chunk(g - 1, c), 1, Op::Reduce);
    }
    // The late node: a peer top sends each final chunk of its slice to every other GPU of the
    // node. The straggler hands each final chunk of slice G-1 to its keeper, which passes it on
    // to one other peer per round, so that the straggler sends S over NVLink (not 2 S) and no
    // GPU carries more than about one chunk per peer and round.
    for (std::uint32_t c = 0; c < slice_chunks; ++c) {
      for (std::uint32_t l = 0; l < peers; ++l) {
        for (std::uint32_t k = 0; k < g; ++k) {
          if (k != l) done.add(c + 2, late_base + l, late_base + k, chunk(l, c), 1, Op::Copy);
        }
      }
      done.add(c + 2, straggler, keeper(c), chunk(g - 1, c), 1, Op::Copy);
      // In round c+2+i the keeper sends to peer (c - i) mod (G-1): for an odd number of peers
      // the keepers at work in one round then all reach different peers.
      for (std::uint32_t i = 1; i < peers; ++i) {
        const Rank to = late_base + (c % peers + peers - i) % peers;
        done.add(c + 2 + i, keeper(c), to, chunk(g - 1, c), 1, Op::Copy);
      }
    }
    // The rails: the top, then every ready node, sends step j on to its children in the tree.
    for (std::uint32_t l = 0; l < g; ++l) {
      for (std::uint32_t j = 0; j < steps; ++j) {
        for (int t = 0; t < 2; ++t) {
          const std::uint32_t c = chunk(l, 2 * j + static_cast<std::uint32_t>(t));
          const std::uint32_t r0 = root_of(t);
          done.add(2 * (j + 1) + colour(t, r0), late_base + l, rank(r0, l), c, 1, Op::Copy);
          for (std::uint32_t p = 0; p < ready; ++p) {
            const std::uint32_t node = node_at(t, p);
            for (const std::uint32_t q : {2 * p + 1, 2 * p + 2}) {
              if (q >= ready) continue;
              const std::uint32_t child = node_at(t, q);
              done.add(2 * (j + 2 + depth[t][node]) + colour(t, child), rank(node, l), rank(child, l), c, 1, Op::Copy);
            }
          }
        }
      }
    }
    // A ready node's GPUs pass their slices to each other in blocks of G-1 steps: half a block
    // per round, to one GPU at a time in rotation (GPU l to l+1+i), so every NVLink carries one
    // flow at a time and a round's NVLink share (G-1 chunks) takes less than its NIC chunk.
    for (std::uint32_t node = 0; node < ready; ++node) {
      const std::size_t settle = 1 + std::max(depth[0][node], depth[1][node]);
      std::size_t next_free = 0;
      for (std::uint32_t first = 0; first < steps; first += peers) {
        const std::uint32_t len = std::min(peers, steps - first);
        const std::size_t start = std::max(2 * (first + len + settle), next_free);
        for (std::uint32_t i = 0; i < peers; ++i) {
          for (std::uint32_t half = 0; half < 2; ++half) {
            for (std::uint32_t l = 0; l < g; ++l) {
              done.add(start + 2 * i + half, rank(node, l), rank(node, (l + 1 + i) % g),
                       chunk(l, 2 * first + half * len), len, Op::Copy);
            }
          }
        }
        next_free = start + 2 * peers;
      }
    }
    done.emit(s.add_phase("completion"));
  }
  s.ports = ports_used(s);
  return s;
}

}  // namespace collsim
