// Symbolic verification of a schedule: does every rank end with every chunk reduced over all n
// ranks exactly once, under the execution semantics of schedule.hpp?
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collsim/algorithms/schedule.hpp"

namespace collsim {

/// One problem found in a schedule. `phase`/`round` locate it (SIZE_MAX when global).
struct Diagnostic {
  std::size_t phase = static_cast<std::size_t>(-1);
  std::size_t round = static_cast<std::size_t>(-1);
  std::string message;
};

/// Checks `schedule` symbolically. Each (rank, chunk) carries the set of ranks whose
/// contributions it holds (initially {rank}); `reduce` requires disjoint sets (no double
/// counting), `copy` overwrites. Also checks ranks and chunk ranges are in bounds, no self
/// transfers, no two writes to one (rank, chunk) in a round, and the per-round port limit.
/// Returns every diagnostic found, up to `max_diagnostics` (empty = correct). Never throws on a
/// malformed schedule; memory is O(n * num_chunks) interval sets.
std::vector<Diagnostic> verify_schedule(const Schedule& schedule, std::size_t max_diagnostics = 50);

/// Formats a diagnostic as "phase 'x' round r: message".
std::string format_diagnostic(const Schedule& schedule, const Diagnostic& diagnostic);

}  // namespace collsim
