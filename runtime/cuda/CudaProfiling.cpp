//===- CudaProfiling.cpp - the CUDA target's --profile --------------------===//
//
// Each call of a step function between two timing events on the compute
// stream, inside an NVTX range named after its kernel (Nsight Systems shows
// the ranges over the kernels they launched). The times are the device's:
// stopProfiling waits for the last event and reads each pair.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"

#include "trainc_rt/program.h"

#include <nvtx3/nvToolsExt.h>

namespace trainc::cuda {

using ::trainc::rt::ProfiledCall;
using ::trainc::rt::TimedCall;

Status CudaContext::startProfiling(const ProfiledCall *calls, int count) {
  profiledCalls = calls;
  numProfiledCalls = count;
  profiledIds.clear();
  profileError = cudaSuccess;
  if (!profileStart)
    TRAINC_CUDA_CALL(cudaEventCreate(&profileStart));
  TRAINC_CUDA_CALL(cudaEventRecord(profileStart, computeStream));
  timing = true;
  return Status();
}

void CudaContext::profileBegin(int id) {
  const size_t k = profiledIds.size();
  while (profileError == cudaSuccess && profileEvents.size() < 2 * (k + 1)) {
    cudaEvent_t event = nullptr;
    profileError = cudaEventCreate(&event);
    if (profileError == cudaSuccess)
      profileEvents.push_back(event);
  }
  if (profileError != cudaSuccess)
    return;
  nvtxRangePushA(id >= 0 && id < numProfiledCalls ? profiledCalls[id].kernel : "call");
  profiledIds.push_back(id);
  profileError = cudaEventRecord(profileEvents[2 * k], computeStream);
}

void CudaContext::profileEnd(int id) {
  if (profileError != cudaSuccess || profiledIds.empty() || profiledIds.back() != id)
    return;
  nvtxRangePop();
  profileError = cudaEventRecord(profileEvents[2 * profiledIds.size() - 1], computeStream);
}

Status CudaContext::stopProfiling(std::vector<TimedCall> &timed) {
  timing = false;
  timed.clear();
  if (profileError != cudaSuccess)
    return cudaFailure(profileError, "--profile", "cudaEventRecord(event, computeStream)");
  if (profiledIds.empty())
    return Status();
  TRAINC_CUDA_CALL(cudaEventSynchronize(profileEvents[2 * profiledIds.size() - 1]));
  for (size_t k = 0; k < profiledIds.size(); ++k) {
    float start = 0, length = 0;
    TRAINC_CUDA_CALL(cudaEventElapsedTime(&start, profileStart, profileEvents[2 * k]));
    TRAINC_CUDA_CALL(cudaEventElapsedTime(&length, profileEvents[2 * k], profileEvents[2 * k + 1]));
    timed.push_back({profiledIds[k], start * 1e-3, length * 1e-3});
  }
  return Status();
}

} // namespace trainc::cuda
