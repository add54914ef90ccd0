// Device kernels of collsim-cuda, behind plain host launch functions (only kernels.cu needs nvcc).
// Every launcher enqueues on `stream` (whose device must be current) and throws CudaError if the
// launch fails.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace collsim::cuda_validate {

/// Loads every kernel below on the current device now (CUDA loads lazily by default since 12.2,
/// at the first launch, which may synchronise the context). Throws CudaError.
void preload_kernels();

/// buffer[e] = input_value(rank, e) for e in [0, count).
void launch_fill_input(float* buffer, std::size_t count, std::uint32_t rank, cudaStream_t stream);

/// dst[i] += src[i] for i in [0, count): the reduction of `reduce` transfers. Uses 16-byte
/// vector loads when both pointers are 16-byte aligned.
void launch_reduce_add(float* dst, const float* src, std::size_t count, cudaStream_t stream);

/// Occupies the stream for `delay_ns` nanoseconds of the GPU's %globaltimer: the straggler's
/// late arrival, so work behind it on the stream really starts late while other GPUs proceed.
void launch_spin(std::uint64_t delay_ns, cudaStream_t stream);

/// Compares buffer[e] for e in [begin, begin + count) with expected_sum(rank_mask, e).
/// counters[0] += mismatches; counters[1] = min(counters[1], first bad element). The caller
/// sets counters to {0, ULLONG_MAX} beforehand.
void launch_check(const float* buffer, std::size_t begin, std::size_t count, std::uint64_t rank_mask,
                  unsigned long long* counters, cudaStream_t stream);

/// Spins until *flag (host-mapped memory) becomes non-zero, or `timeout_ns` passed, in which case
/// it sets *timed_out = 1. Holds the stream while the host enqueues a run.
void launch_gate(const volatile int* flag, volatile int* timed_out, std::uint64_t timeout_ns, cudaStream_t stream);

}  // namespace collsim::cuda_validate
