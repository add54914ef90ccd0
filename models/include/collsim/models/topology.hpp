// Network topologies as data: directed links with bandwidth and latency, and a route between
// every pair of GPUs. Engines (replay, simgrid) consume this; nothing here simulates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collsim/models/link_model.hpp"

namespace collsim {

enum class TopologyKind { NvSwitch, FullMesh, Dgx1, Cluster };

/// One directed link (a full-duplex cable is two of them).
struct LinkSpec {
  std::string name;      ///< for traces and SimGrid ("gpu3_up", "leaf2_spine0_up", ...)
  double bandwidth_Bps = 0;
  double latency_s = 0;
};

/// Parameters of the `cluster` kind.
struct ClusterSpec {
  std::uint32_t gpus_per_node = 8;
  double nvlink_bandwidth_Bps = 450e9;   ///< per GPU, per direction, inside a node
  double nvlink_latency_s = 3e-6;        ///< end-to-end alpha inside a node
  double nic_bandwidth_Bps = 400e9 / 8;  ///< per GPU NIC, per direction
  double network_latency_s = 10e-6;      ///< end-to-end alpha between nodes
  std::uint32_t nodes_per_leaf = 4;
  double oversubscription = 1.0;         ///< leaf down/up bandwidth ratio (2 = 2:1)
  bool rail_optimized = false;           ///< GPU i of every node on leaf "rail i"
};

struct Topology {
  std::string name;
  TopologyKind kind = TopologyKind::NvSwitch;
  std::uint32_t n = 0;              ///< GPUs
  LinkModel link;                   ///< the GPU-to-GPU alpha/beta/gamma of the common path
  ClusterSpec cluster;              ///< only for kind == Cluster
  std::vector<LinkSpec> links;      ///< every directed link
  /// Full-duplex GPU pairs with link multiplicity, for kind == Dgx1 (NVLink count per pair).
  std::vector<std::vector<std::uint32_t>> nvlink_count;

  /// Directed links from GPU src to GPU dst, in order. Throws ConfigError if either is >= n.
  std::vector<std::uint32_t> route(std::uint32_t src, std::uint32_t dst) const;
  /// True when no two routes share a link except a GPU's own ports (replay models it exactly).
  bool non_blocking() const;
};

}  // namespace collsim
