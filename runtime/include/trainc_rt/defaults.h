//===- defaults.h - sizes and defaults the compiler and runtime share -----===//
//
// One table of the numbers that both sides must agree on: what the runtime
// allocates beside the memory plan (so that the compiler's --report-memory
// counts it), the data-parallel buckets' layout that the plan and the
// generated code share, the fp16 loss scaler's defaults that the compiler
// writes as initial state and the trainer prints and uses, and the work
// below which a CPU kernel stays on one thread. Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_DEFAULTS_H
#define TRAINC_RT_DEFAULTS_H

#include <cstdint>

namespace trainc::rt {

/// The scratch cuDNN's algorithm search is offered (trainer
/// --cudnn-benchmark, on by default); it stays allocated afterwards.
inline constexpr int64_t kCudnnSearchWorkspaceBytes = int64_t(256) << 20;
/// cuDNN algorithms that need more workspace than this are not used.
inline constexpr int64_t kCudnnMaxWorkspaceBytes = int64_t(512) << 20;

/// The members of one data-parallel bucket (the results of a
/// tc.all_reduce) share one buffer, each at an offset aligned to this many
/// bytes, so that the bucket is a single collective over contiguous memory.
inline constexpr int64_t kBucketMemberAlignment = 256;

/// fp16 dynamic loss scaling, as PyTorch's GradScaler: the scale at the
/// start, and the good steps in a row after which it doubles
/// (--scale-growth-interval).
inline constexpr float kInitialLossScale = 65536.0f;
inline constexpr int64_t kScaleGrowthInterval = 2000;

/// A CPU kernel with less work than this (values read and written, 16 a
/// transcendental call) stays on the calling thread: waking the OpenMP team
/// costs microseconds. The runtime's kernels (cpu/Threading.h) and the
/// generated element loops (codegen/KernelWriter.cpp) use the same bound.
inline constexpr int64_t kCpuParallelWork = 32768;

} // namespace trainc::rt

#endif // TRAINC_RT_DEFAULTS_H
