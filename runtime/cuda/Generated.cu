//===- Generated.cu - what generated CUDA programs call besides kernels ---===//
//
// The launchers of generated kernels run on the context's compute stream and
// check their launch like the library kernels do (see generated.h).
//
//===----------------------------------------------------------------------===//

#include "cuda/CudaContext.h"

#include "trainc_rt/generated.h"

namespace trainc::cuda {

cudaStream_t stream(rt::Context &ctx) {
  // Generated code only ever runs with the context of its own target.
  return static_cast<CudaContext &>(ctx).stream();
}

rt::Status checkLaunch(const char *kernel) {
  return checkLaunch("generated kernel", kernel);
}

} // namespace trainc::cuda
