// Published alpha-beta completion-time formulas, per algorithm, with one straggler of delay d.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "collsim/models/link_model.hpp"

namespace collsim {

struct ClosedFormInput {
  std::string algorithm;            ///< registry name
  std::uint32_t n = 0;              ///< ranks, >= 2
  double size_bytes = 0;            ///< buffer per rank, >= 0
  LinkModel link;                   ///< alpha, beta, gamma
  double delay_s = 0;               ///< the straggler arrives delay_s after everyone else, >= 0
  StartMode start = StartMode::Barrier;
  std::uint32_t pipeline_chunks = 0;///< trees: as in AlgorithmOptions (0 = default)
};

struct ClosedFormResult {
  double time_s = 0;                    ///< first arrival (t = 0) to last finish
  double time_after_last_arrival_s = 0; ///< last finish minus the straggler's arrival (d)
  double collective_s = 0;              ///< the same algorithm with no delay
  std::uint32_t rounds = 0;             ///< rounds on the critical path
};

/// True when `algorithm` has a closed form for this start mode.
bool has_closed_form(std::string_view algorithm, StartMode start);

/// Completion time of `input.algorithm` by its alpha-beta formula. Throws ConfigError for an
/// unknown algorithm or bad numbers (n < 2, negative size or delay) and ScheduleError when the
/// algorithm has no closed form for the start mode or does not support n.
ClosedFormResult closed_form_time(const ClosedFormInput& input);

}  // namespace collsim
