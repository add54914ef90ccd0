// Network topologies as data: directed links with bandwidth and latency, and a route between
// every pair of GPUs. Engines (replay, simgrid) consume this; nothing here simulates.
//
// Kinds and their links (ids are indices into Topology::links):
//  * nvswitch  : GPU g has an up link g (GPU -> switch) and a down link n + g (switch -> GPU),
//                bandwidth B and latency alpha/2 each, so one message costs alpha + m/B.
//                route(a, b) = {a, n + b}.
//  * full_mesh : one directed link per ordered pair (bandwidth B, latency alpha).
//                route(a, b) = {a * (n - 1) + (b < a ? b : b - 1)}.
//  * dgx1      : the 8 x V100 hybrid cube-mesh; one directed link per NVLink-connected ordered
//                pair with bandwidth = NVLink count x per-link bandwidth and latency alpha.
//                Pairs without an NVLink are forwarded through one intermediate GPU over
//                NVLink (the widest two-hop path, lowest intermediate index on ties), so they
//                pay 2 alpha and share the intermediate's links. PCIe is not modelled.
//  * cluster   : nodes of gpus_per_node GPUs. Inside a node: an NVSwitch (up/down links per GPU
//                with the NVLink bandwidth and nvlink_latency_s / 2 each). Between nodes: every
//                node has nics_per_node NICs (up/down links, nic_bandwidth and network_latency_s
//                / 2 each) into leaf switches; GPU l of a node uses its NIC l / (G / nics), so
//                consecutive GPUs share one (NCCL's nearest NIC: a PCIe switch holds a NIC and
//                the GPUs next to it) and split its bandwidth. Default: one NIC per GPU. Leaves
//                connect through one spine layer modelled as a single aggregated up and down
//                link per leaf of capacity (leaf down capacity) / oversubscription and zero
//                latency, so every inter-node pair sees exactly network_latency_s. With pxn
//                (rail-optimized only) a send to another rail first crosses NVLink to the node
//                peer on the receiver's rail and leaves through its NIC: nvlink_latency_s more.
//                Links, with M = num_nics() (n when every GPU has its own NIC): [0, n) NVLink
//                up, [n, 2n) NVLink down, [2n, 2n+M) NIC up, [2n+M, 2n+2M) NIC down (NIC m =
//                node * nics_per_node + local NIC), then one leaf up and one leaf down link per leaf.
//                Routes are computed on demand, never stored for all pairs.
//
// Switch reductions (NVLS): a topology whose NVSwitches can reduce (switch_reduction) also
// routes to and from switch ranks (schedule.hpp): switch rank n + k is the NVSwitch of node k
// (nvswitch kind: the one switch, k = 0). GPU g -> switch uses only g's NVLink up link, switch ->
// GPU g only g's NVLink down link, so each costs alpha/2 + m/B; a GPU reaches only its own
// node's switch.
//
// Link classes (what calibration fits one alpha and beta for, and a model file sets): nvswitch,
// full_mesh and dgx1 have one class, "nvlink"; cluster has "nvlink" (the NVLink up/down links) and
// "network" (NIC up/down links and the spine bundles).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/link_model.hpp"

namespace collsim {

enum class TopologyKind { NvSwitch, FullMesh, Dgx1, Cluster };

/// "nvswitch" | "full_mesh" | "dgx1" | "cluster".
const char* topology_kind_name(TopologyKind kind);

/// One directed link (a full-duplex cable is two of them).
///
/// Every link belongs to a link class (see LinkClass) and its numbers are fixed multiples of the
/// class's: latency_s = latency_share * class alpha, bandwidth_Bps = bandwidth_multiple * class
/// bandwidth. That is what lets a calibration fit one (alpha, beta) per class and lets a fitted
/// model set every link of a class at once (Topology::set_link_class). The defaults (class 0,
/// share 1, multiple 1) describe a link that is exactly its class's message cost.
struct LinkSpec {
  std::string name;      ///< for traces and SimGrid ("gpu3_up", "leaf2_up", ...)
  double bandwidth_Bps = 0;
  double latency_s = 0;
  std::uint32_t link_class = 0;    ///< index into Topology::link_classes
  double latency_share = 1.0;      ///< latency_s / class alpha (1/2 for an up or down half, 0 for the spine)
  double bandwidth_multiple = 1.0; ///< bandwidth_Bps / class bandwidth (NVLink count, leaf aggregation)
};

/// A named group of links sharing one (alpha, beta): "nvlink" for nvswitch, full_mesh and dgx1;
/// "nvlink" (intra-node) and "network" (inter-node NIC path and spine) for cluster.
struct LinkClass {
  std::string name;
  double latency_s = 0;      ///< alpha of the class: end-to-end message latency (dgx1: per hop)
  double bandwidth_Bps = 0;  ///< bandwidth of the class (per GPU port; dgx1: per NVLink)
};

/// Names of the link classes every factory uses.
inline constexpr const char* kNvlinkClass = "nvlink";
inline constexpr const char* kNetworkClass = "network";

/// Largest leaf oversubscription a cluster takes (1000:1). Past it a ratio is a typo, and a huge
/// one (1e308) left the spine links a bandwidth below a byte per second: replay printed
/// 300-digit times and SimGrid aborted ("Deadlock detected").
inline constexpr double kMaxOversubscription = 1000.0;

/// Parameters of the `cluster` kind.
struct ClusterSpec {
  std::uint32_t gpus_per_node = 8;
  double nvlink_bandwidth_Bps = 450e9;   ///< per GPU, per direction, inside a node
  double nvlink_latency_s = 3e-6;        ///< end-to-end alpha inside a node
  double nic_bandwidth_Bps = 400e9 / 8;  ///< per NIC, per direction
  double network_latency_s = 10e-6;      ///< end-to-end alpha between nodes
  std::uint32_t nodes_per_leaf = 4;
  double oversubscription = 1.0;         ///< leaf down/up bandwidth ratio (2 = 2:1), 1..kMaxOversubscription
  bool rail_optimized = false;           ///< NIC i of every node on leaf "rail i"
  /// NCCL's PXN (rail-optimized only): a send to a GPU on another rail first crosses NVLink to
  /// the sender's node peer on the receiver's rail and leaves through that peer's NIC, so it stays
  /// on one rail leaf (NCCL_P2P_PXN_LEVEL's default, 2, routes point-to-point sends so).
  bool pxn = false;
  /// NICs per node, dividing gpus_per_node; 0 = one per GPU. GPUs l with the same
  /// l / (gpus_per_node / nics) share one.
  std::uint32_t nics_per_node = 0;

  /// The NICs per node in effect (nics_per_node, or gpus_per_node for 0).
  std::uint32_t nics() const { return nics_per_node == 0 ? gpus_per_node : nics_per_node; }
};

struct Topology {
  std::string name;
  TopologyKind kind = TopologyKind::NvSwitch;
  std::uint32_t n = 0;              ///< GPUs that hold ranks (ranks 0..n-1 are GPUs 0..n-1)
  /// The GPU-to-GPU alpha/beta/gamma of the common path: the message cost for nvswitch and
  /// full_mesh, one NVLink for dgx1, the inter-node NIC path for cluster. Every engine reads
  /// the reduction cost gamma from here.
  LinkModel link;
  ClusterSpec cluster;              ///< only for kind == Cluster
  /// The NVSwitches reduce in the network (NVLS, H100 and later); YAML key `switch_reduction`.
  /// Only kinds nvswitch and cluster have switches. False unless a file or a caller says so.
  bool switch_reduction = false;
  /// Fraction of an NVLink port's bandwidth that a switch reduction or multicast achieves
  /// (YAML key `switch_reduction_efficiency`, in (0, 1], default 1). Hardware fact, not fitted:
  /// NCCL's tuning model rates NVLS at nvlsEfficiency (0.85 on Hopper, 0.74 on Blackwell) times
  /// (channels - 1) / channels of the link bandwidth. Engines charge a transfer to or from a switch
  /// rank bytes / efficiency on the wire (CostRules::bytes).
  double switch_reduction_efficiency = 1.0;
  std::vector<LinkSpec> links;      ///< every directed link
  /// The link classes, indexed by LinkSpec::link_class; factories always fill it (one class for
  /// nvswitch, full_mesh and dgx1, two for cluster). Empty only for a hand-built topology, which
  /// then behaves as one class.
  std::vector<LinkClass> link_classes;
  /// NVLink count per GPU pair (symmetric, 8 x 8 for kind == Dgx1; empty otherwise).
  std::vector<std::vector<std::uint32_t>> nvlink_count;
  /// Explicit routes for kinds whose routes are not a formula (dgx1): entry src * g + dst with
  /// g = nvlink_count.size(). Empty for the other kinds.
  std::vector<std::vector<std::uint32_t>> explicit_routes;

  /// Directed links from GPU src to GPU dst, in order. An id n + k names the NVSwitch of node k
  /// (a switch rank, see the header comment). Throws ConfigError if src == dst, an id is >= n
  /// and names no switch of this topology, the topology cannot reduce in its switches, both
  /// ends are switches, or a GPU and a switch of another node.
  std::vector<std::uint32_t> route(std::uint32_t src, std::uint32_t dst) const;
  /// As route(), but writes into `out` (cleared first) so hot loops do not allocate.
  void route_into(std::uint32_t src, std::uint32_t dst, std::vector<std::uint32_t>& out) const;
  /// route_into() for a transfer between a GPU and a switch rank (one of src, dst is >= n).
  void switch_route_into(std::uint32_t src, std::uint32_t dst, std::vector<std::uint32_t>& out) const;
  /// Sum of the latencies of route(src, dst), in route order (seconds).
  double route_latency_s(std::uint32_t src, std::uint32_t dst) const;

  /// True when no link other than a GPU's own ports (NVLinks, its NIC, which GPUs may share)
  /// can limit a flow: nvswitch, full_mesh, dgx1, and clusters with oversubscription <= 1 (on an
  /// oversubscribed cluster the leaf uplinks can bind, and the engines share them).
  bool non_blocking() const;
  /// True when link `link_id` can never limit any flow because its capacity is at least the sum of the
  /// GPU ports feeding it (leaf links of a cluster with oversubscription <= 1). Max-min sharing
  /// gives the same rates with or without such links, so engines may skip them.
  bool never_binding(std::uint32_t link_id) const;
  /// True when every link that can bind carries only traffic sent by one GPU or only traffic
  /// received by one GPU (nvswitch, full_mesh, cluster with a NIC per GPU). Then a link is busy
  /// only with the transfers of one rank's current round, which lets engines skip bandwidth
  /// sharing when no round uses a link twice. A NIC shared by GPUs carries several ranks' flows,
  /// and so do a NIC and an NVLink with PXN (they forward node peers' sends).
  bool links_owned_by_endpoints() const;

  /// Leaf switch of GPU g (kind == Cluster only; throws ConfigError otherwise or if g >= n).
  std::uint32_t leaf_of(std::uint32_t gpu) const;
  /// NIC of GPU g, 0 .. num_nics() - 1 (kind == Cluster only; throws ConfigError otherwise or
  /// if g >= n). Its up link is 2n + nic_of(g), its down link 2n + num_nics() + nic_of(g).
  std::uint32_t nic_of(std::uint32_t gpu) const;
  /// Number of NICs (kind == Cluster, a partial last node has those of its GPUs; 0 otherwise).
  std::uint32_t num_nics() const;
  /// Number of leaf switches (kind == Cluster; 0 for the other kinds).
  std::uint32_t num_leaves() const;

  /// Index of the link class called `name`, or nullopt.
  std::optional<std::uint32_t> find_link_class(std::string_view name) const;
  /// Sets the alpha and bandwidth of link class `index` and rescales every link of that class
  /// (latency_share * latency_s, bandwidth_multiple * bandwidth_Bps); keeps `link` and `cluster`
  /// in step (nvswitch/full_mesh/dgx1: link = the class; cluster: nvlink_* or the network fields,
  /// and link for "network"). gamma is not a class parameter: set link.gamma_s_per_byte.
  /// Throws ConfigError for an index outside link_classes, latency < 0 or bandwidth <= 0 (either
  /// not finite).
  void set_link_class(std::uint32_t index, double latency_s, double bandwidth_Bps);

  /// Throws ConfigError if the topology is not consistent (n == 0, link table of the wrong
  /// size, non-positive bandwidth, negative latency, a link class outside link_classes).
  /// Factories return checked topologies; engines call this on what they are given.
  void check() const;
};

/// n GPUs on a non-blocking NVSwitch; link.latency_s is the end-to-end alpha, split between
/// the up and the down link. Throws ConfigError for n < 1 or bad link numbers.
Topology make_nvswitch(std::uint32_t n, const LinkModel& link, std::string name = "nvswitch");

/// Direct point-to-point links between every ordered pair. Throws ConfigError for n < 1,
/// n > kMaxFullMeshGpus (n^2 links) or bad link numbers.
Topology make_full_mesh(std::uint32_t n, const LinkModel& link, std::string name = "full_mesh");
inline constexpr std::uint32_t kMaxFullMeshGpus = 1024;

/// The DGX-1 (V100) hybrid cube-mesh using GPUs 0..n-1 of 8. `nvlink` gives one NVLink's
/// bandwidth per direction and the one-hop latency. Throws ConfigError for n < 1 or n > 8.
Topology make_dgx1(std::uint32_t n, const LinkModel& nvlink, std::string name = "dgx1");
inline constexpr std::uint32_t kDgx1Gpus = 8;

/// A multi-node cluster of n GPUs (the last node may be partial). Throws ConfigError for n < 1,
/// gpus_per_node or nodes_per_leaf of 0, nics_per_node not dividing gpus_per_node,
/// oversubscription < 1, or bad bandwidths/latencies.
Topology make_cluster(std::uint32_t n, const ClusterSpec& spec, double gamma_s_per_byte = 0.0,
                      std::string name = "cluster");

/// Directory holding topologies/, models/ and experiments/: `<COLLSIM_SOURCE_DIR>/configs`,
/// fixed at build time (never the working directory).
std::string default_configs_dir();

/// Names of the topology files in `<configs_dir>/topologies` (file stems, sorted).
std::vector<std::string> known_topology_names(std::string_view configs_dir = {});

/// The file load_topology reads for `path_or_name`: the path itself if it contains '/' or ends
/// in .yaml or .yml, else `<configs_dir>/topologies/<name>.yaml` (configs_dir empty =
/// default_configs_dir()). Whether it exists is not checked.
std::filesystem::path topology_file(std::string_view path_or_name, std::string_view configs_dir = {});

/// Loads a topology YAML file. `path_or_name` is a path if it contains '/' or ends in .yaml or
/// .yml, otherwise the name of `<configs_dir>/topologies/<name>.yaml` (configs_dir empty =
/// default_configs_dir()). `n_override` selects how many GPUs hold ranks: a file without `n`
/// (a scalable kind) requires it; a file with `n` accepts any n_override <= n.
/// Throws ConfigError for an unknown name (listing the known ones), an unreadable file, bad
/// YAML, unknown or misplaced keys (with key path and line), bad values, or ranks that do not
/// fit (n_override larger than the file's GPUs).
///
/// Format (every key but `kind` optional; units as in units.hpp):
///   kind: nvswitch | full_mesh | dgx1 | cluster
///   name: text                      (default: the file stem)
///   n: 8                            (GPUs; omit for a scalable nvswitch/full_mesh)
///   latency: 3us                    (nvswitch/full_mesh: end-to-end alpha; dgx1: per hop)
///   bandwidth: 450GBps              (nvswitch/full_mesh: per GPU port; dgx1: per NVLink)
///   gamma: 0                        (reduction cost, seconds per byte)
///   switch_reduction: false         (the NVSwitch reduces in the network, NVLS; nvswitch/cluster)
///   cluster: {gpus_per_node, nics_per_node, nvlink_bandwidth, nvlink_latency, nic_bandwidth
///             (per NIC), network_latency, nodes_per_leaf, oversubscription, rail_optimized,
///             pxn}
Topology load_topology(std::string_view path_or_name, std::optional<std::uint32_t> n_override = {},
                       std::string_view configs_dir = {});

/// True when resolve_topology builds `spec` from the link parameters (nvswitch, full_mesh, ""):
/// alpha/bandwidth/gamma given for any other topology would be ignored, which callers refuse.
bool topology_uses_link(std::string_view spec);

/// The CLI's --topology: "nvswitch" and "full_mesh" (and an empty spec, meaning nvswitch) are
/// built from n and `link` (the --alpha/--bandwidth/--gamma flags); anything else is
/// load_topology(spec, n, configs_dir). Throws as load_topology and the factories do.
Topology resolve_topology(std::string_view spec, std::uint32_t n, const LinkModel& link,
                          std::string_view configs_dir = {});

}  // namespace collsim
