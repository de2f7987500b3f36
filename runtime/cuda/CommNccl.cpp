//===- CommNccl.cpp - the ranks of a data-parallel run on GPUs ------------===//
//
// NCCL sums the gradient buckets on the GPU, on the stream the context
// gives (CudaContext forks it from the step's stream and joins it back with
// events, so a step graph records the sums); MPI (CommMpi.cpp) starts the
// run, carries NCCL's unique id from rank 0 to the others and sums the
// host's numbers (the logged loss). Built into its own library, trainc_rt_nccl, which only
// data-parallel CUDA programs link (with libnccl and libmpi).
//
//===----------------------------------------------------------------------===//

#include "trainc_rt/device.h"
#include "trainc_rt/launch.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

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
    ncclResult_t result = ncclCommDestroy(comm);
    comm = nullptr;
    Status finished = host->finish();
    if (result != ncclSuccess)
      return ncclError("ncclCommDestroy", result);
    return finished;
  }
  void setTimeout(double seconds) override { host->setTimeout(seconds); }
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

private:
  std::unique_ptr<Communicator> host;
  ncclComm_t comm;
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
  ncclUniqueId id;
  if (host->rank() == 0) {
    ncclResult_t result = ncclGetUniqueId(&id);
    if (result != ncclSuccess)
      return ncclError("ncclGetUniqueId", result);
  }
  TRAINC_RETURN_IF_ERROR(host->broadcast(&id, sizeof(id), 0));
  ncclComm_t comm = nullptr;
  ncclResult_t result = ncclCommInitRank(&comm, host->size(), id, host->rank());
  if (result != ncclSuccess)
    return ncclError("ncclCommInitRank", result);
  communicator = std::make_unique<NcclCommunicator>(std::move(host), comm);
  return Status();
}

} // namespace trainc::rt
