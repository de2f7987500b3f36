//===- device.h - the device abstraction -----------------------*- C++ -*-===//
//
// One implementation per target library (CPU: host memory and OpenMP; CUDA:
// device memory, a compute stream and a copy stream). A Context owns the
// device state a step needs: streams, library handles, scratch workspace.
// Not thread-safe: one Context per thread that runs steps.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_DEVICE_H
#define TRAINC_RT_DEVICE_H

#include "trainc_rt/status.h"

#include <cstddef>
#include <memory>

namespace trainc::rt {

class Context {
public:
  virtual ~Context() = default;
  /// "cpu" or "cuda".
  virtual const char *target() const = 0;
  /// Device memory, 256-byte aligned. The caller frees it with deallocate.
  virtual Status allocate(void **ptr, size_t bytes) = 0;
  virtual void deallocate(void *ptr) = 0;
  /// Host <-> device copies, ordered with the step's work.
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  virtual Status fill(void *dst, int value, size_t bytes) = 0;
  /// Waits for all work issued so far.
  virtual Status synchronize() = 0;
  /// Scratch memory for library kernels (im2col, cuDNN workspaces), valid
  /// until the next call; grows but is never freed before the Context.
  virtual Status workspace(void **ptr, size_t bytes) = 0;
};

/// Creates the Context of the target this library was built for.
Status createContext(std::unique_ptr<Context> &context);

} // namespace trainc::rt

#endif // TRAINC_RT_DEVICE_H
