// Topology factories and routes. Routes are formulas of the GPU indices (dgx1: a small table),
// so a cluster of 8,192 GPUs costs a few hundred kilobytes, not n^2 routes.
#include "collsim/models/topology.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

// NVLink counts of the DGX-1 with V100 (six NVLinks per GPU, 25 GB/s per direction each):
// two fully connected quads {0,1,2,3} and {4,5,6,7} plus the links i <-> i+4, i.e. a cube
// whose twelve edges all carry NVLinks (some doubled) with the diagonals of two faces added.
// Matches `nvidia-smi topo -m` on a DGX-1V; the row sums are all 6.
constexpr std::array<std::array<std::uint32_t, kDgx1Gpus>, kDgx1Gpus> kDgx1NvlinkCount{{
    {0, 1, 1, 2, 2, 0, 0, 0},
    {1, 0, 2, 1, 0, 2, 0, 0},
    {1, 2, 0, 2, 0, 0, 1, 0},
    {2, 1, 2, 0, 0, 0, 0, 1},
    {2, 0, 0, 0, 0, 1, 1, 2},
    {0, 2, 0, 0, 1, 0, 2, 1},
    {0, 0, 1, 0, 1, 2, 0, 2},
    {0, 0, 0, 1, 2, 1, 2, 0},
}};

void check_link_model(const LinkModel& link, std::string_view what) {
  if (!(link.bandwidth_Bps > 0) || !std::isfinite(link.bandwidth_Bps)) {
    throw ConfigError(fmt::format("{}: bandwidth {} B/s must be positive and finite", what, link.bandwidth_Bps));
  }
  if (!(link.latency_s >= 0) || !std::isfinite(link.latency_s)) {
    throw ConfigError(fmt::format("{}: latency {} s must be >= 0 and finite", what, link.latency_s));
  }
  if (!(link.gamma_s_per_byte >= 0) || !std::isfinite(link.gamma_s_per_byte)) {
    throw ConfigError(fmt::format("{}: gamma {} s/B must be >= 0 and finite", what, link.gamma_s_per_byte));
  }
}

void check_n(std::uint32_t n, std::string_view what) {
  if (n < 1) throw ConfigError(fmt::format("{}: n = {} but a topology needs at least 1 GPU", what, n));
}

std::uint32_t full_mesh_link(std::uint32_t n, std::uint32_t src, std::uint32_t dst) {
  return src * (n - 1) + (dst < src ? dst : dst - 1);
}

// NIC of a GPU among its node's: consecutive GPUs share one (topology.hpp).
std::uint32_t local_nic(const ClusterSpec& c, std::uint32_t gpu) {
  return gpu % c.gpus_per_node / (c.gpus_per_node / c.nics());
}

// Nodes of a cluster of n GPUs, the last one possibly partial. In 64 bits: n + gpus_per_node - 1
// wrapped in 32 for node sizes near 2^32 (0 nodes for 16 GPUs in nodes of 4294967295).
std::uint32_t node_count(std::uint32_t n, std::uint32_t gpus_per_node) {
  return static_cast<std::uint32_t>((std::uint64_t{n} + gpus_per_node - 1) / gpus_per_node);
}

// Number of leaves and NICs under one leaf of a cluster (leaf radix in NICs). The radix is a
// product of two file values and may pass 2^32: nodes_per_leaf 2^31 x 8 NICs wrapped to a leaf
// of 0 NICs, a link of 0 B/s, refused without naming the key.
struct LeafLayout {
  std::uint32_t leaves = 0;
  double nics_per_leaf = 0;
};

LeafLayout leaf_layout(std::uint32_t n, const ClusterSpec& c) {
  if (n == 0) return {};
  const std::uint32_t nodes = node_count(n, c.gpus_per_node);
  const auto groups = static_cast<std::uint32_t>((std::uint64_t{nodes} + c.nodes_per_leaf - 1) / c.nodes_per_leaf);
  if (!c.rail_optimized) return {groups, static_cast<double>(c.nodes_per_leaf) * c.nics()};
  // A leaf per rail of each group, but only for the rails that have a NIC: a last group made of
  // one partial node reaches only its first rails. Counting every rail there made a leaf per
  // declared NIC (3,000,000,000 for 16 GPUs in nodes of that many, "out of memory").
  const std::uint32_t nodes_in_last_group = nodes - (groups - 1) * c.nodes_per_leaf;
  const bool last_node_full = n % c.gpus_per_node == 0;
  const std::uint32_t rails_in_last_group =
      nodes_in_last_group >= 2 || last_node_full ? c.nics() : local_nic(c, n - 1) + 1;
  return {(groups - 1) * c.nics() + rails_in_last_group, static_cast<double>(c.nodes_per_leaf)};
}

std::uint32_t cluster_nic(const ClusterSpec& c, std::uint32_t gpu) {
  return gpu / c.gpus_per_node * c.nics() + local_nic(c, gpu);
}

std::uint32_t cluster_leaf(const ClusterSpec& c, std::uint32_t gpu) {
  const std::uint32_t node = gpu / c.gpus_per_node;
  const std::uint32_t group = node / c.nodes_per_leaf;
  return c.rail_optimized ? group * c.nics() + local_nic(c, gpu) : group;
}

// The GPU whose NIC carries a send from src to dst on another node: src itself, or with PXN its
// node peer on dst's rail (the one at src's place among the GPUs sharing that NIC). A partial
// last node may lack that peer: src then sends itself.
std::uint32_t sending_gpu(const ClusterSpec& c, std::uint32_t n, std::uint32_t src, std::uint32_t dst) {
  if (!c.pxn || local_nic(c, src) == local_nic(c, dst)) return src;
  const std::uint32_t per_nic = c.gpus_per_node / c.nics();
  const std::uint32_t peer = src - src % c.gpus_per_node + local_nic(c, dst) * per_nic + src % per_nic;
  return peer < n ? peer : src;
}

}  // namespace

const char* topology_kind_name(TopologyKind kind) {
  switch (kind) {
    case TopologyKind::NvSwitch: return "nvswitch";
    case TopologyKind::FullMesh: return "full_mesh";
    case TopologyKind::Dgx1: return "dgx1";
    case TopologyKind::Cluster: return "cluster";
  }
  return "unknown";
}

void Topology::route_into(std::uint32_t src, std::uint32_t dst, std::vector<std::uint32_t>& out) const {
  if ((src >= n || dst >= n) && src != dst) {
    switch_route_into(src, dst, out);
    return;
  }
  if (src >= n || dst >= n || src == dst) {
    throw ConfigError(fmt::format("topology '{}': no route {} -> {} (GPUs are 0..{}, src != dst)",
                                  name, src, dst, n == 0 ? 0 : n - 1));
  }
  out.clear();
  switch (kind) {
    case TopologyKind::NvSwitch:
      out.push_back(src);
      out.push_back(n + dst);
      return;
    case TopologyKind::FullMesh:
      out.push_back(full_mesh_link(n, src, dst));
      return;
    case TopologyKind::Dgx1: {
      const auto g = static_cast<std::uint32_t>(nvlink_count.size());
      const auto& r = explicit_routes.at(static_cast<std::size_t>(src) * g + dst);
      out.assign(r.begin(), r.end());
      return;
    }
    case TopologyKind::Cluster: {
      const ClusterSpec& c = cluster;
      if (src / c.gpus_per_node == dst / c.gpus_per_node) {
        out.push_back(src);
        out.push_back(n + dst);
        return;
      }
      const std::uint32_t nics = num_nics();
      const std::uint32_t sender = sending_gpu(c, n, src, dst);
      if (sender != src) {  // PXN: over NVLink to the peer first
        out.push_back(src);
        out.push_back(n + sender);
      }
      out.push_back(2 * n + cluster_nic(c, sender));
      const std::uint32_t leaf_src = cluster_leaf(c, sender);
      const std::uint32_t leaf_dst = cluster_leaf(c, dst);
      if (leaf_src != leaf_dst) {
        out.push_back(2 * n + 2 * nics + leaf_src);
        out.push_back(2 * n + 2 * nics + num_leaves() + leaf_dst);
      }
      out.push_back(2 * n + nics + cluster_nic(c, dst));
      return;
    }
  }
  throw InternalError("route: unknown topology kind");
}

void Topology::switch_route_into(std::uint32_t src, std::uint32_t dst, std::vector<std::uint32_t>& out) const {
  if (!switch_reduction || (kind != TopologyKind::NvSwitch && kind != TopologyKind::Cluster)) {
    throw ConfigError(fmt::format("topology '{}': no route {} -> {}: its switch cannot reduce (set "
                                  "'switch_reduction: true' in the topology file if it can)",
                                  name, src, dst));
  }
  const std::uint32_t nodes = kind == TopologyKind::Cluster ? node_count(n, cluster.gpus_per_node) : 1;
  const std::uint32_t gpu = src < n ? src : dst;
  const std::uint64_t other = src < n ? dst : src;
  if ((src >= n && dst >= n) || other >= std::uint64_t{n} + nodes) {
    throw ConfigError(fmt::format("topology '{}': no route {} -> {} (GPUs are 0..{}, switches {}..{}; a switch "
                                  "exchanges data only with GPUs)", name, src, dst, n - 1, n, n + nodes - 1));
  }
  const std::uint32_t node = kind == TopologyKind::Cluster ? gpu / cluster.gpus_per_node : 0;
  if (other - n != node) {
    throw ConfigError(fmt::format("topology '{}': no route {} -> {}: GPU {} is on the switch of node {} (rank {})",
                                  name, src, dst, gpu, node, n + node));
  }
  out.clear();
  out.push_back(src < n ? src : n + dst);
}

std::vector<std::uint32_t> Topology::route(std::uint32_t src, std::uint32_t dst) const {
  std::vector<std::uint32_t> out;
  route_into(src, dst, out);
  return out;
}

double Topology::route_latency_s(std::uint32_t src, std::uint32_t dst) const {
  double total = 0;
  for (std::uint32_t l : route(src, dst)) total += links.at(l).latency_s;
  return total;
}

bool Topology::non_blocking() const {
  return kind != TopologyKind::Cluster || cluster.oversubscription <= 1.0;
}

bool Topology::never_binding(std::uint32_t link_id) const {
  return kind == TopologyKind::Cluster && cluster.oversubscription <= 1.0 && link_id >= 2 * n + 2 * num_nics();
}

bool Topology::links_owned_by_endpoints() const {
  // dgx1 forwards traffic through intermediate GPUs, so one link carries several senders'
  // flows; an oversubscribed cluster's leaf links bind and are shared by a whole leaf, and a
  // NIC shared by GPUs carries all of their flows.
  // With PXN a NIC and a GPU's NVLink also carry its node peers' sends.
  return kind == TopologyKind::NvSwitch || kind == TopologyKind::FullMesh ||
         (kind == TopologyKind::Cluster && cluster.oversubscription <= 1.0 && cluster.nics() == cluster.gpus_per_node &&
          !cluster.pxn);
}

std::uint32_t Topology::nic_of(std::uint32_t gpu) const {
  if (kind != TopologyKind::Cluster) {
    throw ConfigError(fmt::format("topology '{}' ({}) has no NICs", name, topology_kind_name(kind)));
  }
  if (gpu >= n) throw ConfigError(fmt::format("topology '{}': GPU {} outside 0..{}", name, gpu, n - 1));
  return cluster_nic(cluster, gpu);
}

std::uint32_t Topology::num_nics() const {
  return kind == TopologyKind::Cluster && n > 0 ? cluster_nic(cluster, n - 1) + 1 : 0;
}

std::uint32_t Topology::leaf_of(std::uint32_t gpu) const {
  if (kind != TopologyKind::Cluster) {
    throw ConfigError(fmt::format("topology '{}' ({}) has no leaf switches", name, topology_kind_name(kind)));
  }
  if (gpu >= n) throw ConfigError(fmt::format("topology '{}': GPU {} outside 0..{}", name, gpu, n - 1));
  return cluster_leaf(cluster, gpu);
}

std::uint32_t Topology::num_leaves() const {
  return kind == TopologyKind::Cluster ? leaf_layout(n, cluster).leaves : 0;
}

void Topology::check() const {
  check_n(n, fmt::format("topology '{}'", name));
  std::size_t expected = 0;
  switch (kind) {
    case TopologyKind::NvSwitch: expected = 2 * static_cast<std::size_t>(n); break;
    case TopologyKind::FullMesh: expected = static_cast<std::size_t>(n) * (n - 1); break;
    case TopologyKind::Dgx1: {
      if (nvlink_count.size() != kDgx1Gpus || n > kDgx1Gpus ||
          explicit_routes.size() != static_cast<std::size_t>(kDgx1Gpus) * kDgx1Gpus) {
        throw ConfigError(fmt::format("topology '{}': dgx1 tables are inconsistent (build it with make_dgx1)", name));
      }
      expected = links.size();
      break;
    }
    case TopologyKind::Cluster:
      expected = 2 * static_cast<std::size_t>(n) + 2 * std::size_t{num_nics()} + 2 * num_leaves();
      break;
  }
  if (links.size() != expected) {
    throw ConfigError(fmt::format("topology '{}' ({}, n = {}): {} links, expected {} (build it with make_{})",
                                  name, topology_kind_name(kind), n, links.size(), expected,
                                  topology_kind_name(kind)));
  }
  for (const auto& l : links) {
    if (!link_classes.empty() && l.link_class >= link_classes.size()) {
      throw ConfigError(fmt::format("topology '{}': link '{}' is in link class {}, but the topology has {} classes",
                                    name, l.name, l.link_class, link_classes.size()));
    }
    if (!(l.bandwidth_Bps > 0) || !std::isfinite(l.bandwidth_Bps) || !(l.latency_s >= 0) ||
        !std::isfinite(l.latency_s)) {
      throw ConfigError(fmt::format("topology '{}': link '{}' has bandwidth {} B/s, latency {} s",
                                    name, l.name, l.bandwidth_Bps, l.latency_s));
    }
  }
  check_link_model(link, fmt::format("topology '{}'", name));
}

std::optional<std::uint32_t> Topology::find_link_class(std::string_view class_name) const {
  for (std::uint32_t k = 0; k < link_classes.size(); ++k) {
    if (link_classes[k].name == class_name) return k;
  }
  return std::nullopt;
}

void Topology::set_link_class(std::uint32_t index, double latency_s, double bandwidth_Bps) {
  if (index >= link_classes.size()) {
    throw ConfigError(fmt::format("topology '{}': link class {} does not exist ({} classes)", name, index,
                                  link_classes.size()));
  }
  LinkClass& c = link_classes[index];
  check_link_model(LinkModel{latency_s, bandwidth_Bps, 0.0}, fmt::format("topology '{}', link class '{}'", name, c.name));
  c.latency_s = latency_s;
  c.bandwidth_Bps = bandwidth_Bps;
  for (LinkSpec& l : links) {
    if (l.link_class != index) continue;
    l.latency_s = l.latency_share * latency_s;
    l.bandwidth_Bps = l.bandwidth_multiple * bandwidth_Bps;
  }
  if (kind != TopologyKind::Cluster) {
    link.latency_s = latency_s;
    link.bandwidth_Bps = bandwidth_Bps;
  } else if (c.name == kNvlinkClass) {
    cluster.nvlink_latency_s = latency_s;
    cluster.nvlink_bandwidth_Bps = bandwidth_Bps;
  } else {
    cluster.network_latency_s = latency_s;
    cluster.nic_bandwidth_Bps = bandwidth_Bps;
    link.latency_s = latency_s;
    link.bandwidth_Bps = bandwidth_Bps;
  }
}

Topology make_nvswitch(std::uint32_t n, const LinkModel& link, std::string name) {
  check_n(n, name);
  check_link_model(link, name);
  Topology t;
  t.name = std::move(name);
  t.kind = TopologyKind::NvSwitch;
  t.n = n;
  t.link = link;
  t.links.reserve(2 * static_cast<std::size_t>(n));
  // Halving is exact in binary floating point, so up + down latency is exactly alpha.
  t.link_classes = {{kNvlinkClass, link.latency_s, link.bandwidth_Bps}};
  for (std::uint32_t g = 0; g < n; ++g) {
    t.links.push_back({fmt::format("gpu{}_up", g), link.bandwidth_Bps, link.latency_s / 2, 0, 0.5, 1.0});
  }
  for (std::uint32_t g = 0; g < n; ++g) {
    t.links.push_back({fmt::format("gpu{}_down", g), link.bandwidth_Bps, link.latency_s / 2, 0, 0.5, 1.0});
  }
  return t;
}

Topology make_full_mesh(std::uint32_t n, const LinkModel& link, std::string name) {
  check_n(n, name);
  check_link_model(link, name);
  if (n > kMaxFullMeshGpus) {
    throw ConfigError(fmt::format("{}: full_mesh with n = {} would need {} links; it is limited to {} GPUs "
                                  "(use nvswitch for large n)", name, n, static_cast<std::uint64_t>(n) * (n - 1),
                                  kMaxFullMeshGpus));
  }
  Topology t;
  t.name = std::move(name);
  t.kind = TopologyKind::FullMesh;
  t.n = n;
  t.link = link;
  t.link_classes = {{kNvlinkClass, link.latency_s, link.bandwidth_Bps}};
  t.links.reserve(static_cast<std::size_t>(n) * (n - 1));
  for (std::uint32_t a = 0; a < n; ++a) {
    for (std::uint32_t b = 0; b < n; ++b) {
      if (a != b) t.links.push_back({fmt::format("gpu{}_to_gpu{}", a, b), link.bandwidth_Bps, link.latency_s, 0, 1.0, 1.0});
    }
  }
  return t;
}

Topology make_dgx1(std::uint32_t n, const LinkModel& nvlink, std::string name) {
  check_n(n, name);
  check_link_model(nvlink, name);
  if (n > kDgx1Gpus) {
    throw ConfigError(fmt::format("{}: n = {} ranks do not fit a DGX-1 with {} GPUs", name, n, kDgx1Gpus));
  }
  Topology t;
  t.name = std::move(name);
  t.kind = TopologyKind::Dgx1;
  t.n = n;
  t.link = nvlink;
  t.link_classes = {{kNvlinkClass, nvlink.latency_s, nvlink.bandwidth_Bps}};
  constexpr std::uint32_t g = kDgx1Gpus;
  t.nvlink_count.assign(g, std::vector<std::uint32_t>(g, 0));
  std::vector<std::int64_t> pair_link(static_cast<std::size_t>(g) * g, -1);
  for (std::uint32_t a = 0; a < g; ++a) {
    for (std::uint32_t b = 0; b < g; ++b) {
      const std::uint32_t count = kDgx1NvlinkCount[a][b];
      t.nvlink_count[a][b] = count;
      if (count == 0) continue;
      pair_link[a * g + b] = static_cast<std::int64_t>(t.links.size());
      t.links.push_back({fmt::format("gpu{}_to_gpu{}_nv{}", a, b, count), count * nvlink.bandwidth_Bps, nvlink.latency_s,
                         0, 1.0, static_cast<double>(count)});
    }
  }
  t.explicit_routes.assign(static_cast<std::size_t>(g) * g, {});
  for (std::uint32_t a = 0; a < g; ++a) {
    for (std::uint32_t b = 0; b < g; ++b) {
      if (a == b) continue;
      auto& r = t.explicit_routes[a * g + b];
      if (pair_link[a * g + b] >= 0) {
        r.push_back(static_cast<std::uint32_t>(pair_link[a * g + b]));
        continue;
      }
      // Widest two-hop path; the strict comparison keeps the lowest intermediate on ties.
      std::uint32_t best = g;
      std::uint32_t best_width = 0;
      for (std::uint32_t x = 0; x < g; ++x) {
        const std::uint32_t width = std::min(kDgx1NvlinkCount[a][x], kDgx1NvlinkCount[x][b]);
        if (width > best_width) {
          best = x;
          best_width = width;
        }
      }
      COLLSIM_ASSERT(best < g, fmt::format("dgx1: no two-hop path {} -> {}", a, b));
      r.push_back(static_cast<std::uint32_t>(pair_link[a * g + best]));
      r.push_back(static_cast<std::uint32_t>(pair_link[best * g + b]));
    }
  }
  return t;
}

Topology make_cluster(std::uint32_t n, const ClusterSpec& spec, double gamma_s_per_byte, std::string name) {
  check_n(n, name);
  if (spec.gpus_per_node < 1 || spec.nodes_per_leaf < 1) {
    throw ConfigError(fmt::format("{}: gpus_per_node = {} and nodes_per_leaf = {} must be >= 1", name,
                                  spec.gpus_per_node, spec.nodes_per_leaf));
  }
  if (spec.gpus_per_node % spec.nics() != 0) {
    throw ConfigError(fmt::format("{}: nics_per_node = {} must divide gpus_per_node = {} (the GPUs share the NICs evenly)",
                                  name, spec.nics(), spec.gpus_per_node));
  }
  if (spec.pxn && !spec.rail_optimized) {
    throw ConfigError(fmt::format("{}: pxn needs rail_optimized (PXN moves a send onto the receiver's rail; without "
                                  "rails every NIC of a node is under the same leaf)", name));
  }
  if (!(spec.oversubscription >= 1.0 && spec.oversubscription <= kMaxOversubscription)) {
    throw ConfigError(fmt::format("{}: oversubscription {} must be a ratio from 1 to {} (2 means 2:1)", name,
                                  spec.oversubscription, kMaxOversubscription));
  }
  check_link_model(LinkModel{spec.nvlink_latency_s, spec.nvlink_bandwidth_Bps, gamma_s_per_byte},
                   fmt::format("{} (NVLink)", name));
  check_link_model(LinkModel{spec.network_latency_s, spec.nic_bandwidth_Bps, gamma_s_per_byte},
                   fmt::format("{} (network)", name));
  Topology t;
  t.name = std::move(name);
  t.kind = TopologyKind::Cluster;
  t.n = n;
  t.cluster = spec;
  t.link = LinkModel{spec.network_latency_s, spec.nic_bandwidth_Bps, gamma_s_per_byte};
  const LeafLayout layout = leaf_layout(n, spec);
  const std::uint32_t nics = t.num_nics();
  t.links.reserve(2 * static_cast<std::size_t>(n) + 2 * std::size_t{nics} + 2 * layout.leaves);
  const double nvl_lat = spec.nvlink_latency_s / 2;
  const double nic_lat = spec.network_latency_s / 2;
  t.link_classes = {{kNvlinkClass, spec.nvlink_latency_s, spec.nvlink_bandwidth_Bps},
                    {kNetworkClass, spec.network_latency_s, spec.nic_bandwidth_Bps}};
  constexpr std::uint32_t kNvl = 0, kNet = 1;
  for (const char* dir : {"up", "down"}) {
    for (std::uint32_t g = 0; g < n; ++g) {
      t.links.push_back({fmt::format("gpu{}_nvl_{}", g, dir), spec.nvlink_bandwidth_Bps, nvl_lat, kNvl, 0.5, 1.0});
    }
  }
  // With a NIC per GPU, NIC m is GPU m's; a shared NIC is named after its node.
  const bool own_nics = spec.nics() == spec.gpus_per_node;
  for (const char* dir : {"up", "down"}) {
    for (std::uint32_t m = 0; m < nics; ++m) {
      std::string nic_name = own_nics ? fmt::format("gpu{}_nic_{}", m, dir)
                                      : fmt::format("node{}_nic{}_{}", m / spec.nics(), m % spec.nics(), dir);
      t.links.push_back({std::move(nic_name), spec.nic_bandwidth_Bps, nic_lat, kNet, 0.5, 1.0});
    }
  }
  // The spine layer as one aggregated bundle per leaf: with ideal load balancing across spines
  // a leaf can push (its down capacity) / oversubscription into the spine layer and receive the
  // same; static single-spine routes would invent collisions that ECMP spreads in reality.
  const double leaf_capacity = layout.nics_per_leaf * spec.nic_bandwidth_Bps / spec.oversubscription;
  // The spine bundles belong to the network class: they scale with the NIC bandwidth and add no latency.
  const double leaf_multiple = layout.nics_per_leaf / spec.oversubscription;
  for (const char* dir : {"up", "down"}) {
    for (std::uint32_t l = 0; l < layout.leaves; ++l) {
      t.links.push_back({fmt::format("leaf{}_{}", l, dir), leaf_capacity, 0.0, kNet, 0.0, leaf_multiple});
    }
  }
  return t;
}

}  // namespace collsim
