// Placeholder until topologies land: only the NVSwitch star, built from n and the link model.
#include "collsim/models/topology.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"

namespace collsim {

std::vector<std::uint32_t> Topology::route(std::uint32_t src, std::uint32_t dst) const {
  if (src >= n || dst >= n) {
    throw ConfigError(fmt::format("topology '{}': route {} -> {} outside 0..{}", name, src, dst, n - 1));
  }
  return {src, n + dst};
}

bool Topology::non_blocking() const { return kind == TopologyKind::NvSwitch || kind == TopologyKind::FullMesh; }

}  // namespace collsim
