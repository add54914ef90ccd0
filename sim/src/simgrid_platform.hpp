// Building a SimGrid platform from a collsim Topology (private to sim/; includes SimGrid).
#pragma once

#include <simgrid/s4u/Host.hpp>

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "collsim/models/topology.hpp"

namespace collsim::detail {

/// SimGrid time units per second: the platform and every date handed to SimGrid are in
/// microseconds. SimGrid's solver snaps a link's usage (the sum of 1/latency over its flows) to
/// zero only below the absolute maxmin precision; in seconds that sum is ~1e5..1e8 per link and
/// its rounding residue (~flows^2 * 1e-16 * usage) exceeds any precision that keeps rates exact,
/// and an unsnapped residue corrupts the solver (SIGSEGV or "Cannot saturate more a constraint").
/// In microseconds the sum is ~1 per flow and the residue stays far below the precision.
inline constexpr double kSimGridUnitsPerSecond = 1e6;

/// A directed GPU pair (src, dst) that exchanges data in the schedule.
using GpuPair = std::pair<std::uint32_t, std::uint32_t>;

struct SimGridPlatform {
  std::vector<simgrid::s4u::Host*> hosts;  ///< host of GPU g at index g, then one per switch rank
  bool star = false;                       ///< built as a star zone (else a full zone)
  std::size_t links = 0;                   ///< SimGrid links created
};

/// Creates, in the current s4u::Engine (which must exist and have no platform yet), one host per
/// GPU and one SHARED SimGrid link per directed topology link that a route of `pairs` uses, its
/// latency and bandwidth expressed in SimGrid time units (kSimGridUnitsPerSecond).
/// Links that Topology::never_binding() declares unable to limit a flow and that have no
/// latency are left out, as the replay engine does (max-min rates are the same without them).
///
/// Routes are registered only for `pairs`, exactly as Topology::route() gives them. When every
/// such route is {up(src), down(dst)} with one link per GPU and direction (nvswitch) the zone
/// is a SimGrid star zone (2n route entries); otherwise a full zone, whose n x n table SimGrid
/// allocates whole. Switch ranks (schedule.hpp) get hosts n .. n + num_switch_ranks - 1, whose
/// routes are the one GPU link Topology::route() gives (always a full zone then).
/// Throws ConfigError if a route names a link id outside topology.links.
SimGridPlatform build_platform(const Topology& topology, std::span<const GpuPair> pairs,
                               std::uint32_t num_switch_ranks = 0);

}  // namespace collsim::detail
