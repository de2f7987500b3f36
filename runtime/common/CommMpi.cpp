//===- CommMpi.cpp - the ranks of a data-parallel run over MPI -------------===//
//
// Open MPI (Debian's) under mpirun: MPI_Init_thread when the trainer
// starts, sums with MPI_Allreduce in place. The level asked for is
// MPI_THREAD_SERIALIZED: the CPU target sums a bucket on a thread of its
// own while the step goes on, and no two threads are ever in MPI at once.
// Built into its own library, trainc_rt_mpi, which only data-parallel
// programs link (with libmpi).
//
//===----------------------------------------------------------------------===//

#include "trainc_rt/device.h"

// The C API only (Open MPI's mpi.h would pull in its C++ bindings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace trainc::rt {

namespace {

Status mpiError(const char *what, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    length = 0;
  return Status::error(std::string(what) + " failed: " +
                       (length > 0 ? std::string(text, length) : std::to_string(code)));
}

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, bool anyThread, bool world)
      : comm(comm), me(rank), ranks(size), anyThread(anyThread), world(world) {}
  ~MpiCommunicator() override {
    stopWatchdog();
    // An error on this rank: the others would wait for it in their next
    // sum, so the whole run stops (mpirun reports which rank). A part of
    // the world (split) leaves that to the world's communicator.
    if (!finished && world)
      MPI_Abort(MPI_COMM_WORLD, 1);
    if (!world)
      MPI_Comm_free(&comm);
  }
  int rank() const override { return me; }
  int size() const override { return ranks; }
  Status allReduceSum(float *values, int64_t count) override {
    return sum(values, count, MPI_FLOAT);
  }
  Status allReduceSum(double *values, int64_t count) override {
    return sum(values, count, MPI_DOUBLE);
  }
  Status finish() override {
    stopWatchdog();
    finished = true;
    if (!world)
      return Status();
    int code = MPI_Finalize();
    return code == MPI_SUCCESS ? Status() : mpiError("MPI_Finalize", code);
  }
  Status startTransfer(bool send, void *data, int64_t bytes, int peer, int tag,
                       int64_t &request) override {
    if (bytes < 0 || bytes > INT_MAX)
      return Status::error("MPI point to point: " + std::to_string(bytes) + " bytes at once");
    if (peer < 0 || peer >= ranks || peer == me)
      return Status::error("MPI point to point: no rank " + std::to_string(peer));
    MPI_Request handle;
    int code = send ? MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, &handle)
                    : MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, &handle);
    if (code != MPI_SUCCESS)
      return mpiError(send ? "MPI_Isend" : "MPI_Irecv", code);
    request = static_cast<int64_t>(requests.size());
    for (size_t i = 0; i < requests.size(); ++i)
      if (requests[i] == MPI_REQUEST_NULL) {
        request = static_cast<int64_t>(i);
        break;
      }
    if (request == static_cast<int64_t>(requests.size()))
      requests.push_back(handle);
    else
      requests[request] = handle;
    return Status();
  }
  Status waitTransfer(int64_t request) override {
    if (request < 0 || request >= static_cast<int64_t>(requests.size()))
      return Status::error("MPI point to point: no transfer " + std::to_string(request));
    auto t0 = Clock::now();
    begin();
    int code = MPI_Wait(&requests[request], MPI_STATUS_IGNORE);
    end();
    spent += std::chrono::duration<double>(Clock::now() - t0).count();
    requests[request] = MPI_REQUEST_NULL;
    return code == MPI_SUCCESS ? Status() : mpiError("MPI_Wait", code);
  }
  Status split(int color, int key, std::unique_ptr<Communicator> &part) override {
    MPI_Comm sub;
    begin();
    int code = MPI_Comm_split(comm, color, key, &sub);
    end();
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Comm_split", code);
    MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(sub, &rank);
    MPI_Comm_size(sub, &size);
    auto made = std::make_unique<MpiCommunicator>(sub, rank, size, anyThread, false);
    made->setTimeout(timeout.count());
    part = std::move(made);
    return Status();
  }
  Status broadcast(void *data, int64_t bytes, int root) override {
    if (bytes < 0 || bytes > INT_MAX)
      return Status::error("MPI_Bcast: " + std::to_string(bytes) + " bytes at once");
    begin();
    int code = MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm);
    end();
    return code == MPI_SUCCESS ? Status() : mpiError("MPI_Bcast", code);
  }
  bool sumsFromAnyThread() const override { return anyThread; }
  int64_t sums() const override { return calls; }
  double secondsInSums() const override { return spent; }
  void setTimeout(double seconds) override {
    stopWatchdog();
    if (seconds <= 0)
      return;
    timeout = std::chrono::duration<double>(seconds);
    stopping = false;
    watchdog = std::thread([this] { watch(); });
  }

private:
  using Clock = std::chrono::steady_clock;

  template <typename T> Status sum(T *values, int64_t count, MPI_Datatype type) {
    // MPI counts are ints.
    for (int64_t done = 0; done < count;) {
      int part = static_cast<int>(std::min<int64_t>(count - done, INT_MAX));
      auto t0 = Clock::now();
      begin();
      int code = MPI_Allreduce(MPI_IN_PLACE, values + done, part, type, MPI_SUM, comm);
      end();
      spent += std::chrono::duration<double>(Clock::now() - t0).count();
      ++calls;
      if (code != MPI_SUCCESS)
        return mpiError("MPI_Allreduce", code);
      done += part;
    }
    return Status();
  }

  // --comm-timeout: a thread that ends the process when a sum has waited
  // too long. MPI cannot cancel a collective, and a rank that stopped
  // answering never completes it; the process's exit makes mpirun end the
  // others.
  void begin() {
    std::lock_guard<std::mutex> lock(mutex);
    started = Clock::now();
    inFlight = true;
    wake.notify_all();
  }
  void end() {
    std::lock_guard<std::mutex> lock(mutex);
    inFlight = false;
  }
  void watch() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      if (!inFlight) {
        wake.wait(lock);
        continue;
      }
      auto deadline = started + std::chrono::duration_cast<Clock::duration>(timeout);
      if (Clock::now() < deadline) {
        wake.wait_until(lock, deadline);
        continue;
      }
      std::fprintf(stderr,
                   "rank %d of %d: error: the other ranks did not answer for %.0f s (one died "
                   "or stopped?); stopping the run (--comm-timeout)\n",
                   me, ranks, timeout.count());
      std::fflush(stderr);
      std::_Exit(1);
    }
  }
  void stopWatchdog() {
    if (!watchdog.joinable())
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      wake.notify_all();
    }
    watchdog.join();
  }

  MPI_Comm comm;
  int me, ranks;
  bool anyThread, world;
  std::vector<MPI_Request> requests;
  bool finished = false;
  int64_t calls = 0;
  double spent = 0;
  std::chrono::duration<double> timeout{0.0};
  std::mutex mutex;
  std::condition_variable wake;
  Clock::time_point started;
  bool inFlight = false, stopping = false;
  std::thread watchdog;
};

} // namespace

Status createMpiCommunicator(std::unique_ptr<Communicator> &communicator) {
  int initialized = 0, level = MPI_THREAD_SINGLE;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &level);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Init_thread", code);
  } else {
    MPI_Query_thread(&level);
  }
  // Errors come back as codes (reported with the rank) instead of killing
  // the process silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  communicator = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD, rank, size,
                                                   level >= MPI_THREAD_SERIALIZED, true);
  return Status();
}

} // namespace trainc::rt
