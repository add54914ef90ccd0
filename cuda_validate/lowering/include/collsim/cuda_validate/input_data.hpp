// Deterministic per-rank input data, shared by the CPU host backend and the GPU kernels (this
// header compiles under nvcc as host+device code), so both validate against the same numbers.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define COLLSIM_HOST_DEVICE __host__ __device__
#else
#define COLLSIM_HOST_DEVICE
#endif

namespace collsim::cuda_validate {

/// Input of `rank` at element `element` of its buffer: an integer in 1..64 stored as a float.
/// Why integers: float sums of up to 2^18 such values are exact, so a correct AllReduce matches
/// the expected sum bit for bit whatever the summation order (NCCL, our kernels, the CPU).
/// The values mix rank and element so a misplaced chunk or a missing contribution is detected.
COLLSIM_HOST_DEVICE inline float input_value(std::uint32_t rank, std::uint64_t element) {
  const std::uint64_t mixed = (static_cast<std::uint64_t>(rank) * 2654435761ull) ^
                              (element * 40503ull + 17ull) ^ (element >> 17);
  return static_cast<float>(mixed % 64ull + 1ull);
}

/// Expected value at `element` after summing the inputs of the ranks whose bit is set in
/// `rank_mask` (bit r = rank r; ranks 0..63).
COLLSIM_HOST_DEVICE inline float expected_sum(std::uint64_t rank_mask, std::uint64_t element) {
  float sum = 0.0f;
  for (std::uint32_t r = 0; r < 64; ++r) {
    if ((rank_mask >> r) & 1ull) sum += input_value(r, element);
  }
  return sum;
}

}  // namespace collsim::cuda_validate
