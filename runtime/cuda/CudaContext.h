//===- CudaContext.h - the CUDA Context for the kernels ---------*- C++ -*-===//
//
// The CUDA implementation of trainc::rt::Context: device memory, one
// non-blocking compute stream on which every kernel and copy of the context
// runs, a cuBLASLt and a cuDNN handle bound to that stream, growing scratch
// memory, per-shape plan caches and a device-side error record.
//
// Kernel launchers receive the generic `Context &` from generated code and
// call `asCuda(ctx)`, a static_cast: a binary links exactly one runtime
// library, and the CUDA library's createContext only ever makes a
// CudaContext, so the cast needs no dynamic check.
//
// Included by the .cu files of runtime/cuda only (it pulls in the CUDA,
// cuBLASLt and cuDNN headers); never by generated code or common/.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CUDA_CUDACONTEXT_H
#define TRAINC_RT_CUDA_CUDACONTEXT_H

#include "trainc_rt/device.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace trainc::cuda {

using ::trainc::rt::Status;

//===----------------------------------------------------------------------===//
// Device-side errors
//===----------------------------------------------------------------------===//

/// What a kernel found wrong in device data (labels, indices). A launcher
/// cannot see device values without a host synchronisation, so kernels record
/// the first such error here and the context reports it as a Status at its
/// next synchronize() or copyToHost().
enum class DeviceErrorCode : int32_t {
  None = 0,
  CrossEntropyLabel = 1,
  NllLossLabel = 2,
  GatherIndex = 3,
  BatchNormCount = 4,
};

/// The first device error since the last report. `code` is claimed with
/// atomicCAS, so only the first failing thread writes `value` and `bound`.
struct DeviceErrorRecord {
  int32_t code;
  int32_t reserved;
  /// The offending label or index, the exclusive upper bound it broke, and
  /// where it was (flat sample or index position).
  int64_t value;
  int64_t bound;
  int64_t position;
};

//===----------------------------------------------------------------------===//
// Plan cache
//===----------------------------------------------------------------------===//

/// Per-shape state a launcher keeps across calls: library descriptors and the
/// chosen algorithm, built once (outside the steady state) and reused, so a
/// step issues no descriptor creation or heuristic query after its first run.
class CachedPlan {
public:
  virtual ~CachedPlan() = default;
};

/// Identifies a plan: the kernel kind and the integers that determine it.
struct PlanKey {
  enum Kind : int32_t { Gemm = 1, Conv2d = 2 };
  int32_t kind = 0;
  std::array<int64_t, 24> values{};

  bool operator<(const PlanKey &other) const {
    if (kind != other.kind)
      return kind < other.kind;
    return values < other.values;
  }
};

//===----------------------------------------------------------------------===//
// CudaContext
//===----------------------------------------------------------------------===//

class CudaContext final : public ::trainc::rt::Context {
public:
  /// Picks device 0 and creates the stream, handles and error record; fails
  /// with "no CUDA device: ..." where there is no GPU or driver.
  static Status createContext(std::unique_ptr<::trainc::rt::Context> &context);
  ~CudaContext() override;

  CudaContext(const CudaContext &) = delete;
  CudaContext &operator=(const CudaContext &) = delete;

  const char *target() const override { return "cuda"; }
  Status allocate(void **ptr, size_t bytes) override;
  void deallocate(void *ptr) override;
  /// Enqueued on the compute stream. With pageable `src` the driver stages
  /// the data before returning, so `src` may be reused at once; with pinned
  /// `src` the copy is truly asynchronous and `src` must stay valid until
  /// the next synchronize().
  Status copyToDevice(void *dst, const void *src, size_t bytes) override;
  /// Synchronizes the stream (the caller reads `dst` next), and so also
  /// reports device errors recorded by earlier kernels.
  Status copyToHost(void *dst, const void *src, size_t bytes) override;
  Status fill(void *dst, int value, size_t bytes) override;
  /// Waits for the stream, frees retired scratch buffers and reports the
  /// first device error recorded since the last report (then clears it).
  Status synchronize() override;
  Status workspace(void **ptr, size_t bytes) override;
  /// cudaMallocHost / cudaFreeHost.
  Status allocateHost(void **ptr, size_t bytes) override;
  void deallocateHost(void *ptr) override;
  /// On the upload stream, a second non-blocking stream.
  Status uploadAsync(void *dst, const void *src, size_t bytes) override;
  Status downloadAsync(void *dst, const void *src, size_t bytes) override;
  Status copyOnDeviceAsync(void *dst, const void *src, size_t bytes) override;
  Status createEvent(int *event) override;
  /// On the compute stream the event follows a read-back of the device error
  /// record, so hostWait() can report the errors of the work before it.
  Status recordEvent(int event, Queue queue) override;
  Status queueWait(Queue queue, int event) override;
  Status hostWait(int event) override;
  /// MultiTensor.cu.
  Status lerpTensors(float *const *averages, const float *const *values,
                     const int64_t *sizes, int count, float weight) override;
  bool supportsGraphs() const override { return true; }
  Status beginGraph() override;
  Status endGraph(int *graph) override;
  Status launchGraph(int graph) override;
  uint64_t memoryEpoch() const override { return scratchEpoch; }
  void configureConvolutions(bool search, bool deterministic) override {
    searchAlgorithms = search;
    deterministicAlgorithms = deterministic;
  }
  /// "<device name> sm_<major><minor> cudnn <version> deterministic 0|1".
  std::string algorithmIdentity() const override;
  void useAlgorithmCache(::trainc::rt::AlgoCache *cache) override { algorithmCache = cache; }
  /// Data parallelism: the gradient buckets are summed by the
  /// communicator's NCCL, with overlap on a stream of their own (forked
  /// from the compute stream at allReduceStart, joined at allReduceWait),
  /// else on the compute stream.
  Status useCommunicator(::trainc::rt::Communicator *communicator,
                         ::trainc::rt::CommOverlap overlap) override;
  bool overlapsSums() const override { return sumStream != nullptr; }
  Status allReduceStart(int bucket, float *data, int64_t count) override;
  Status allReduceWait(int bucket) override;
  /// --profile (CudaProfiling.cpp): a pair of timing events on the compute
  /// stream around each call and an NVTX range named after its kernel;
  /// stopProfiling waits for the last event and reads the times.
  Status startProfiling(const ::trainc::rt::ProfiledCall *calls, int count) override;
  void profileBegin(int id) override;
  void profileEnd(int id) override;
  Status stopProfiling(std::vector<::trainc::rt::TimedCall> &timed) override;
  /// The choices of earlier runs (--cudnn-cache), or null.
  ::trainc::rt::AlgoCache *algorithmChoices() const { return algorithmCache; }
  /// --cudnn-benchmark: time the algorithms of each convolution plan once.
  bool searchConvolutions() const { return searchAlgorithms; }
  /// --deterministic: deterministic algorithms only.
  bool deterministicConvolutions() const { return deterministicAlgorithms; }

  cudaStream_t stream() const { return computeStream; }
  cublasLtHandle_t cublasLt() const { return cublasLtHandle; }
  cudnnHandle_t cudnn() const { return cudnnHandle; }
  DeviceErrorRecord *deviceErrors() const { return deviceErrorRecord; }
  int multiProcessorCount() const { return smCount; }

  /// Scratch for the library kernels themselves (cuDNN and cuBLASLt
  /// workspaces, padded copies, partial sums), kept apart from workspace()
  /// so that a pointer generated code got from workspace() stays valid
  /// across library calls. Valid until the next libraryWorkspace() call;
  /// stream order makes reuse by the next kernel safe.
  Status libraryWorkspace(void **ptr, size_t bytes);
  /// Scratch for the partial sums of the runtime's own reduction kernels
  /// (batch norm), apart from libraryWorkspace() so that they can run on
  /// f32 copies held there (the 16-bit entry points). Valid until the next
  /// reductionWorkspace() call.
  Status reductionWorkspace(void **ptr, size_t bytes);

  /// The plan cached under `key`, or null.
  CachedPlan *findPlan(const PlanKey &key) const;
  /// Caches `plan` under `key` and returns it.
  CachedPlan *addPlan(const PlanKey &key, std::unique_ptr<CachedPlan> plan);

private:
  CudaContext() = default;

  struct Scratch {
    void *ptr = nullptr;
    size_t bytes = 0;
  };
  /// Grows `scratch` to at least `bytes`. The old buffer may still be read by
  /// queued kernels, so it is retired (freed at the next synchronize())
  /// rather than freed now: cudaFree would synchronize the device. Growth
  /// calls cudaMalloc, so it must happen outside the steady state (the first
  /// step, before any CUDA graph capture).
  Status grow(Scratch &scratch, size_t bytes, const char *what);
  Status reportDeviceErrors();
  /// Reports (and clears) the error in `copy`, a host copy of the record.
  Status reportDeviceErrors(DeviceErrorRecord *copy);
  /// cudaMemcpyAsync on `stream`; errors name `site`.
  Status enqueueCopy(const char *site, void *dst, const void *src, size_t bytes,
                     cudaMemcpyKind kind, cudaStream_t stream);
  Status checkEvent(const char *site, int event) const;

  int device = 0;
  int smCount = 0;
  cudaStream_t computeStream = nullptr;
  cudaStream_t uploadStream = nullptr;
  /// Created without timing (the cheapest kind); destroyed with the context.
  std::vector<cudaEvent_t> events;
  /// Per event, pinned: the device error record as of the event (compute
  /// queue only; zero otherwise).
  std::vector<DeviceErrorRecord *> eventRecords;
  cublasLtHandle_t cublasLtHandle = nullptr;
  cudnnHandle_t cudnnHandle = nullptr;
  DeviceErrorRecord *deviceErrorRecord = nullptr;
  /// Pinned, so the read-back of the record is one small async copy.
  DeviceErrorRecord *hostErrorRecord = nullptr;
  Scratch userScratch;
  Scratch libraryScratch;
  Scratch reductionScratch;
  std::vector<void *> retired;
  /// Counts the moves of the three scratch buffers (memoryEpoch).
  uint64_t scratchEpoch = 0;
  bool searchAlgorithms = false, deterministicAlgorithms = false;
  ::trainc::rt::AlgoCache *algorithmCache = nullptr;
  ::trainc::rt::Communicator *ranks = nullptr;
  /// The buckets' stream (overlap), and per bucket the events that fork
  /// it from the compute stream and join it back; created without timing.
  cudaStream_t sumStream = nullptr;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> bucketEvents;
  /// Instantiated step graphs, destroyed with the context.
  std::vector<cudaGraphExec_t> graphs;
  /// --profile: the table's calls, the events (a pool that grows, two a
  /// call: begin, end; and the start), the ids timed since startProfiling
  /// and the first error of a begin or end (reported by stopProfiling).
  const ::trainc::rt::ProfiledCall *profiledCalls = nullptr;
  int numProfiledCalls = 0;
  std::vector<cudaEvent_t> profileEvents;
  cudaEvent_t profileStart = nullptr;
  std::vector<int> profiledIds;
  cudaError_t profileError = cudaSuccess;
  std::map<PlanKey, std::unique_ptr<CachedPlan>> plans;
};

/// See the file comment: the CUDA runtime only ever creates a CudaContext.
inline CudaContext &asCuda(::trainc::rt::Context &context) {
  return static_cast<CudaContext &>(context);
}

//===----------------------------------------------------------------------===//
// Error translation
//===----------------------------------------------------------------------===//

/// "<site>: <call> failed: <name> (<description>)". `call` may be the whole
/// expression text; only the callee name before '(' is kept.
Status cudaFailure(cudaError_t error, const char *site, const char *call);
Status cublasFailure(cublasStatus_t status, const char *site, const char *call);
Status cudnnFailure(cudnnStatus_t status, const char *site, const char *call);
/// "<site>: <message>".
Status invalidArgument(const char *site, const std::string &message);
/// Checks the launch of `kernel` (cudaGetLastError): a bad configuration
/// shows here; a fault during execution shows at the next synchronize().
Status checkLaunch(const char *site, const char *kernel);

} // namespace trainc::cuda

/// Returns a Status naming the enclosing function and the failed call.
#define TRAINC_CUDA_CALL(expr)                                                 \
  do {                                                                         \
    cudaError_t trainc_err_ = (expr);                                          \
    if (trainc_err_ != cudaSuccess)                                            \
      return ::trainc::cuda::cudaFailure(trainc_err_, __func__, #expr);        \
  } while (0)

#define TRAINC_CUBLAS_CALL(expr)                                               \
  do {                                                                         \
    cublasStatus_t trainc_err_ = (expr);                                       \
    if (trainc_err_ != CUBLAS_STATUS_SUCCESS)                                  \
      return ::trainc::cuda::cublasFailure(trainc_err_, __func__, #expr);      \
  } while (0)

#define TRAINC_CUDNN_CALL(expr)                                                \
  do {                                                                         \
    cudnnStatus_t trainc_err_ = (expr);                                        \
    if (trainc_err_ != CUDNN_STATUS_SUCCESS)                                   \
      return ::trainc::cuda::cudnnFailure(trainc_err_, __func__, #expr);       \
  } while (0)

/// After a <<<...>>> launch: returns the launch error, naming the kernel.
#define TRAINC_CHECK_LAUNCH(kernel)                                            \
  TRAINC_RETURN_IF_ERROR(::trainc::cuda::checkLaunch(__func__, kernel))

#endif // TRAINC_RT_CUDA_CUDACONTEXT_H
