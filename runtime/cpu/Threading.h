//===- Threading.h - when a CPU kernel takes the thread team ----*- C++ -*-===//
//
// Waking the OpenMP team costs microseconds (more once its threads have gone
// to sleep between steps): a kernel with little work runs faster on the
// calling thread. The runtime's kernels ask worthThreads with the values
// they read and write; generated kernels use the same bound
// (trainc_rt/defaults.h).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_THREADING_H
#define TRAINC_RT_CPU_THREADING_H

#include "trainc_rt/defaults.h"

#include <cstdint>

namespace trainc::cpu::detail {

inline bool worthThreads(int64_t work) { return work >= ::trainc::rt::kCpuParallelWork; }

} // namespace trainc::cpu::detail

#endif // TRAINC_RT_CPU_THREADING_H
