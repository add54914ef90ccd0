// Checked CUDA and NCCL calls: a failure throws collsim::CudaError naming the call, the source
// location and the library's error string.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace collsim::cuda_validate {

/// Throws CudaError("<call> failed at <file>:<line>: <error>") unless `status` is cudaSuccess.
void check_cuda(cudaError_t status, const char* call, const char* file, int line);
/// Throws CudaError as check_cuda, with NCCL's error string and last error message.
void check_nccl(ncclResult_t status, const char* call, const char* file, int line);

}  // namespace collsim::cuda_validate

#define COLLSIM_CUDA_CHECK(call) ::collsim::cuda_validate::check_cuda((call), #call, __FILE__, __LINE__)
#define COLLSIM_NCCL_CHECK(call) ::collsim::cuda_validate::check_nccl((call), #call, __FILE__, __LINE__)
