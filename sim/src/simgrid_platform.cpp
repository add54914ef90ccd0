#include "simgrid_platform.hpp"

#include <fmt/format.h>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <limits>
#include <string>

#include "collsim/models/error.hpp"

namespace sg4 = simgrid::s4u;

namespace collsim::detail {
namespace {

constexpr std::uint32_t kUnset = std::numeric_limits<std::uint32_t>::max();

// Routes of the used pairs with the links the platform leaves out already removed.
struct UsedRoutes {
  std::vector<std::vector<std::uint32_t>> links;  // parallel to pairs
  std::vector<std::uint8_t> link_used;            // per topology link
};

UsedRoutes collect_routes(const Topology& topology, std::span<const GpuPair> pairs) {
  UsedRoutes used;
  used.links.resize(pairs.size());
  used.link_used.assign(topology.links.size(), 0);
  std::vector<std::uint32_t> route;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    topology.route_into(pairs[i].first, pairs[i].second, route);
    auto& kept = used.links[i];
    for (std::uint32_t l : route) {
      if (l >= topology.links.size()) {
        throw ConfigError(fmt::format("topology '{}': route {} -> {} uses link {} but there are only {} links",
                                      topology.name, pairs[i].first, pairs[i].second, l, topology.links.size()));
      }
      if (topology.links[l].latency_s == 0 && topology.never_binding(l)) continue;
      kept.push_back(l);
      used.link_used[l] = 1;
    }
  }
  return used;
}

// The star shape: every used route is {up(src), down(dst)}, the same up link for all routes
// leaving a GPU and the same down link for all routes entering it.
bool is_star(std::span<const GpuPair> pairs, const UsedRoutes& used, std::uint32_t n, std::vector<std::uint32_t>& up,
             std::vector<std::uint32_t>& down) {
  up.assign(n, kUnset);
  down.assign(n, kUnset);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const auto& route = used.links[i];
    if (route.size() != 2 || route[0] == route[1]) return false;
    auto& u = up[pairs[i].first];
    auto& d = down[pairs[i].second];
    if ((u != kUnset && u != route[0]) || (d != kUnset && d != route[1])) return false;
    u = route[0];
    d = route[1];
  }
  return true;
}

}  // namespace

SimGridPlatform build_platform(const Topology& topology, std::span<const GpuPair> pairs, std::uint32_t num_switch_ranks) {
  const UsedRoutes used = collect_routes(topology, pairs);
  std::vector<std::uint32_t> up;
  std::vector<std::uint32_t> down;
  SimGridPlatform platform;
  // A route to or from a switch rank is one link, not the star's two: explicit routes then.
  platform.star = num_switch_ranks == 0 && is_star(pairs, used, topology.n, up, down);

  sg4::NetZone* zone = platform.star ? sg4::create_star_zone("collsim") : sg4::create_full_zone("collsim");
  platform.hosts.reserve(topology.n);
  // Host speed is irrelevant: nothing computes; reduction costs are timers.
  for (std::uint32_t g = 0; g < topology.n; ++g) platform.hosts.push_back(zone->create_host(fmt::format("gpu{}", g), 1.0));
  for (std::uint32_t k = 0; k < num_switch_ranks; ++k) {
    platform.hosts.push_back(zone->create_host(fmt::format("switch{}", k), 1.0));
  }

  std::vector<sg4::Link*> links(topology.links.size(), nullptr);
  for (std::size_t l = 0; l < topology.links.size(); ++l) {
    if (used.link_used[l] == 0) continue;
    const LinkSpec& spec = topology.links[l];
    // Topology names need not be unique; SimGrid link names must be.
    links[l] = zone->create_link(fmt::format("l{}", l), spec.bandwidth_Bps / kSimGridUnitsPerSecond)
                   ->set_latency(spec.latency_s * kSimGridUnitsPerSecond)
                   ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED);
    links[l]->seal();
    ++platform.links;
  }

  if (platform.star) {
    for (std::uint32_t g = 0; g < topology.n; ++g) {
      if (up[g] != kUnset) zone->add_route(platform.hosts[g]->get_netpoint(), nullptr, nullptr, nullptr, {sg4::LinkInRoute(links[up[g]])}, false);
      if (down[g] != kUnset) zone->add_route(nullptr, platform.hosts[g]->get_netpoint(), nullptr, nullptr, {sg4::LinkInRoute(links[down[g]])}, false);
    }
  } else {
    std::vector<sg4::LinkInRoute> route;
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      route.clear();
      for (std::uint32_t l : used.links[i]) route.emplace_back(links[l]);
      zone->add_route(platform.hosts[pairs[i].first]->get_netpoint(), platform.hosts[pairs[i].second]->get_netpoint(),
                      nullptr, nullptr, route, false);
    }
  }
  zone->seal();
  return platform;
}

}  // namespace collsim::detail
