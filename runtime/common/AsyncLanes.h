//===- AsyncLanes.h - Hogwild! workers of one process ----------*- C++ -*-===//
//
// Internal to the runtime: the trainer's --async-workers N. Each lane is a
// thread with a Context of its own (on CUDA, its own streams and library
// handles) that runs one job at a time: a training step from the lane's
// own inputs and arena, reading and updating the parameters and optimizer
// state that every lane shares, without locks (Niu, Recht, Re and Wright
// 2011, "Hogwild!"). A lane's updates race with the others' reads and
// writes by design, so runs differ from each other; the trainer drains the
// lanes before it evaluates or checkpoints, so those see one state.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_ASYNCLANES_H
#define TRAINC_RT_COMMON_ASYNCLANES_H

#include "trainc_rt/device.h"

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace trainc::rt::detail {

class AsyncLanes {
public:
  using Job = std::function<Status(Context &)>;

  AsyncLanes() = default;
  /// Waits for the lanes' jobs and ends their threads.
  ~AsyncLanes();
  AsyncLanes(const AsyncLanes &) = delete;
  AsyncLanes &operator=(const AsyncLanes &) = delete;

  /// Starts `count` lanes, each running its kernels on `threadsPerLane`
  /// OpenMP threads (the CPU target).
  Status init(int count, int threadsPerLane);
  int size() const { return static_cast<int>(lanes.size()); }
  Context &context(int lane) { return *lanes[lane]->context; }
  /// Waits until `lane` has no job; the status of its last one.
  Status wait(int lane);
  /// Gives `lane` (idle: after wait) its next job.
  void start(int lane, Job job);

private:
  struct Lane {
    std::unique_ptr<Context> context;
    std::thread thread;
    std::mutex mutex;
    std::condition_variable changed;
    Job job;
    bool busy = false, quit = false;
    Status status;
  };
  static void serve(Lane &lane, int threads);

  std::vector<std::unique_ptr<Lane>> lanes;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_ASYNCLANES_H
