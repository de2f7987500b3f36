//===- AsyncLanes.cpp - Hogwild! workers of one process -------------------===//

#include "AsyncLanes.h"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace trainc::rt::detail {

AsyncLanes::~AsyncLanes() {
  for (auto &lane : lanes) {
    {
      std::lock_guard<std::mutex> lock(lane->mutex);
      lane->quit = true;
    }
    lane->changed.notify_all();
  }
  for (auto &lane : lanes)
    if (lane->thread.joinable())
      lane->thread.join();
}

Status AsyncLanes::init(int count, int threadsPerLane) {
  for (int i = 0; i < count; ++i) {
    auto lane = std::make_unique<Lane>();
    TRAINC_RETURN_IF_ERROR(createContext(lane->context));
    Lane &ref = *lane;
    lane->thread = std::thread([&ref, threadsPerLane] { serve(ref, threadsPerLane); });
    lanes.push_back(std::move(lane));
  }
  return Status();
}

void AsyncLanes::serve(Lane &lane, int threads) {
#ifdef _OPENMP
  omp_set_num_threads(threads); // this thread's own OpenMP teams
#else
  (void)threads;
#endif
  std::unique_lock<std::mutex> lock(lane.mutex);
  while (true) {
    lane.changed.wait(lock, [&] { return lane.quit || lane.busy; });
    if (!lane.busy)
      return;
    Job job = std::move(lane.job);
    lock.unlock();
    Status status = job(*lane.context);
    lock.lock();
    lane.status = status;
    lane.busy = false;
    lane.changed.notify_all();
  }
}

Status AsyncLanes::wait(int index) {
  Lane &lane = *lanes[index];
  std::unique_lock<std::mutex> lock(lane.mutex);
  lane.changed.wait(lock, [&] { return !lane.busy; });
  Status status = lane.status;
  lane.status = Status();
  return status;
}

void AsyncLanes::start(int index, Job job) {
  Lane &lane = *lanes[index];
  {
    std::lock_guard<std::mutex> lock(lane.mutex);
    lane.job = std::move(job);
    lane.busy = true;
  }
  lane.changed.notify_all();
}

} // namespace trainc::rt::detail
