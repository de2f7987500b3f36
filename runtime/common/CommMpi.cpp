//===- CommMpi.cpp - the ranks of a data-parallel run over MPI -------------===//
//
// Open MPI (Debian's) under mpirun: MPI_Init_thread when the trainer
// starts, sums with MPI_Allreduce in place. The level asked for is
// MPI_THREAD_SERIALIZED: the CPU target sums a bucket on a thread of its
// own while the step goes on, pipeline stages' transfers move on a thread
// of their own (Transfers), and a lock keeps any two threads out of MPI at
// once.
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
#include <memory>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
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

/// The process's one thread in MPI at a time (MPI_THREAD_SERIALIZED): the
/// point-to-point progress thread and whoever sums or broadcasts.
std::mutex &mpiLock() {
  static std::mutex lock;
  return lock;
}

/// Pipeline parallelism's point-to-point transfers, moved on by a thread of
/// their own: Open MPI advances a large message only while its sender or
/// receiver is inside MPI, so a send started before a stage's compute would
/// otherwise wait for the stage's next MPI call, and the stages would take
/// turns instead of overlapping. The thread tests the transfers in flight
/// every few microseconds (sleeping between, so that it takes no core from
/// the kernels); waiting for a transfer waits for the thread to see it done.
class Transfers {
public:
  explicit Transfers(MPI_Comm comm) : comm(comm) {}
  ~Transfers() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      wake.notify_all();
    }
    if (thread.joinable())
      thread.join();
  }

  Status start(bool send, void *data, int bytes, int peer, int tag, int64_t &request) {
    Slot *slot = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex);
      for (size_t i = 0; i < slots.size() && !slot; ++i)
        if (slots[i].state == State::Free) {
          slot = &slots[i];
          request = static_cast<int64_t>(i);
        }
      if (!slot) { // a deque keeps its elements where they are as it grows
        slots.emplace_back();
        slot = &slots.back();
        request = static_cast<int64_t>(slots.size() - 1);
      }
      slot->state = State::Starting;
      if (!thread.joinable())
        thread = std::thread([this] { progress(); });
    }
    int code;
    {
      std::lock_guard<std::mutex> lock(mpiLock());
      code = send ? MPI_Isend(data, bytes, MPI_BYTE, peer, tag, comm, &slot->request)
                  : MPI_Irecv(data, bytes, MPI_BYTE, peer, tag, comm, &slot->request);
    }
    std::lock_guard<std::mutex> lock(mutex);
    if (code != MPI_SUCCESS) {
      slot->state = State::Free;
      return mpiError(send ? "MPI_Isend" : "MPI_Irecv", code);
    }
    slot->state = State::InFlight;
    ++inFlight;
    wake.notify_all();
    return Status();
  }

  /// Waits until transfer `request` is done (the caller's watchdog bounds
  /// the wait).
  Status wait(int64_t request) {
    std::unique_lock<std::mutex> lock(mutex);
    if (request < 0 || request >= static_cast<int64_t>(slots.size()) ||
        slots[request].state == State::Free || slots[request].state == State::Starting)
      return Status::error("MPI point to point: no transfer " + std::to_string(request));
    Slot &slot = slots[request];
    done.wait(lock, [&] { return slot.state == State::Done; });
    slot.state = State::Free;
    return slot.code == MPI_SUCCESS ? Status() : mpiError("MPI_Test", slot.code);
  }

private:
  enum class State { Free, Starting, InFlight, Done };
  struct Slot {
    State state = State::Free;
    MPI_Request request = MPI_REQUEST_NULL;
    int code = MPI_SUCCESS;
  };

  void progress() {
    std::unique_lock<std::mutex> lock(mutex);
    while (!stopping) {
      if (inFlight == 0) {
        wake.wait(lock);
        continue;
      }
      std::vector<Slot *> testing;
      for (Slot &slot : slots)
        if (slot.state == State::InFlight)
          testing.push_back(&slot);
      lock.unlock();
      std::vector<std::pair<Slot *, int>> finished;
      {
        std::lock_guard<std::mutex> mpi(mpiLock());
        for (Slot *slot : testing) {
          int flag = 0;
          int code = MPI_Test(&slot->request, &flag, MPI_STATUS_IGNORE);
          if (flag || code != MPI_SUCCESS)
            finished.emplace_back(slot, code);
        }
      }
      lock.lock();
      for (auto [slot, code] : finished) {
        slot->state = State::Done;
        slot->code = code;
        --inFlight;
      }
      if (!finished.empty())
        done.notify_all();
      if (inFlight > 0) {
        lock.unlock();
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        lock.lock();
      }
    }
  }

  MPI_Comm comm;
  std::mutex mutex;
  std::condition_variable wake, done;
  std::deque<Slot> slots;
  int inFlight = 0;
  bool stopping = false;
  std::thread thread;
};

/// Asynchronous SGD's parameter server: two windows in rank 0 (the f32
/// values; each rank's step count), reached with passive-target one-sided
/// operations. Reads are MPI_Get_accumulate with MPI_NO_OP and adds
/// MPI_Accumulate with MPI_SUM, which MPI makes atomic per value against
/// each other. Every read and add holds a shared lock on rank 0's window:
/// no rank waits for another's epoch, so a rank stopped inside one holds
/// no other up (an exclusive lock would wait for it).
/// Operations go in pieces of at most 2^30 values (MPI counts are ints).
class MpiParameterServer final : public ParameterServer {
public:
  static Status open(MPI_Comm comm, int me, int ranks, int64_t count,
                     std::unique_ptr<ParameterServer> &server) {
    auto made = std::unique_ptr<MpiParameterServer>(new MpiParameterServer(me, ranks));
    std::lock_guard<std::mutex> lock(mpiLock());
    void *base = nullptr;
    int code = MPI_Win_allocate(me == 0 ? static_cast<MPI_Aint>(count) * 4 : 0, 4,
                                MPI_INFO_NULL, comm, &base, &made->values);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Win_allocate (the parameter server)", code);
    code = MPI_Win_allocate(me == 0 ? static_cast<MPI_Aint>(ranks) * 8 : 0, 8, MPI_INFO_NULL,
                            comm, &made->counts, &made->steps);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Win_allocate (the step counts)", code);
    MPI_Win_set_errhandler(made->values, MPI_ERRORS_RETURN);
    MPI_Win_set_errhandler(made->steps, MPI_ERRORS_RETURN);
    if (me == 0)
      std::fill(static_cast<int64_t *>(made->counts),
                static_cast<int64_t *>(made->counts) + ranks, 0);
    // Everyone's windows exist (and rank 0's counts are 0) before any use.
    code = MPI_Barrier(comm);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Barrier", code);
    server = std::move(made);
    return Status();
  }

  Status get(float *dst, int64_t offset, int64_t count) override {
    return pieces(MPI_LOCK_SHARED, offset, count, [&](int64_t at, int n) {
      return MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, dst + (at - offset), n, MPI_FLOAT, 0,
                                at, n, MPI_FLOAT, MPI_NO_OP, values);
    });
  }
  Status add(const float *src, int64_t offset, int64_t count) override {
    return pieces(MPI_LOCK_SHARED, offset, count, [&](int64_t at, int n) {
      return MPI_Accumulate(src + (at - offset), n, MPI_FLOAT, 0, at, n, MPI_FLOAT, MPI_SUM,
                            values);
    });
  }
  Status set(const float *src, int64_t count) override {
    return pieces(MPI_LOCK_EXCLUSIVE, 0, count, [&](int64_t at, int n) {
      return MPI_Put(src + at, n, MPI_FLOAT, 0, at, n, MPI_FLOAT, values);
    });
  }
  Status setProgress(int64_t done) override {
    std::lock_guard<std::mutex> lock(mpiLock());
    int code = MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, steps);
    if (code == MPI_SUCCESS)
      code = MPI_Accumulate(&done, 1, MPI_INT64_T, 0, me, 1, MPI_INT64_T, MPI_REPLACE, steps);
    int unlocked = MPI_Win_unlock(0, steps);
    return code != MPI_SUCCESS       ? mpiError("MPI_Accumulate (a step count)", code)
           : unlocked != MPI_SUCCESS ? mpiError("MPI_Win_unlock", unlocked)
                                     : Status();
  }
  Status progress(std::vector<int64_t> &all) override {
    all.assign(ranks, 0);
    std::lock_guard<std::mutex> lock(mpiLock());
    int code = MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, steps);
    if (code == MPI_SUCCESS)
      code = MPI_Get_accumulate(nullptr, 0, MPI_INT64_T, all.data(), ranks, MPI_INT64_T, 0, 0,
                                ranks, MPI_INT64_T, MPI_NO_OP, steps);
    int unlocked = MPI_Win_unlock(0, steps);
    return code != MPI_SUCCESS       ? mpiError("MPI_Get_accumulate (the step counts)", code)
           : unlocked != MPI_SUCCESS ? mpiError("MPI_Win_unlock", unlocked)
                                     : Status();
  }

  Status close() override {
    std::lock_guard<std::mutex> lock(mpiLock());
    int code = MPI_Win_free(&values);
    if (code == MPI_SUCCESS)
      code = MPI_Win_free(&steps);
    return code == MPI_SUCCESS ? Status() : mpiError("MPI_Win_free", code);
  }

private:
  MpiParameterServer(int me, int ranks) : me(me), ranks(ranks) {}

  /// One lock epoch on rank 0's values for the whole range, `op` per piece.
  template <typename Op> Status pieces(int lockType, int64_t offset, int64_t count, Op op) {
    constexpr int64_t kPiece = int64_t(1) << 30;
    std::lock_guard<std::mutex> lock(mpiLock());
    int code = MPI_Win_lock(lockType, 0, 0, values);
    if (code != MPI_SUCCESS)
      return mpiError("MPI_Win_lock", code);
    for (int64_t at = offset; at < offset + count && code == MPI_SUCCESS; at += kPiece)
      code = op(at, static_cast<int>(std::min(kPiece, offset + count - at)));
    int unlocked = MPI_Win_unlock(0, values);
    if (code != MPI_SUCCESS)
      return mpiError("a one-sided operation on the parameter server", code);
    return unlocked == MPI_SUCCESS ? Status() : mpiError("MPI_Win_unlock", unlocked);
  }

  int me, ranks;
  MPI_Win values = MPI_WIN_NULL, steps = MPI_WIN_NULL;
  void *counts = nullptr;
};

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm comm, int rank, int size, bool anyThread, bool world)
      : comm(comm), me(rank), ranks(size), anyThread(anyThread), world(world) {}
  ~MpiCommunicator() override {
    stopWatchdog();
    transfers.reset();
    // An error on this rank: the others would wait for it in their next
    // sum, so the whole run stops (mpirun reports which rank). A part of
    // the world (split) leaves that to the world's communicator.
    if (!finished && world)
      MPI_Abort(MPI_COMM_WORLD, 1);
    if (!world) {
      std::lock_guard<std::mutex> lock(mpiLock());
      MPI_Comm_free(&comm);
    }
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
    transfers.reset();
    finished = true;
    if (!world)
      return Status();
    std::lock_guard<std::mutex> lock(mpiLock());
    int code = MPI_Finalize();
    return code == MPI_SUCCESS ? Status() : mpiError("MPI_Finalize", code);
  }
  Status startTransfer(bool send, void *data, int64_t bytes, int peer, int tag,
                       int64_t &request) override {
    if (bytes < 0 || bytes > INT_MAX)
      return Status::error("MPI point to point: " + std::to_string(bytes) + " bytes at once");
    if (peer < 0 || peer >= ranks || peer == me)
      return Status::error("MPI point to point: no rank " + std::to_string(peer));
    if (!anyThread)
      return Status::error("MPI point to point: this MPI grants no MPI_THREAD_SERIALIZED, "
                           "which the transfers' progress thread needs");
    if (!transfers)
      transfers = std::make_unique<Transfers>(comm);
    return transfers->start(send, data, static_cast<int>(bytes), peer, tag, request);
  }
  Status waitTransfer(int64_t request) override {
    if (!transfers)
      return Status::error("MPI point to point: no transfer " + std::to_string(request));
    begin();
    Status waited = transfers->wait(request);
    end();
    return waited;
  }
  Status split(int color, int key, std::unique_ptr<Communicator> &part) override {
    MPI_Comm sub;
    begin();
    int code;
    {
      std::lock_guard<std::mutex> lock(mpiLock());
      code = MPI_Comm_split(comm, color, key, &sub);
    }
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
    int code;
    {
      std::lock_guard<std::mutex> lock(mpiLock());
      code = MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm);
    }
    end();
    return code == MPI_SUCCESS ? Status() : mpiError("MPI_Bcast", code);
  }
  Status openParameterServer(int64_t count, std::unique_ptr<ParameterServer> &server) override {
    begin();
    Status opened = MpiParameterServer::open(comm, me, ranks, count, server);
    end();
    return opened;
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
      int code;
      {
        std::lock_guard<std::mutex> lock(mpiLock());
        code = MPI_Allreduce(MPI_IN_PLACE, values + done, part, type, MPI_SUM, comm);
      }
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
  std::unique_ptr<Transfers> transfers;
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
