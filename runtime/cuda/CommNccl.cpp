//===- CommNccl.cpp - the ranks of a data-parallel run on GPUs ------------===//
//
// NCCL sums the gradient buckets on the GPU, on the stream the context
// gives (CudaContext forks it from the step's stream and joins it back with
// events, so a step graph records the sums); MPI (CommMpi.cpp) starts the
// run, carries NCCL's unique id from rank 0 to the others and sums the
// host's numbers (the logged loss). Pipeline-parallel programs send
// activations and gradients with ncclSend and ncclRecv, straight from and
// into device memory. Built into its own library, trainc_rt_nccl, which only
// data-parallel and pipeline-parallel CUDA programs link (with libnccl and
// libmpi).
//
//===----------------------------------------------------------------------===//

#include "trainc_rt/device.h"
#include "trainc_rt/launch.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace trainc::rt {

namespace {

Status ncclError(const char *what, ncclResult_t result) {
  return Status::error(std::string(what) + " failed: " + ncclGetErrorString(result));
}

class NcclCommunicator final : public Communicator {
public:
  NcclCommunicator(std::unique_ptr<Communicator> host, ncclComm_t comm)
      : host(std::move(host)), comm(comm) {}
  ~NcclCommunicator() override {
    // Unfinished (an error on this rank): abort NCCL's pending work; the
    // host communicator's destructor then stops every rank.
    if (comm)
      (void)ncclCommAbort(comm);
    for (Link &link : links)
      if (link.comm)
        (void)ncclCommAbort(link.comm);
    for (cudaEvent_t event : events)
      (void)cudaEventDestroy(event);
  }
  int rank() const override { return host->rank(); }
  int size() const override { return host->size(); }
  Status allReduceSum(float *values, int64_t count) override {
    return host->allReduceSum(values, count);
  }
  Status allReduceSum(double *values, int64_t count) override {
    return host->allReduceSum(values, count);
  }
  Status finish() override {
    for (Link &link : links)
      if (link.comm) {
        (void)ncclCommDestroy(link.comm);
        link.comm = nullptr;
      }
    ncclResult_t result = ncclCommDestroy(comm);
    comm = nullptr;
    Status finished = host->finish();
    if (result != ncclSuccess)
      return ncclError("ncclCommDestroy", result);
    return finished;
  }
  int64_t sums() const override { return host->sums(); }
  double secondsInSums() const override { return host->secondsInSums(); }
  Status broadcast(void *data, int64_t bytes, int root) override {
    return host->broadcast(data, bytes, root);
  }
  Status allReduceSumDevice(float *data, int64_t count, void *stream) override {
    ncclResult_t result = ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat,
                                        ncclSum, comm, static_cast<cudaStream_t>(stream));
    return result == ncclSuccess ? Status() : ncclError("ncclAllReduce", result);
  }

  // Pipeline parallelism: one communicator and stream per direction
  // (activations on, gradients back), so that a send waiting for its
  // receiver never holds up a transfer the other way. Each direction's
  // transfers between two ranks match in the order they are issued.
  Communicator &hostRanks() override { return *host; }
  Status openParameterServer(int64_t count, std::unique_ptr<ParameterServer> &server) override {
    return host->openParameterServer(count, server); // host memory, over MPI
  }
  Status prepareTransfers() override {
    for (Link &link : links) {
      if (link.comm)
        continue;
      TRAINC_RETURN_IF_ERROR(newComm(*host, link.comm));
      if (cudaStreamCreateWithFlags(&link.stream, cudaStreamNonBlocking) != cudaSuccess)
        return Status::error("pipeline transfers: cannot create a CUDA stream");
    }
    return Status();
  }
  Status startTransfer(bool send, void *data, int64_t bytes, int peer, int tag,
                       int64_t &request) override {
    Link &link = links[tag & 1];
    if (!link.comm)
      return Status::error("pipeline transfers before prepareTransfers");
    ncclResult_t result =
        send ? ncclSend(data, static_cast<size_t>(bytes), ncclUint8, peer, link.comm, link.stream)
             : ncclRecv(data, static_cast<size_t>(bytes), ncclUint8, peer, link.comm, link.stream);
    if (result != ncclSuccess)
      return ncclError(send ? "ncclSend" : "ncclRecv", result);
    request = -1;
    for (size_t i = 0; i < events.size(); ++i)
      if (!eventBusy[i]) {
        request = static_cast<int64_t>(i);
        break;
      }
    if (request < 0) {
      cudaEvent_t event;
      if (cudaEventCreateWithFlags(&event, cudaEventDisableTiming) != cudaSuccess)
        return Status::error("pipeline transfers: cannot create a CUDA event");
      events.push_back(event);
      eventBusy.push_back(false);
      request = static_cast<int64_t>(events.size() - 1);
    }
    eventBusy[request] = true;
    if (cudaEventRecord(events[request], link.stream) != cudaSuccess)
      return Status::error("pipeline transfers: cannot record a CUDA event");
    return Status();
  }
  Status waitTransfer(int64_t request) override {
    if (request < 0 || request >= static_cast<int64_t>(events.size()) || !eventBusy[request])
      return Status::error("pipeline transfers: no transfer " + std::to_string(request));
    // Polled, so that a rank that stopped answering ends the run.
    auto began = std::chrono::steady_clock::now();
    for (;;) {
      cudaError_t done = cudaEventQuery(events[request]);
      if (done == cudaSuccess)
        break;
      if (done != cudaErrorNotReady)
        return Status::error(std::string("pipeline transfer failed: ") +
                             cudaGetErrorString(done));
      double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (timeout > 0 && waited > timeout)
        return Status::error("the neighbouring stage did not answer for " +
                             std::to_string(static_cast<int>(timeout)) +
                             " s (--comm-timeout)");
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    eventBusy[request] = false;
    return Status();
  }
  Status split(int color, int key, std::unique_ptr<Communicator> &part) override {
    std::unique_ptr<Communicator> hostPart;
    TRAINC_RETURN_IF_ERROR(host->split(color, key, hostPart));
    ncclComm_t partComm = nullptr;
    TRAINC_RETURN_IF_ERROR(newComm(*hostPart, partComm));
    part = std::make_unique<NcclCommunicator>(std::move(hostPart), partComm);
    return Status();
  }
  void setTimeout(double seconds) override {
    timeout = seconds;
    host->setTimeout(seconds);
  }

  /// A NCCL communicator over `ranks`, its id carried by their host
  /// communicator.
  static Status newComm(Communicator &ranks, ncclComm_t &made) {
    ncclUniqueId id;
    if (ranks.rank() == 0) {
      ncclResult_t result = ncclGetUniqueId(&id);
      if (result != ncclSuccess)
        return ncclError("ncclGetUniqueId", result);
    }
    TRAINC_RETURN_IF_ERROR(ranks.broadcast(&id, sizeof(id), 0));
    ncclResult_t result = ncclCommInitRank(&made, ranks.size(), id, ranks.rank());
    return result == ncclSuccess ? Status() : ncclError("ncclCommInitRank", result);
  }

private:
  struct Link {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
  };
  std::unique_ptr<Communicator> host;
  ncclComm_t comm;
  Link links[2];
  std::vector<cudaEvent_t> events;
  std::vector<bool> eventBusy;
  double timeout = 0;
};

} // namespace

Status createNcclCommunicator(std::unique_ptr<Communicator> &communicator) {
  std::unique_ptr<Communicator> host;
  TRAINC_RETURN_IF_ERROR(createMpiCommunicator(host));
  // One GPU per rank on each machine: the context takes the same one.
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return Status::error("data parallelism on CUDA: no GPU on rank " +
                         std::to_string(host->rank()));
  int device = launchOf().localRank % devices;
  if (cudaSetDevice(device) != cudaSuccess)
    return Status::error("data parallelism on CUDA: cannot use GPU " + std::to_string(device));
  ncclComm_t comm = nullptr;
  TRAINC_RETURN_IF_ERROR(NcclCommunicator::newComm(*host, comm));
  communicator = std::make_unique<NcclCommunicator>(std::move(host), comm);
  return Status();
}

} // namespace trainc::rt
