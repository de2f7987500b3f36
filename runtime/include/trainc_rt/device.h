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
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace trainc::rt {

class AlgoCache;
struct ProfiledCall;

/// A call timed under --profile: its id in Program::calls, when it began
/// (seconds from Context::startProfiling) and how long it took.
struct TimedCall {
  int call;
  double start, seconds;
};

/// Asynchronous SGD across processes (the trainer's --async): rank 0 holds
/// the parameters as f32 values that every rank reads and adds its updates
/// into with one-sided operations, no rank waiting for another. Each rank's
/// step count lies beside them (--staleness-bound).
class ParameterServer {
public:
  virtual ~ParameterServer() = default;
  /// The server's values [offset, offset + count) into `dst` (each value
  /// read whole; adds of other ranks may land between values).
  virtual Status get(float *dst, int64_t offset, int64_t count) = 0;
  /// Adds `count` values to the server's from `offset` on (each value
  /// added whole; other ranks' reads and adds may land between values).
  virtual Status add(const float *src, int64_t offset, int64_t count) = 0;
  /// Rank 0, while no rank reads or adds (between barriers): sets the
  /// server's values.
  virtual Status set(const float *src, int64_t count) = 0;
  /// This rank's steps so far, and every rank's.
  virtual Status setProgress(int64_t steps) = 0;
  virtual Status progress(std::vector<int64_t> &steps) = 0;
  /// Every rank, once each is done with the server: frees it (collective).
  virtual Status close() = 0;
};

/// The processes of a data-parallel run (started by mpirun), one rank each.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// In place: each of the `count` host values becomes its sum over the
  /// ranks (every rank ends with the same sums).
  virtual Status allReduceSum(float *values, int64_t count) = 0;
  virtual Status allReduceSum(double *values, int64_t count) = 0;
  /// Ends the run cleanly after every rank's last collective. Destroying a
  /// communicator that did not finish (an error on this rank) stops every
  /// rank, so none waits forever for this one.
  virtual Status finish() = 0;
  /// A sum that waits longer than `seconds` for the other ranks (one died
  /// or stopped answering) ends this process with an error, so the run
  /// ends (--comm-timeout). 0: wait forever.
  virtual void setTimeout(double /*seconds*/) {}
  /// Sums so far and the seconds they took (waiting for the other ranks
  /// included).
  virtual int64_t sums() const { return 0; }
  virtual double secondsInSums() const { return 0; }
  /// Rank `root`'s `bytes` bytes at `data` copied to every rank.
  virtual Status broadcast(void * /*data*/, int64_t /*bytes*/, int /*root*/) {
    return Status::error("this communicator cannot broadcast");
  }
  /// In place, on the GPU: each of the `count` f32 values at device
  /// address `data` becomes its sum over the ranks, in the order of CUDA
  /// stream `stream`. Host-only communicators refuse.
  virtual Status allReduceSumDevice(float * /*data*/, int64_t /*count*/, void * /*stream*/) {
    return Status::error("this communicator sums host memory only");
  }
  /// Whether allReduceSum may be called from a thread other than the one
  /// that created the communicator (one call at a time), so that a sum can
  /// run while that thread computes.
  virtual bool sumsFromAnyThread() const { return false; }
  /// Pipeline parallelism: starts sending `bytes` bytes at `data` to rank
  /// `peer` (or receiving them from it into `data`), matched with the
  /// peer's transfer of the same `tag` in issue order; waitTransfer
  /// completes it (and, past --comm-timeout, ends the run). Host memory for
  /// MPI; device memory for NCCL (the caller synchronizes the context
  /// first: the transfers run on streams of their own).
  virtual Status startTransfer(bool /*send*/, void * /*data*/, int64_t /*bytes*/, int /*peer*/,
                               int /*tag*/, int64_t & /*request*/) {
    return Status::error("this communicator cannot send to one rank");
  }
  virtual Status waitTransfer(int64_t /*request*/) {
    return Status::error("this communicator cannot send to one rank");
  }
  /// The communicator of the same ranks that moves host memory (this one
  /// for MPI; the MPI one beside NCCL's).
  virtual Communicator &hostRanks() { return *this; }
  /// Sets up what the transfers need (every rank calls it, before the
  /// first): NCCL's communicators and streams for each direction.
  virtual Status prepareTransfers() { return Status(); }
  /// The ranks that give the same `color` as a communicator of their own,
  /// numbered in the order of `key` (every rank of this one calls it): a
  /// pipeline stage's replicas, which sum their gradients together.
  virtual Status split(int /*color*/, int /*key*/, std::unique_ptr<Communicator> & /*part*/) {
    return Status::error("this communicator cannot be split");
  }
  /// A parameter server of `count` f32 values in rank 0 (every rank calls
  /// it, collectively).
  virtual Status openParameterServer(int64_t /*count*/,
                                     std::unique_ptr<ParameterServer> & /*server*/) {
    return Status::error("this communicator has no one-sided operations");
  }
};

/// MPI's (Open MPI under mpirun): the CPU target's. Linked into
/// data-parallel programs only (TrainStep::createCommunicator).
Status createMpiCommunicator(std::unique_ptr<Communicator> &communicator);
/// The CUDA target's: NCCL for the gradients on the GPU (its unique id
/// broadcast over MPI, which also serves the host's sums); each rank takes
/// GPU (local rank mod GPUs). Linked into data-parallel CUDA programs only.
Status createNcclCommunicator(std::unique_ptr<Communicator> &communicator);

/// Data parallelism: whether a bucket's sum over the ranks runs while the
/// step goes on (--comm-overlap). Auto: where the target can do so without
/// taking time from the step's own work.
enum class CommOverlap { Auto, On, Off };

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

  // Asynchronous transfers ------------------------------------------------
  // The trainer overlaps a step with the next batch's upload and reads the
  // loss back without waiting inside a step. Work runs on two queues: the
  // compute queue (kernels, copyToDevice/copyToHost, downloadAsync) and the
  // upload queue (uploadAsync); events order them without the host waiting.
  // On the CPU target everything completes at once and events are no-ops.
  enum class Queue { Compute, Upload };

  /// Page-locked host memory for asynchronous copies (plain aligned memory on
  /// the CPU target).
  virtual Status allocateHost(void **ptr, size_t bytes) = 0;
  virtual void deallocateHost(void *ptr) = 0;
  /// Host -> device on the upload queue. Returns at once: `src` must stay
  /// unchanged until an event recorded on the upload queue after it passes.
  virtual Status uploadAsync(void *dst, const void *src, size_t bytes) = 0;
  /// Device -> host on the compute queue, after the work issued so far;
  /// `dst` holds the data once an event recorded after it passes.
  virtual Status downloadAsync(void *dst, const void *src, size_t bytes) = 0;
  /// Device -> device on the compute queue, after the work issued so far (a
  /// row of a selection's candidates into the training step's inputs).
  virtual Status copyOnDeviceAsync(void *dst, const void *src, size_t bytes) = 0;
  /// A new event (an index, valid for the Context's lifetime).
  virtual Status createEvent(int *event) = 0;
  /// Marks the point after all work issued to `queue` so far.
  virtual Status recordEvent(int event, Queue queue) = 0;
  /// Work issued to `queue` from now on waits for `event` (the host does not).
  virtual Status queueWait(Queue queue, int event) = 0;
  /// The host waits for `event`; reports device errors recorded by the
  /// compute work before it.
  virtual Status hostWait(int event) = 0;

  // Step graphs ------------------------------------------------------------
  // The work a step issues to the compute queue, recorded once and replayed
  // with one launch (CUDA graphs). The CPU target has none.
  virtual bool supportsGraphs() const { return false; }
  /// From now on the compute queue's work is recorded instead of run.
  virtual Status beginGraph() { return noGraphs(); }
  /// Ends the recording and keeps it as graph `*graph` (an index, valid for
  /// the Context's lifetime). Fails, keeping nothing, when something issued
  /// could not be recorded; nothing recorded has run.
  virtual Status endGraph(int * /*graph*/) { return noGraphs(); }
  /// Runs graph `graph` on the compute queue.
  virtual Status launchGraph(int /*graph*/) { return noGraphs(); }
  /// Changes whenever scratch memory moves: a graph recorded under another
  /// value reads freed buffers and must be recorded again.
  virtual uint64_t memoryEpoch() const { return 0; }

  /// How convolution algorithms are chosen (cuDNN; the CPU target's are
  /// fixed and deterministic): with `search`, timed once per shape on the
  /// first call instead of taken from the heuristic; with `deterministic`,
  /// only deterministic ones. Plans made before the call keep their choice.
  virtual void configureConvolutions(bool /*search*/, bool /*deterministic*/) {}
  /// What the search's choices depend on (the device, the library version,
  /// --deterministic), for the file that keeps them across runs; empty
  /// where there is no search.
  virtual std::string algorithmIdentity() const { return ""; }
  /// The choices the search reads before timing a plan and fills after
  /// (null: none). Not owned; it outlives the plans' first calls.
  virtual void useAlgorithmCache(AlgoCache * /*cache*/) {}

  // Weight averaging (the trainer's --ema-decay and --swa-start).
  /// Moves each of `count` f32 tensors averages[i] (sizes[i] elements)
  /// toward values[i] on the compute queue, after the work issued so far, as
  /// torch._foreach_lerp_(averages, values, weight) does (lerpTowards): one
  /// launch for many tensors. The arrays are host memory, read during the
  /// call.
  virtual Status lerpTensors(float *const *averages, const float *const *values,
                             const int64_t *sizes, int count, float weight) = 0;

  // Data parallelism (trainc compile --data-parallel).
  /// Starts replacing the `count` f32 values at `data` (one bucket of
  /// gradients, contiguous) by their sums over the processes of the run,
  /// after the work issued so far; the work issued after it runs meanwhile
  /// and must not touch `data` until allReduceWait(bucket). The processes
  /// start the same buckets in the same order. A single process has
  /// nothing to add.
  virtual Status allReduceStart(int /*bucket*/, float * /*data*/, int64_t /*count*/) {
    return Status();
  }
  /// The work issued after this call sees bucket `bucket`'s sums.
  virtual Status allReduceWait(int /*bucket*/) { return Status(); }
  /// The ranks the buckets are summed over (null: a single process), not
  /// owned; with overlap, a bucket's sum runs while the step goes on (a
  /// second CUDA stream; a thread on the CPU), else in the step's order.
  /// Returns an error where the target cannot sum over processes yet.
  virtual Status useCommunicator(Communicator *communicator, CommOverlap /*overlap*/) {
    return communicator && communicator->size() > 1
               ? Status::error("this target cannot combine gradients over processes yet")
               : Status();
  }
  /// Whether the buckets' sums run while the step goes on (as decided by
  /// useCommunicator).
  virtual bool overlapsSums() const { return false; }
  /// Seconds the step has waited for the buckets' sums so far (the part
  /// not hidden behind its own work); negative where the host cannot tell
  /// (the GPU waits, not the host).
  virtual double secondsWaitingForSums() const { return -1; }

  // Profiling (the trainer's --profile) ------------------------------------
  /// Whether calls are being timed. The generated TRAINC_CALL asks before
  /// each call: a step without --profile pays one test a call.
  bool profiling() const { return timing; }
  /// Starts timing the calls of the table `calls` (Program::calls). The
  /// CPU target reads the host's steady clock around each call; CUDA
  /// records events on the compute queue and opens an NVTX range named
  /// after the call's kernel.
  virtual Status startProfiling(const ProfiledCall *calls, int count);
  /// Around call `id` of the table (TRAINC_CALL), while profiling.
  virtual void profileBegin(int id);
  virtual void profileEnd(int id);
  /// Stops timing. `timed` gets the calls timed since startProfiling, in
  /// their order, their times in seconds from startProfiling (CUDA waits
  /// for them).
  virtual Status stopProfiling(std::vector<TimedCall> &timed);

protected:
  bool timing = false;

private:
  static Status noGraphs() { return Status::error("this target has no step graphs"); }
  /// The host clock's record (startProfiling's defaults): nanoseconds of
  /// the steady clock.
  std::vector<TimedCall> hostTimed;
  int64_t hostStart = 0;
};

/// A call of a step function: a failure returns from the function; under
/// --profile the context times it as call `id` of Program::calls.
#define TRAINC_CALL(ctx, id, expr)                                             \
  do {                                                                         \
    const bool trainc_timed_ = (ctx).profiling();                              \
    if (trainc_timed_)                                                         \
      (ctx).profileBegin(id);                                                  \
    ::trainc::rt::Status trainc_status_ = (expr);                              \
    if (trainc_timed_)                                                         \
      (ctx).profileEnd(id);                                                    \
    if (!trainc_status_.ok())                                                  \
      return trainc_status_;                                                   \
  } while (0)

/// Creates the Context of the target this library was built for.
Status createContext(std::unique_ptr<Context> &context);

} // namespace trainc::rt

#endif // TRAINC_RT_DEVICE_H
