//===- CudaContext.cu - the CUDA device context ---------------------------===//
//
// Everything of the context runs on one non-blocking compute stream, so the
// step's kernels, library calls and copies are ordered without any host
// synchronisation; only synchronize() and copyToHost() wait for the stream.
//
//===----------------------------------------------------------------------===//

#include "CudaContext.h"
#include "trainc_rt/launch.h"

#include <cstring>
#include <string>

namespace trainc::cuda {

//===----------------------------------------------------------------------===//
// Error translation
//===----------------------------------------------------------------------===//

namespace {

/// The callee of an expression text such as "cudaMalloc(&p, n)".
std::string calleeName(const char *call) {
  const char *paren = std::strchr(call, '(');
  std::string name = paren ? std::string(call, paren) : std::string(call);
  while (!name.empty() && (name.back() == ' ' || name.back() == '\n'))
    name.pop_back();
  // Drop a namespace qualification ("::cudaMalloc").
  size_t colon = name.rfind("::");
  return colon == std::string::npos ? name : name.substr(colon + 2);
}

Status failure(const char *site, const char *call, const char *name,
               const char *description) {
  return Status::error(std::string(site) + ": " + calleeName(call) +
                       " failed: " + name + " (" + description + ")");
}

} // namespace

Status cudaFailure(cudaError_t error, const char *site, const char *call) {
  return failure(site, call, cudaGetErrorName(error),
                 cudaGetErrorString(error));
}

Status cublasFailure(cublasStatus_t status, const char *site,
                     const char *call) {
  return failure(site, call, cublasGetStatusName(status),
                 cublasGetStatusString(status));
}

Status cudnnFailure(cudnnStatus_t status, const char *site, const char *call) {
  // cudnnGetLastErrorString has the detail of the most recent failure (which
  // argument was wrong); the status alone is often just "bad param".
  char detail[512] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  return failure(site, call, cudnnGetErrorString(status),
                 detail[0] ? detail : "no further detail");
}

Status invalidArgument(const char *site, const std::string &message) {
  return Status::error(std::string(site) + ": " + message);
}

Status checkLaunch(const char *site, const char *kernel) {
  cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess)
    return Status();
  return Status::error(std::string(site) + ": launch of " + kernel +
                       " failed: " + cudaGetErrorName(error) + " (" +
                       cudaGetErrorString(error) + ")");
}

//===----------------------------------------------------------------------===//
// Creation and teardown
//===----------------------------------------------------------------------===//

/// What a user of a CUDA trainer on a machine without a GPU does instead.
constexpr const char *kBuildForCpu =
    ". This trainer was compiled with --target=cuda; to train on this machine's CPU, "
    "compile the model again with --target=cpu";

Status
CudaContext::createContext(std::unique_ptr<::trainc::rt::Context> &context) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    // Without a GPU the runtime usually reports "insufficient driver" (there
    // is no driver at all), which reads like a version problem: say both.
    std::string hint;
    if (error == cudaErrorInsufficientDriver || error == cudaErrorNoDevice)
      hint = "; is an NVIDIA GPU present, with a driver for CUDA " +
             std::to_string(CUDART_VERSION / 1000) + "." +
             std::to_string(CUDART_VERSION % 1000 / 10) + " or newer?";
    return Status::error(
        std::string("no CUDA device: ") + cudaGetErrorString(error) + " (" +
        cudaGetErrorName(error) + " from cudaGetDeviceCount)" + hint + kBuildForCpu);
  }
  if (count == 0)
    return Status::error(std::string("no CUDA device: the driver reports 0 devices") +
                         kBuildForCpu);

  // Built before anything is created so that its destructor releases
  // whatever a failing step below already made.
  std::unique_ptr<CudaContext> self(new CudaContext());
  // Under mpirun each rank of a machine takes its own GPU (as
  // createNcclCommunicator does).
  self->device = ::trainc::rt::launchOf().localRank % count;
  TRAINC_CUDA_CALL(cudaSetDevice(self->device));
  TRAINC_CUDA_CALL(cudaDeviceGetAttribute(
      &self->smCount, cudaDevAttrMultiProcessorCount, self->device));
  // Non-blocking: the legacy default stream, which other libraries of the
  // process may use, must not serialize with the step.
  TRAINC_CUDA_CALL(
      cudaStreamCreateWithFlags(&self->computeStream, cudaStreamNonBlocking));
  TRAINC_CUDA_CALL(
      cudaStreamCreateWithFlags(&self->uploadStream, cudaStreamNonBlocking));
  TRAINC_CUBLAS_CALL(cublasLtCreate(&self->cublasLtHandle));
  TRAINC_CUDNN_CALL(cudnnCreate(&self->cudnnHandle));
  TRAINC_CUDNN_CALL(cudnnSetStream(self->cudnnHandle, self->computeStream));

  TRAINC_CUDA_CALL(
      cudaMalloc(reinterpret_cast<void **>(&self->deviceErrorRecord),
                 sizeof(DeviceErrorRecord)));
  TRAINC_CUDA_CALL(
      cudaMallocHost(reinterpret_cast<void **>(&self->hostErrorRecord),
                     sizeof(DeviceErrorRecord)));
  std::memset(self->hostErrorRecord, 0, sizeof(DeviceErrorRecord));
  TRAINC_CUDA_CALL(cudaMemsetAsync(self->deviceErrorRecord, 0,
                                   sizeof(DeviceErrorRecord),
                                   self->computeStream));
  TRAINC_CUDA_CALL(cudaStreamSynchronize(self->computeStream));
  context = std::move(self);
  return Status();
}

CudaContext::~CudaContext() {
  // Errors are ignored here: a destructor cannot report them, and a context
  // whose stream faulted must still release what it can.
  if (computeStream)
    (void)cudaStreamSynchronize(computeStream);
  if (sumStream)
    (void)cudaStreamSynchronize(sumStream);
  for (cudaGraphExec_t graph : graphs)
    (void)cudaGraphExecDestroy(graph);
  for (cudaEvent_t event : profileEvents)
    (void)cudaEventDestroy(event);
  if (profileStart)
    (void)cudaEventDestroy(profileStart);
  plans.clear(); // Plans hold library descriptors: destroy before handles.
  for (void *ptr : retired)
    (void)cudaFree(ptr);
  (void)cudaFree(userScratch.ptr);
  (void)cudaFree(libraryScratch.ptr);
  (void)cudaFree(reductionScratch.ptr);
  (void)cudaFree(deviceErrorRecord);
  (void)cudaFreeHost(hostErrorRecord);
  if (cudnnHandle)
    (void)cudnnDestroy(cudnnHandle);
  if (cublasLtHandle)
    (void)cublasLtDestroy(cublasLtHandle);
  if (uploadStream) {
    (void)cudaStreamSynchronize(uploadStream);
    (void)cudaStreamDestroy(uploadStream);
  }
  if (sumStream)
    (void)cudaStreamDestroy(sumStream);
  for (auto [fork, join] : bucketEvents) {
    (void)cudaEventDestroy(fork);
    (void)cudaEventDestroy(join);
  }
  for (cudaEvent_t event : events)
    (void)cudaEventDestroy(event);
  for (DeviceErrorRecord *record : eventRecords)
    (void)cudaFreeHost(record);
  if (computeStream)
    (void)cudaStreamDestroy(computeStream);
}

//===----------------------------------------------------------------------===//
// Memory and copies
//===----------------------------------------------------------------------===//

Status CudaContext::allocate(void **ptr, size_t bytes) {
  if (!ptr)
    return invalidArgument("allocate", "ptr is null");
  *ptr = nullptr;
  if (bytes == 0)
    return Status();
  TRAINC_CUDA_CALL(cudaMalloc(ptr, bytes));
  // cudaMalloc guarantees 256-byte alignment; the arena planner relies on
  // it, so a violation (a future allocator) is reported, not ignored.
  if (reinterpret_cast<uintptr_t>(*ptr) % 256 != 0) {
    (void)cudaFree(*ptr);
    *ptr = nullptr;
    return invalidArgument("allocate", "cudaMalloc returned memory that is "
                                       "not 256-byte aligned");
  }
  return Status();
}

void CudaContext::deallocate(void *ptr) {
  if (!ptr)
    return;
  // cudaFree waits for the device, so work still reading `ptr` finishes
  // first. Its error (a fault earlier in the stream) resurfaces at the next
  // synchronize(), which is where the caller can see it.
  (void)cudaFree(ptr);
}

Status CudaContext::enqueueCopy(const char *site, void *dst, const void *src, size_t bytes,
                                cudaMemcpyKind kind, cudaStream_t stream) {
  if (bytes == 0)
    return Status();
  if (!dst || !src)
    return invalidArgument(site, "null pointer");
  cudaError_t error = cudaMemcpyAsync(dst, src, bytes, kind, stream);
  if (error != cudaSuccess)
    return cudaFailure(error, site, "cudaMemcpyAsync(dst, src, bytes, kind, stream)");
  return Status();
}

Status CudaContext::copyToDevice(void *dst, const void *src, size_t bytes) {
  return enqueueCopy("copyToDevice", dst, src, bytes, cudaMemcpyHostToDevice, computeStream);
}

Status CudaContext::copyToHost(void *dst, const void *src, size_t bytes) {
  TRAINC_RETURN_IF_ERROR(
      enqueueCopy("copyToHost", dst, src, bytes, cudaMemcpyDeviceToHost, computeStream));
  // The caller reads `dst` next, so this must wait; it also reports device
  // errors of the kernels that produced `src`.
  return bytes == 0 ? Status() : synchronize();
}

Status CudaContext::fill(void *dst, int value, size_t bytes) {
  if (bytes == 0)
    return Status();
  if (!dst)
    return invalidArgument("fill", "dst is null");
  TRAINC_CUDA_CALL(cudaMemsetAsync(dst, value, bytes, computeStream));
  return Status();
}

Status CudaContext::allocateHost(void **ptr, size_t bytes) {
  if (!ptr)
    return invalidArgument("allocateHost", "ptr is null");
  *ptr = nullptr;
  TRAINC_CUDA_CALL(cudaMallocHost(ptr, bytes == 0 ? 1 : bytes));
  return Status();
}

void CudaContext::deallocateHost(void *ptr) {
  if (ptr)
    (void)cudaFreeHost(ptr);
}

Status CudaContext::uploadAsync(void *dst, const void *src, size_t bytes) {
  return enqueueCopy("uploadAsync", dst, src, bytes, cudaMemcpyHostToDevice, uploadStream);
}

Status CudaContext::downloadAsync(void *dst, const void *src, size_t bytes) {
  return enqueueCopy("downloadAsync", dst, src, bytes, cudaMemcpyDeviceToHost, computeStream);
}

Status CudaContext::copyOnDeviceAsync(void *dst, const void *src, size_t bytes) {
  return enqueueCopy("copyOnDeviceAsync", dst, src, bytes, cudaMemcpyDeviceToDevice,
                     computeStream);
}

Status CudaContext::createEvent(int *event) {
  if (!event)
    return invalidArgument("createEvent", "event is null");
  DeviceErrorRecord *record = nullptr;
  TRAINC_CUDA_CALL(cudaMallocHost(reinterpret_cast<void **>(&record), sizeof(DeviceErrorRecord)));
  std::memset(record, 0, sizeof(DeviceErrorRecord));
  cudaEvent_t created = nullptr;
  cudaError_t error = cudaEventCreateWithFlags(&created, cudaEventDisableTiming);
  if (error != cudaSuccess) {
    (void)cudaFreeHost(record);
    return cudaFailure(error, "createEvent", "cudaEventCreateWithFlags(&created, flags)");
  }
  events.push_back(created);
  eventRecords.push_back(record);
  *event = static_cast<int>(events.size()) - 1;
  return Status();
}

Status CudaContext::checkEvent(const char *site, int event) const {
  if (event < 0 || event >= static_cast<int>(events.size()))
    return invalidArgument(site, "unknown event " + std::to_string(event));
  return Status();
}

Status CudaContext::recordEvent(int event, Queue queue) {
  TRAINC_RETURN_IF_ERROR(checkEvent("recordEvent", event));
  // Each event has its own copy of the record, so that a later copy cannot
  // change what hostWait() of this event reads.
  if (queue == Queue::Compute)
    TRAINC_CUDA_CALL(cudaMemcpyAsync(eventRecords[event], deviceErrorRecord,
                                     sizeof(DeviceErrorRecord),
                                     cudaMemcpyDeviceToHost, computeStream));
  TRAINC_CUDA_CALL(cudaEventRecord(
      events[event], queue == Queue::Compute ? computeStream : uploadStream));
  return Status();
}

Status CudaContext::queueWait(Queue queue, int event) {
  TRAINC_RETURN_IF_ERROR(checkEvent("queueWait", event));
  TRAINC_CUDA_CALL(cudaStreamWaitEvent(
      queue == Queue::Compute ? computeStream : uploadStream, events[event], 0));
  return Status();
}

Status CudaContext::hostWait(int event) {
  TRAINC_RETURN_IF_ERROR(checkEvent("hostWait", event));
  TRAINC_CUDA_CALL(cudaEventSynchronize(events[event]));
  return reportDeviceErrors(eventRecords[event]);
}

Status CudaContext::synchronize() {
  // The record is read back with the same wait: one copy enqueued behind the
  // step's work, then one stream synchronisation for both.
  TRAINC_CUDA_CALL(cudaMemcpyAsync(hostErrorRecord, deviceErrorRecord,
                                   sizeof(DeviceErrorRecord),
                                   cudaMemcpyDeviceToHost, computeStream));
  TRAINC_CUDA_CALL(cudaStreamSynchronize(computeStream));
  TRAINC_CUDA_CALL(cudaStreamSynchronize(uploadStream));
  // A bucket started by a step that failed before its wait.
  if (sumStream)
    TRAINC_CUDA_CALL(cudaStreamSynchronize(sumStream));
  for (void *ptr : retired)
    TRAINC_CUDA_CALL(cudaFree(ptr));
  retired.clear();
  return reportDeviceErrors();
}

Status CudaContext::reportDeviceErrors() { return reportDeviceErrors(hostErrorRecord); }

Status CudaContext::reportDeviceErrors(DeviceErrorRecord *copy) {
  DeviceErrorRecord record = *copy;
  if (record.code == static_cast<int32_t>(DeviceErrorCode::None))
    return Status();
  // Clear it so that the next report covers only later work; stream order
  // puts the clear after everything already queued.
  std::memset(copy, 0, sizeof(DeviceErrorRecord));
  TRAINC_CUDA_CALL(cudaMemsetAsync(deviceErrorRecord, 0,
                                   sizeof(DeviceErrorRecord), computeStream));
  std::string value = std::to_string(record.value);
  std::string bound = std::to_string(record.bound);
  std::string position = std::to_string(record.position);
  switch (static_cast<DeviceErrorCode>(record.code)) {
  case DeviceErrorCode::CrossEntropyLabel:
    return Status::error("softmaxCrossEntropy: label " + value + " of sample " +
                         position + " is outside [0, " + bound +
                         ") (found on the device)");
  case DeviceErrorCode::NllLossLabel:
    return Status::error("nllLoss: label " + value + " of sample " + position +
                         " is outside [0, " + bound +
                         ") (found on the device)");
  case DeviceErrorCode::GatherIndex:
    return Status::error("gather: index " + value + " at position " + position +
                         " is outside [-" + bound + ", " + bound +
                         ") (found on the device)");
  case DeviceErrorCode::BatchNormCount:
    return Status::error("batch norm: " + value + " value(s) per channel in the batch: "
                         "training batch norm needs at least two (use a larger batch; "
                         "found on the device)");
  case DeviceErrorCode::None:
    break;
  }
  return Status::error("device error record holds unknown code " +
                       std::to_string(record.code));
}

//===----------------------------------------------------------------------===//
// Scratch and plans
//===----------------------------------------------------------------------===//

Status CudaContext::grow(Scratch &scratch, size_t bytes, const char *what) {
  if (bytes <= scratch.bytes)
    return Status();
  // Round up to 1 MiB and by a quarter more, so a sequence of slightly
  // larger requests does not allocate once per call.
  size_t size = bytes + bytes / 4;
  size = (size + (size_t(1) << 20) - 1) & ~((size_t(1) << 20) - 1);
  void *fresh = nullptr;
  cudaError_t error = cudaMalloc(&fresh, size);
  if (error != cudaSuccess)
    return Status::error(std::string(what) + ": cannot grow to " +
                         std::to_string(bytes) +
                         " bytes: " + cudaGetErrorString(error));
  if (scratch.ptr)
    retired.push_back(scratch.ptr);
  scratch.ptr = fresh;
  scratch.bytes = size;
  ++scratchEpoch;
  return Status();
}

//===----------------------------------------------------------------------===//
// Step graphs
//===----------------------------------------------------------------------===//

//===----------------------------------------------------------------------===//
// Data parallelism
//===----------------------------------------------------------------------===//

Status CudaContext::useCommunicator(::trainc::rt::Communicator *communicator,
                                    ::trainc::rt::CommOverlap overlap) {
  ranks = communicator;
  // Auto is on: the sums take the GPU's copy engines and a few SMs, not
  // the host.
  if (ranks && overlap != ::trainc::rt::CommOverlap::Off && !sumStream)
    TRAINC_CUDA_CALL(cudaStreamCreateWithFlags(&sumStream, cudaStreamNonBlocking));
  return Status();
}

Status CudaContext::allReduceStart(int bucket, float *data, int64_t count) {
  // One rank of mpirun still sums through NCCL (a copy in place): the path
  // of N ranks, checked and timed on one GPU.
  if (!ranks)
    return Status();
  if (bucket < 0)
    return invalidArgument("allReduceStart", "negative bucket");
  cudaStream_t stream = computeStream;
  if (sumStream) {
    // Events are made at the first step, which is never recorded as a graph.
    while (bucketEvents.size() <= static_cast<size_t>(bucket)) {
      std::pair<cudaEvent_t, cudaEvent_t> pair{nullptr, nullptr};
      TRAINC_CUDA_CALL(cudaEventCreateWithFlags(&pair.first, cudaEventDisableTiming));
      cudaError_t made = cudaEventCreateWithFlags(&pair.second, cudaEventDisableTiming);
      if (made != cudaSuccess)
        (void)cudaEventDestroy(pair.first);
      TRAINC_CUDA_CALL(made);
      bucketEvents.push_back(pair);
    }
    TRAINC_CUDA_CALL(cudaEventRecord(bucketEvents[bucket].first, computeStream));
    TRAINC_CUDA_CALL(cudaStreamWaitEvent(sumStream, bucketEvents[bucket].first, 0));
    stream = sumStream;
  }
  Status summed = ranks->allReduceSumDevice(data, count, stream);
  if (!summed.ok())
    return Status::error("data parallelism: bucket " + std::to_string(bucket) + ": " +
                         summed.message());
  if (sumStream)
    TRAINC_CUDA_CALL(cudaEventRecord(bucketEvents[bucket].second, sumStream));
  return Status();
}

Status CudaContext::allReduceWait(int bucket) {
  if (!sumStream || !ranks)
    return Status();
  if (bucket < 0 || static_cast<size_t>(bucket) >= bucketEvents.size())
    return invalidArgument("allReduceWait", "bucket " + std::to_string(bucket) +
                                                " was not started");
  TRAINC_CUDA_CALL(cudaStreamWaitEvent(computeStream, bucketEvents[bucket].second, 0));
  return Status();
}

std::string CudaContext::algorithmIdentity() const {
  cudaDeviceProp prop;
  std::string name = "unknown device";
  int major = 0, minor = 0;
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
    name = prop.name;
    major = prop.major;
    minor = prop.minor;
  }
  return name + " sm_" + std::to_string(major) + std::to_string(minor) + " cudnn " +
         std::to_string(cudnnGetVersion()) + " deterministic " +
         (deterministicAlgorithms ? "1" : "0");
}

Status CudaContext::beginGraph() {
  // Thread-local: the data workers' calls are not part of the recording,
  // and a call of this thread that cannot be recorded (cudaMalloc of a
  // growing scratch, a synchronous copy) fails instead of running.
  TRAINC_CUDA_CALL(cudaStreamBeginCapture(computeStream, cudaStreamCaptureModeThreadLocal));
  return Status();
}

Status CudaContext::endGraph(int *graph) {
  if (!graph)
    return invalidArgument("endGraph", "graph is null");
  cudaGraph_t recorded = nullptr;
  cudaError_t ended = cudaStreamEndCapture(computeStream, &recorded);
  if (ended != cudaSuccess || !recorded) {
    if (recorded)
      (void)cudaGraphDestroy(recorded);
    (void)cudaGetLastError(); // the capture's error is reported here, not later
    return Status::error(std::string("the step could not be recorded as a CUDA graph: ") +
                         cudaGetErrorString(ended));
  }
  cudaGraphExec_t exec = nullptr;
  cudaError_t made = cudaGraphInstantiate(&exec, recorded, 0);
  (void)cudaGraphDestroy(recorded);
  if (made != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::error(std::string("the step's CUDA graph could not be instantiated: ") +
                         cudaGetErrorString(made));
  }
  graphs.push_back(exec);
  *graph = static_cast<int>(graphs.size()) - 1;
  return Status();
}

Status CudaContext::launchGraph(int graph) {
  if (graph < 0 || graph >= static_cast<int>(graphs.size()))
    return invalidArgument("launchGraph", "no graph " + std::to_string(graph));
  TRAINC_CUDA_CALL(cudaGraphLaunch(graphs[graph], computeStream));
  return Status();
}

Status CudaContext::workspace(void **ptr, size_t bytes) {
  if (!ptr)
    return invalidArgument("workspace", "ptr is null");
  TRAINC_RETURN_IF_ERROR(grow(userScratch, bytes, "workspace"));
  *ptr = userScratch.ptr;
  return Status();
}

Status CudaContext::libraryWorkspace(void **ptr, size_t bytes) {
  TRAINC_RETURN_IF_ERROR(grow(libraryScratch, bytes, "library workspace"));
  *ptr = libraryScratch.ptr;
  return Status();
}

Status CudaContext::reductionWorkspace(void **ptr, size_t bytes) {
  TRAINC_RETURN_IF_ERROR(grow(reductionScratch, bytes, "reduction workspace"));
  *ptr = reductionScratch.ptr;
  return Status();
}

CachedPlan *CudaContext::findPlan(const PlanKey &key) const {
  auto it = plans.find(key);
  return it == plans.end() ? nullptr : it->second.get();
}

CachedPlan *CudaContext::addPlan(const PlanKey &key,
                                 std::unique_ptr<CachedPlan> plan) {
  std::unique_ptr<CachedPlan> &slot = plans[key];
  slot = std::move(plan);
  return slot.get();
}

} // namespace trainc::cuda

namespace trainc::rt {

Status createContext(std::unique_ptr<Context> &context) {
  return ::trainc::cuda::CudaContext::createContext(context);
}

} // namespace trainc::rt
