// Helpers shared by the cuda_validate tests: hand-made schedules and the padded reference run.
#pragma once

#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "collsim/algorithms/generators.hpp"
#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/cuda_validate/chunk_split.hpp"
#include "collsim/cuda_validate/input_data.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate::testing {

/// A StragglAR-shaped schedule that does not depend on the stragglar generator: phase
/// "reduce_scatter" = ring ReduceScatter among ranks 0..n-2 over n-1 chunks; phase "completion" =
/// rank g and the straggler n-1 swap-and-add chunk g (one round per g), then a ring AllGather
/// among the ready ranks. Correct for every n >= 3.
inline Schedule make_two_phase_straggler_schedule(Rank n) {
  Schedule s;
  s.algorithm = "two_phase_test";
  s.n = n;
  s.num_chunks = n - 1;
  s.straggler = n - 1;
  std::vector<Rank> ready(n - 1);
  std::iota(ready.begin(), ready.end(), Rank{0});
  append_ring_reduce_scatter(s.add_phase("reduce_scatter"), ready, 0);
  Phase& completion = s.add_phase("completion");
  for (Rank g = 0; g + 1 < n; ++g) {
    completion.begin_round();
    completion.add(g, n - 1, g, 1, Op::Reduce);
    completion.add(n - 1, g, g, 1, Op::Reduce);
  }
  append_ring_all_gather(completion, ready, 0);
  return s;
}

/// Generates `name` for n ranks, or returns nullopt with the reason in `why` when the generator
/// is not written yet or does not support n. Other errors propagate.
inline std::optional<Schedule> try_generate(const std::string& name, Rank n, std::optional<Rank> straggler,
                                            std::string& why) {
  // Switch reductions (nvls) need multimem, which the executor does not lower (lowering.cpp
  // refuses them; lowering_test.cpp checks that).
  if (find_algorithm(name).needs_switch_reduction) {
    why = name + " reduces in the NVSwitch, which collsim-cuda does not lower";
    return std::nullopt;
  }
  try {
    return generate_schedule(name, AlgorithmOptions{n, straggler, 0});
  } catch (const ScheduleError& e) {
    why = e.what();
    return std::nullopt;
  }
}

/// The algorithms' reference executor run on the chunk layout of chunk_split.hpp: every chunk is
/// padded to the largest chunk size (execute_on_buffers needs equal chunks), inputs are
/// input_value at the unpadded element index, and the result is mapped back to `count` elements.
inline std::vector<std::vector<float>> reference_buffers(const Schedule& schedule, std::size_t count) {
  const ChunkSplit split(count, schedule.num_chunks);
  std::size_t padded_chunk = 1;
  for (std::uint32_t c = 0; c < schedule.num_chunks; ++c) padded_chunk = std::max(padded_chunk, split.size(c));
  std::vector<std::vector<double>> padded(schedule.n, std::vector<double>(padded_chunk * schedule.num_chunks, 0.0));
  for (Rank r = 0; r < schedule.n; ++r) {
    for (std::uint32_t c = 0; c < schedule.num_chunks; ++c) {
      for (std::size_t j = 0; j < split.size(c); ++j) {
        padded[r][c * padded_chunk + j] = input_value(r, split.begin(c) + j);
      }
    }
  }
  execute_on_buffers(schedule, padded_chunk, padded);
  std::vector<std::vector<float>> result(schedule.n, std::vector<float>(count));
  for (Rank r = 0; r < schedule.n; ++r) {
    for (std::uint32_t c = 0; c < schedule.num_chunks; ++c) {
      for (std::size_t j = 0; j < split.size(c); ++j) {
        result[r][split.begin(c) + j] = static_cast<float>(padded[r][c * padded_chunk + j]);
      }
    }
  }
  return result;
}

}  // namespace collsim::cuda_validate::testing
