#include <algorithm>

#include "collsim/cuda_validate/input_data.hpp"
#include "cuda_check.hpp"
#include "kernels.hpp"

namespace collsim::cuda_validate {
namespace {

constexpr int kThreads = 256;
// Grid-stride loops: enough blocks to fill any current GPU, few enough to keep launch cheap.
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocks_for(std::size_t items) {
  const std::size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<std::size_t>(blocks, 1, kMaxBlocks));
}

__device__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void fill_input_kernel(float* buffer, std::size_t count, std::uint32_t rank) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t e = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < count; e += stride) {
    buffer[e] = input_value(rank, e);
  }
}

__global__ void reduce_add_scalar_kernel(float* dst, const float* src, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    dst[i] += src[i];
  }
}

__global__ void reduce_add_vector_kernel(float4* dst, const float4* src, std::size_t count4) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count4; i += stride) {
    float4 a = dst[i];
    const float4 b = src[i];
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
    a.w += b.w;
    dst[i] = a;
  }
}

__global__ void spin_kernel(std::uint64_t delay_ns) {
  const std::uint64_t start = globaltimer_ns();
  while (globaltimer_ns() - start < delay_ns) {
  }
}

__global__ void check_kernel(const float* buffer, std::size_t begin, std::size_t count, std::uint64_t rank_mask,
                             unsigned long long* counters) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  unsigned long long first = ~0ull;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const std::size_t e = begin + i;
    float expected = 0.0f;
    // Only the set bits: a mask of 8 ranks costs 8 evaluations, not 64.
    for (std::uint64_t m = rank_mask; m != 0; m &= m - 1) {
      expected += input_value(static_cast<std::uint32_t>(__ffsll(static_cast<long long>(m)) - 1), e);
    }
    if (buffer[e] != expected) {
      ++bad;
      first = min(first, static_cast<unsigned long long>(e));
    }
  }
  if (bad != 0) {
    atomicAdd(&counters[0], bad);
    atomicMin(&counters[1], first);
  }
}

__global__ void gate_kernel(const volatile int* flag, volatile int* timed_out, std::uint64_t timeout_ns) {
  const std::uint64_t start = globaltimer_ns();
  while (*flag == 0) {
    if (globaltimer_ns() - start > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}

void check_launch(const char* kernel) { check_cuda(cudaGetLastError(), kernel, __FILE__, __LINE__); }

}  // namespace

void preload_kernels() {
  // cudaFuncGetAttributes loads the kernel's module on the current device (lazy loading would
  // otherwise do it at the first launch).
  cudaFuncAttributes attributes{};
  check_cuda(cudaFuncGetAttributes(&attributes, fill_input_kernel), "cudaFuncGetAttributes(fill_input_kernel)",
             __FILE__, __LINE__);
  check_cuda(cudaFuncGetAttributes(&attributes, reduce_add_scalar_kernel),
             "cudaFuncGetAttributes(reduce_add_scalar_kernel)", __FILE__, __LINE__);
  check_cuda(cudaFuncGetAttributes(&attributes, reduce_add_vector_kernel),
             "cudaFuncGetAttributes(reduce_add_vector_kernel)", __FILE__, __LINE__);
  check_cuda(cudaFuncGetAttributes(&attributes, spin_kernel), "cudaFuncGetAttributes(spin_kernel)", __FILE__, __LINE__);
  check_cuda(cudaFuncGetAttributes(&attributes, check_kernel), "cudaFuncGetAttributes(check_kernel)", __FILE__,
             __LINE__);
  check_cuda(cudaFuncGetAttributes(&attributes, gate_kernel), "cudaFuncGetAttributes(gate_kernel)", __FILE__, __LINE__);
}

void launch_fill_input(float* buffer, std::size_t count, std::uint32_t rank, cudaStream_t stream) {
  if (count == 0) return;
  fill_input_kernel<<<blocks_for(count), kThreads, 0, stream>>>(buffer, count, rank);
  check_launch("fill_input_kernel<<<>>>");
}

void launch_reduce_add(float* dst, const float* src, std::size_t count, cudaStream_t stream) {
  if (count == 0) return;
  const bool aligned =
      reinterpret_cast<std::uintptr_t>(dst) % 16 == 0 && reinterpret_cast<std::uintptr_t>(src) % 16 == 0;
  if (aligned && count >= 4) {
    const std::size_t count4 = count / 4;
    reduce_add_vector_kernel<<<blocks_for(count4), kThreads, 0, stream>>>(reinterpret_cast<float4*>(dst),
                                                                          reinterpret_cast<const float4*>(src), count4);
    check_launch("reduce_add_vector_kernel<<<>>>");
    const std::size_t tail = count - count4 * 4;
    if (tail == 0) return;
    dst += count4 * 4;
    src += count4 * 4;
    count = tail;
  }
  reduce_add_scalar_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, src, count);
  check_launch("reduce_add_scalar_kernel<<<>>>");
}

void launch_spin(std::uint64_t delay_ns, cudaStream_t stream) {
  if (delay_ns == 0) return;
  spin_kernel<<<1, 1, 0, stream>>>(delay_ns);
  check_launch("spin_kernel<<<>>>");
}

void launch_check(const float* buffer, std::size_t begin, std::size_t count, std::uint64_t rank_mask,
                  unsigned long long* counters, cudaStream_t stream) {
  if (count == 0) return;
  check_kernel<<<blocks_for(count), kThreads, 0, stream>>>(buffer, begin, count, rank_mask, counters);
  check_launch("check_kernel<<<>>>");
}

void launch_gate(const volatile int* flag, volatile int* timed_out, std::uint64_t timeout_ns, cudaStream_t stream) {
  gate_kernel<<<1, 1, 0, stream>>>(flag, timed_out, timeout_ns);
  check_launch("gate_kernel<<<>>>");
}

}  // namespace collsim::cuda_validate
