//===- CpuContext.cpp - the CPU device: host memory -----------------------===//
//
// "Device" memory is host memory, copies are memcpy and every kernel runs
// synchronously on the calling thread (plus its OpenMP team), so
// synchronize() has nothing to wait for but the gradient buckets a
// data-parallel step sums on a thread of their own (BackgroundSums.h).
//
//===----------------------------------------------------------------------===//

#include "trainc_rt/device.h"
#include "trainc_rt/launch.h"
#include "trainc_rt/lerp.h"

#include "BackgroundSums.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

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
  ~CpuContext() override {
    background.reset(); // its pending sums write into the step's buffers
    std::free(scratch);
  }

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

  Status synchronize() override { return background ? background->waitAll() : Status(); }

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

  Status copyOnDeviceAsync(void *dst, const void *src, size_t bytes) override {
    return copy("copyOnDeviceAsync", dst, src, bytes);
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

  Status lerpTensors(float *const *averages, const float *const *values, const int64_t *sizes,
                     int count, float weight) override {
    for (int t = 0; t < count; ++t) {
      if ((!averages[t] || !values[t]) && sizes[t] > 0)
        return Status::error("cpu: lerpTensors: tensor " + std::to_string(t) + " is null");
      float *a = averages[t];
      const float *v = values[t];
      const int64_t n = sizes[t];
#pragma omp parallel for simd schedule(static) if (n >= (1 << 16))
      for (int64_t i = 0; i < n; ++i)
        a[i] = lerpTowards(a[i], v[i], weight);
    }
    return Status();
  }

  /// Auto overlaps where this process may run on more cores than its
  /// kernels' threads and the machine has a core per rank to spare: the
  /// summing thread (which Open MPI keeps busy while it waits) then takes
  /// none of their time. Under mpirun's default binding (a core per rank)
  /// it would; on two cores with two ranks the step was 0.67x as fast with
  /// it (bench/data_parallel.py).
  Status useCommunicator(Communicator *communicator, CommOverlap overlap) override {
    background.reset();
    ranks = communicator;
    bool wanted = overlap == CommOverlap::On ||
                  (overlap == CommOverlap::Auto && spareCores());
    if (ranks && ranks->size() > 1 && wanted && ranks->sumsFromAnyThread())
      background = std::make_unique<BackgroundSums>(ranks);
    else if (ranks && ranks->size() > 1 && overlap == CommOverlap::On && ranks->rank() == 0)
      std::fprintf(stderr, "note: --comm-overlap on: this MPI library does not allow sums "
                           "from a second thread (MPI_THREAD_SERIALIZED); the sums run in "
                           "the step's order\n");
    return Status();
  }
  bool overlapsSums() const override { return background != nullptr; }

  Status allReduceStart(int bucket, float *data, int64_t count) override {
    if (!ranks || ranks->size() == 1)
      return Status();
    if (background) {
      background->start(bucket, data, count);
      return Status();
    }
    // In the step's order: the step waits for all of it.
    auto t0 = Clock::now();
    Status summed = ranks->allReduceSum(data, count);
    waited += std::chrono::duration<double>(Clock::now() - t0).count();
    return bucketError(bucket, summed);
  }

  Status allReduceWait(int bucket) override {
    if (!background)
      return Status();
    auto t0 = Clock::now();
    Status summed = background->wait(bucket);
    waited += std::chrono::duration<double>(Clock::now() - t0).count();
    return bucketError(bucket, summed);
  }

  double secondsWaitingForSums() const override { return waited; }

private:
  using Clock = std::chrono::steady_clock;

  /// Whether this process may run on a core its kernels' threads leave
  /// free, and the machine has one per rank besides their threads.
  static bool spareCores() {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0)
      return false;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = omp_get_max_threads();
    return CPU_COUNT(&mask) > threads &&
           online >= static_cast<long>(launchOf().localRanks) * (threads + 1);
  }

  static Status bucketError(int bucket, const Status &status) {
    return status.ok() ? status
                       : Status::error("data parallelism: bucket " + std::to_string(bucket) +
                                       ": " + status.message());
  }

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
  std::unique_ptr<BackgroundSums> background;
  double waited = 0;
};

} // namespace

Status createContext(std::unique_ptr<Context> &context) {
  context = std::make_unique<CpuContext>();
  return Status();
}

} // namespace trainc::rt
