//===- Average.cu - running weight averages on the GPU --------------------===//
//
// Context::lerpTensors: the trainer's EMA and SWA averages move toward the
// parameters after an optimizer step. The tensors go to the kernel by value,
// up to kTensorsPerLaunch at a time (the pointer lists fit the 4 KiB of
// kernel parameters, as in apex's multi_tensor_apply), so a model of N
// parameters takes ceil(N / kTensorsPerLaunch) launches, not N; every
// block strides over every tensor of its launch.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "KernelUtils.cuh"

#include "trainc_rt/lerp.h"

#include <algorithm>
#include <string>

namespace trainc::cuda {
namespace {

constexpr int kTensorsPerLaunch = 64;

struct LerpList {
  float *averages[kTensorsPerLaunch];
  const float *values[kTensorsPerLaunch];
  int64_t sizes[kTensorsPerLaunch];
  int count;
};

__global__ void lerpTensorsKernel(LerpList list, float weight) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int t = 0; t < list.count; ++t) {
    float *a = list.averages[t];
    const float *v = list.values[t];
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < list.sizes[t];
         i += stride)
      a[i] = ::trainc::rt::lerpTowards(a[i], v[i], weight);
  }
}

} // namespace

Status CudaContext::lerpTensors(float *const *averages, const float *const *values,
                                const int64_t *sizes, int count, float weight) {
  for (int first = 0; first < count; first += kTensorsPerLaunch) {
    LerpList list{};
    list.count = std::min(kTensorsPerLaunch, count - first);
    int64_t largest = 0;
    for (int t = 0; t < list.count; ++t) {
      if ((!averages[first + t] || !values[first + t]) && sizes[first + t] > 0)
        return invalidArgument("lerpTensors", "tensor " + std::to_string(first + t) +
                                                  " is null");
      list.averages[t] = averages[first + t];
      list.values[t] = values[first + t];
      list.sizes[t] = sizes[first + t];
      largest = std::max(largest, sizes[first + t]);
    }
    if (largest == 0)
      continue;
    lerpTensorsKernel<<<gridFor(*this, largest, kBlockSize), kBlockSize, 0, computeStream>>>(
        list, weight);
    TRAINC_RETURN_IF_ERROR(checkLaunch("lerpTensors", "lerpTensorsKernel"));
  }
  return Status();
}

} // namespace trainc::cuda
