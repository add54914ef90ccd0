#include "cuda_check.hpp"

#include <fmt/format.h>

#include <string>

#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  throw CudaError(fmt::format("{} failed at {}:{}: {} ({})", call, file, line, cudaGetErrorString(status),
                              cudaGetErrorName(status)));
}

void check_nccl(ncclResult_t status, const char* call, const char* file, int line) {
  if (status == ncclSuccess) return;
  const char* last = ncclGetLastError(nullptr);
  const std::string detail = last != nullptr && *last != '\0' ? fmt::format(" ({})", last) : std::string();
  throw CudaError(fmt::format("{} failed at {}:{}: {}{}", call, file, line, ncclGetErrorString(status), detail));
}

}  // namespace collsim::cuda_validate
