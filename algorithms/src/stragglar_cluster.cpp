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
// nodes form tree A (binary heap over nodes 0..N-2) and tree B (the same heap over them in
// reverse order); on rail l both trees hang below the late node's GPU l, the rail's "top".
//
//   before the straggler arrives                     after it arrives (round r, pipelined)
//   ready nodes: ring ReduceScatter of slices        straggler -> peer l: its step r of slice l
//   late node:   peers ring-RS slices 0..G-2,        keepers -> straggler: step r of slice G-1
//                gather slice G-1 (chunk c at a      top of rail l: step r final -> both tree
//                "keeper" peer, c mod (G-1))         roots and every GPU of its node
//   rails: pipelined reduce up trees A and B         tree node: final step -> its children and
//          into the top (rail G-1: the keepers)      every GPU of its node, one round later
//
// Rail G-1's top is the straggler itself; it hands each final chunk of slice G-1 to its keeper,
// which forwards it to the other peers (so the straggler sends S, not 2 S, over NVLink). With
// one GPU per node there are no peers: the roots then hand their sums to the straggler after the
// arrival, one round later. After the arrival every NIC carries one slice
// (S/G bytes) and the straggler sends S over NVLink, against the lower bound of S/G per NIC
// (every other node must receive S bytes that depend on the straggler through its G NICs); the
// rest is P + tree depth + 3 rounds of latency. ports = the most transfers a rank starts in one
// round (a rank drives its NVLink and its NIC at once).
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/models/error.hpp"

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

Schedule generate_stragglar_cluster(const AlgorithmOptions& options) {
  const Rank n = options.n;
  const std::uint32_t g = options.gpus_per_node;
  if (const std::string why = stragglar_cluster_unsupported(n, g); !why.empty()) {
    throw ScheduleError(fmt::format("stragglar_cluster: n = {} is not supported: {}", n, why));
  }
  const std::uint32_t nodes = n / g;
  if (nodes == 1) {
    // One node: nothing crosses a NIC, and StragglAR itself is the answer.
    AlgorithmOptions flat = options;
    flat.gpus_per_node = 0;
    return generate_stragglar(flat);
  }
  const std::uint32_t slice_chunks = options.pipeline_chunks;
  if (slice_chunks < 2 || slice_chunks % 2 != 0 || slice_chunks > 0xFFFF ||
      static_cast<std::uint64_t>(slice_chunks) * g > 0xFFFFFFFFull) {
    throw ScheduleError(fmt::format(
        "stragglar_cluster: pipeline_chunks = {} must be an even number from 2 to 65534 (chunks per slice: one per "
        "tree and step)",
        slice_chunks));
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
  // Tree t (0 = A, 1 = B): heap position p holds this ready node.
  auto node_at = [ready](int t, std::uint32_t p) { return t == 0 ? p : ready - 1 - p; };

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

  // Phase 2: on every rail, pipelined reduce up both trees into the rail's top, a peer. Rail
  // G-1's top is the straggler: its roots hand chunk c to keeper(c) instead, spreading that
  // extra NIC load over the peers, so that every peer holds what it adds before the arrival.
  {
    RoundBuffer up;
    for (std::uint32_t l = 0; l < g; ++l) {
      for (int t = 0; t < 2; ++t) {
        for (std::uint32_t p = 0; p < ready; ++p) {
          const std::uint32_t node = node_at(t, p);
          const bool root = p == 0;
          if (root && l == g - 1 && peers == 0) continue;
          // A node sends step j in round j + 2 height (+1 for a right child, at even positions):
          // a parent hears from both children before it reports, and never from both in one
          // round about the same chunk (two reductions into one chunk may not share a round).
          const std::uint32_t lag = 2 * height[t][node] + (!root && p % 2 == 0 ? 1u : 0u);
          for (std::uint32_t j = 0; j < steps; ++j) {
            const std::uint32_t c = 2 * j + static_cast<std::uint32_t>(t);
            const Rank dst = !root ? rank(node_at(t, (p - 1) / 2), l) : l == g - 1 ? keeper(c) : late_base + l;
            up.add(j + lag, rank(node, l), dst, chunk(l, c), 1, Op::Reduce);
          }
        }
      }
    }
    up.emit(s.add_phase("inter_reduce"));
  }

  // Phase 3, after the arrival. The top of rail l holds step j final after round j + lag - 1;
  // a ready node at depth d of tree t receives it in round j + lag + d and passes it on (down its
  // tree and to its node) in the next round.
  {
    RoundBuffer done;
    for (std::uint32_t j = 0; j < steps; ++j) {
      for (std::uint32_t l = 0; l < peers; ++l) {
        done.add(j, straggler, late_base + l, chunk(l, 2 * j), 2, Op::Reduce);
      }
      for (std::uint32_t c = 2 * j; c < 2 * j + 2; ++c) {
        if (peers > 0) {
          done.add(j, keeper(c), straggler, chunk(g - 1, c), 1, Op::Reduce);
        } else {
          // One GPU per node: nobody ready shares the straggler's node, so the tree roots hand
          // their sums over after the arrival, and rail 0 runs one round behind.
          done.add(j + 1, rank(node_at(static_cast<int>(c - 2 * j), 0), 0), straggler, chunk(0, c), 1, Op::Reduce);
        }
      }
    }
    for (std::uint32_t l = 0; l < g; ++l) {
      const Rank top = late_base + l;
      const std::uint32_t lag = peers == 0 ? 2 : 1;
      for (std::uint32_t j = 0; j < steps; ++j) {
        const std::size_t final_round = j + lag - 1;
        for (int t = 0; t < 2; ++t) done.add(final_round + 1, top, rank(node_at(t, 0), l), chunk(l, 2 * j + t), 1, Op::Copy);
        // The top's node: a peer top sends the step to every other GPU. The straggler (rail G-1)
        // hands each chunk of the step to one peer, which forwards it: the straggler then sends
        // S over NVLink, not 2 S, and no peer forwards more than one chunk per round on top of
        // its own step (a peer sending a whole extra step would set the pace of every round).
        if (l < peers) {
          for (std::uint32_t k = 0; k < g; ++k) {
            if (k != l) done.add(final_round + 1, top, late_base + k, chunk(l, 2 * j), 2, Op::Copy);
          }
        } else if (peers > 0) {
          for (std::uint32_t c = 2 * j; c < 2 * j + 2; ++c) {
            const Rank helper = keeper(c);
            done.add(final_round + 1, top, helper, chunk(l, c), 1, Op::Copy);
            for (std::uint32_t k = 0; k < peers; ++k) {
              if (late_base + k != helper) done.add(final_round + 2, helper, late_base + k, chunk(l, c), 1, Op::Copy);
            }
          }
        }
        for (int t = 0; t < 2; ++t) {
          for (std::uint32_t p = 0; p < ready; ++p) {
            const std::uint32_t node = node_at(t, p);
            const std::size_t got = j + lag + depth[t][node];
            const Rank self = rank(node, l);
            const std::uint32_t c = chunk(l, 2 * j + t);
            for (const std::uint32_t q : {2 * p + 1, 2 * p + 2}) {
              if (q < ready) done.add(got + 1, self, rank(node_at(t, q), l), c, 1, Op::Copy);
            }
            for (std::uint32_t k = 0; k < g; ++k) {
              if (k != l) done.add(got + 1, self, rank(node, k), c, 1, Op::Copy);
            }
          }
        }
      }
    }
    done.emit(s.add_phase("completion"));
  }
  s.ports = ports_used(s);
  return s;
}

}  // namespace collsim
