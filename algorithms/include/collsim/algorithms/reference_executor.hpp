// CPU reference executor: runs a schedule on real numbers and compares with a direct sum.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "collsim/algorithms/schedule.hpp"

namespace collsim {

/// Deterministic integer-valued input of `rank` at element `element` (of the whole buffer);
/// small enough that sums over 65536 ranks are exact in double precision.
double reference_input(Rank rank, std::size_t element);

/// Result of a reference execution.
struct ReferenceResult {
  bool correct = false;
  std::size_t mismatches = 0;   ///< (rank, element) pairs that differ from the direct sum
  std::string first_mismatch;   ///< human description of the first one, empty if correct
};

/// Executes `schedule` with `elements_per_chunk` doubles per chunk on every rank, round by
/// round with the snapshot semantics of schedule.hpp, and checks every rank's buffer equals the
/// element-wise sum of all inputs. Throws ScheduleError if a transfer is out of bounds (run the
/// verifier first for a full report). Memory: n * num_chunks * elements_per_chunk doubles.
ReferenceResult execute_reference(const Schedule& schedule, std::size_t elements_per_chunk = 1);

/// Runs the schedule on caller-provided buffers: buffers[r] has num_chunks * elements_per_chunk
/// values and is updated in place. Used by the reference check and the CUDA lowering tests.
/// `buffers` holds the n GPU ranks only; switch ranks (schedule.hpp) get buffers of zeros here,
/// into which every contribution reduced adds.
void execute_on_buffers(const Schedule& schedule, std::size_t elements_per_chunk,
                        std::vector<std::vector<double>>& buffers);

}  // namespace collsim
