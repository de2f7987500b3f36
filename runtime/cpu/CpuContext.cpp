//===- CpuContext.cpp - the CPU device: host memory -----------------------===//
//
// "Device" memory is host memory, copies are memcpy and every kernel runs
// synchronously on the calling thread (plus its OpenMP team), so
// synchronize() has nothing to wait for.
//
//===----------------------------------------------------------------------===//

#include "trainc_rt/device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <string>

namespace trainc::rt {
namespace {

constexpr size_t kAlignment = 256;

/// aligned_alloc needs a size that is a multiple of the alignment; zero-byte
/// requests still get a distinct pointer so callers need no special case.
Status alignedAllocate(void **ptr, size_t bytes) {
  size_t rounded = bytes == 0
                       ? kAlignment
                       : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  if (rounded < bytes)
    return Status::error("cpu: cannot allocate " + std::to_string(bytes) +
                         " bytes (size overflows)");
  *ptr = std::aligned_alloc(kAlignment, rounded);
  if (!*ptr)
    return Status::error("cpu: out of memory allocating " +
                         std::to_string(bytes) + " bytes");
  return Status();
}

class CpuContext final : public Context {
public:
  ~CpuContext() override { std::free(scratch); }

  const char *target() const override { return "cpu"; }

  Status allocate(void **ptr, size_t bytes) override {
    if (!ptr)
      return Status::error("cpu: allocate: ptr is null");
    return alignedAllocate(ptr, bytes);
  }

  void deallocate(void *ptr) override { std::free(ptr); }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    return copy("copyToDevice", dst, src, bytes);
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    return copy("copyToHost", dst, src, bytes);
  }

  Status fill(void *dst, int value, size_t bytes) override {
    if (bytes == 0)
      return Status();
    if (!dst)
      return Status::error("cpu: fill: dst is null");
    std::memset(dst, value, bytes);
    return Status();
  }

  Status synchronize() override { return Status(); }

  Status workspace(void **ptr, size_t bytes) override {
    if (!ptr)
      return Status::error("cpu: workspace: ptr is null");
    if (bytes > scratchBytes) {
      // Grow by at least 1.5x so a sequence of slightly larger requests
      // (layers of a network) does not reallocate every call. The old
      // contents need not survive: the workspace is scratch.
      size_t grown = std::max(bytes, scratchBytes + scratchBytes / 2);
      void *fresh = nullptr;
      TRAINC_RETURN_IF_ERROR(alignedAllocate(&fresh, grown));
      std::free(scratch);
      scratch = fresh;
      scratchBytes = grown;
    }
    *ptr = scratch;
    return Status();
  }

  Status allocateHost(void **ptr, size_t bytes) override {
    if (!ptr)
      return Status::error("cpu: allocateHost: ptr is null");
    return alignedAllocate(ptr, bytes);
  }

  void deallocateHost(void *ptr) override { std::free(ptr); }

  Status uploadAsync(void *dst, const void *src, size_t bytes) override {
    return copy("uploadAsync", dst, src, bytes);
  }

  Status downloadAsync(void *dst, const void *src, size_t bytes) override {
    return copy("downloadAsync", dst, src, bytes);
  }

  // Every operation completes before it returns: events have nothing to
  // order.
  Status createEvent(int *event) override {
    if (!event)
      return Status::error("cpu: createEvent: event is null");
    *event = events++;
    return Status();
  }
  Status recordEvent(int event, Queue) override { return checkEvent(event); }
  Status queueWait(Queue, int event) override { return checkEvent(event); }
  Status hostWait(int event) override { return checkEvent(event); }

  Status useCommunicator(Communicator *communicator) override {
    ranks = communicator;
    return Status();
  }

  /// The bucket's buffers packed into one host array, one sum over the
  /// ranks, and unpacked: a bucket is one collective.
  Status allReduceSum(int bucket, void *const *buffers, const int64_t *counts,
                      int n) override {
    if (!ranks || ranks->size() == 1)
      return Status();
    int64_t total = 0;
    for (int k = 0; k < n; ++k)
      total += counts[k];
    packed.resize(static_cast<size_t>(total));
    float *at = packed.data();
    for (int k = 0; k < n; ++k) {
      std::memcpy(at, buffers[k], static_cast<size_t>(counts[k]) * sizeof(float));
      at += counts[k];
    }
    Status summed = ranks->allReduceSum(packed.data(), total);
    if (!summed.ok())
      return Status::error("data parallelism: bucket " + std::to_string(bucket) + ": " +
                           summed.message());
    at = packed.data();
    for (int k = 0; k < n; ++k) {
      std::memcpy(buffers[k], at, static_cast<size_t>(counts[k]) * sizeof(float));
      at += counts[k];
    }
    return Status();
  }

private:
  Status checkEvent(int event) const {
    if (event < 0 || event >= events)
      return Status::error("cpu: unknown event " + std::to_string(event));
    return Status();
  }

  static Status copy(const char *what, void *dst, const void *src,
                     size_t bytes) {
    if (bytes == 0)
      return Status();
    if (!dst || !src)
      return Status::error(std::string("cpu: ") + what + ": " +
                           (!dst ? "dst" : "src") + " is null");
    std::memcpy(dst, src, bytes);
    return Status();
  }

  void *scratch = nullptr;
  size_t scratchBytes = 0;
  int events = 0;
  Communicator *ranks = nullptr;
  std::vector<float> packed;
};

} // namespace

Status createContext(std::unique_ptr<Context> &context) {
  context = std::make_unique<CpuContext>();
  return Status();
}

} // namespace trainc::rt
