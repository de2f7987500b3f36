//===- DnnlCommon.h - what the oneDNN callers share -------------*- C++ -*-===//
//
// Included by the translation units that call oneDNN (Dnnl.cpp: the
// convolutions; DnnlMatmul.cpp: the GEMMs) and by no other: dnnl.hpp stays
// out of the rest of the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_DNNLCOMMON_H
#define TRAINC_RT_CPU_DNNLCOMMON_H

#include "trainc_rt/kernels.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>

namespace trainc::cpu::dnnl_common {

/// The process's oneDNN CPU engine.
dnnl::engine &cpuEngine();

/// This thread's oneDNN stream on cpuEngine().
dnnl::stream &threadStream();

/// oneDNN's name of an element type (F32, BF16, F16), or none.
std::optional<dnnl::memory::data_type> dnnlType(::trainc::rt::DType type);

/// This thread's scratch buffer number `slot` (0-5), at least `bytes` long.
void *scratch(int slot, size_t bytes);

/// While one lives, this thread's OpenMP thread count is 1: a primitive
/// made then plans its work for one thread and runs on the calling thread
/// alone. The count is set back when it goes.
class OneThread {
public:
  OneThread();
  ~OneThread();
  OneThread(const OneThread &) = delete;
  OneThread &operator=(const OneThread &) = delete;

private:
  int saved;
};

/// Whether the environment variable `name` says `value` (an A/B switch
/// back to the path oneDNN replaced).
bool environmentSays(const char *name, const char *value);

} // namespace trainc::cpu::dnnl_common

#endif // TRAINC_RT_CPU_DNNLCOMMON_H
