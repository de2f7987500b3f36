//===- BackgroundSums.h - gradient buckets summed on a thread of their own -===//
//
// The CPU target's overlap of communication with the backward: each bucket
// handed to start() is summed over the ranks (Communicator::allReduceSum,
// MPI_Allreduce) by one worker thread, in the order the buckets came, while
// the step's thread computes the rest of the backward; wait() blocks until
// a bucket's sum is done. Written here rather than with MPI_Iallreduce:
// Open MPI moves a nonblocking collective along only while the process is
// inside an MPI call, so the sum would run at MPI_Wait, after the backward.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_CPU_BACKGROUNDSUMS_H
#define TRAINC_RT_CPU_BACKGROUNDSUMS_H

#include "trainc_rt/device.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace trainc::rt {

class BackgroundSums {
public:
  /// `ranks` must allow sums from another thread (sumsFromAnyThread), and
  /// its creating thread must not call it while a bucket is pending.
  explicit BackgroundSums(Communicator *ranks) : ranks(ranks), worker([this] { run(); }) {}
  /// Finishes the pending buckets first: the other ranks take part in
  /// them too.
  ~BackgroundSums() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      wake.notify_all();
    }
    worker.join();
  }
  BackgroundSums(const BackgroundSums &) = delete;
  BackgroundSums &operator=(const BackgroundSums &) = delete;

  void start(int bucket, float *data, int64_t count) {
    std::lock_guard<std::mutex> lock(mutex);
    finished.erase(bucket);
    jobs.push_back({bucket, data, count});
    wake.notify_all();
  }
  /// The status of bucket `bucket`'s sum, once it is done.
  Status wait(int bucket) {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return finished.count(bucket) > 0; });
    Status status = finished[bucket];
    finished.erase(bucket);
    return status;
  }
  /// Blocks until no bucket is pending; the first failed sum not waited
  /// for yet, if any.
  Status waitAll() {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return jobs.empty() && !busy; });
    for (const auto &[bucket, status] : finished)
      if (!status.ok())
        return status;
    return Status();
  }

private:
  struct Job {
    int bucket;
    float *data;
    int64_t count;
  };

  void run() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      wake.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty())
        return; // stopping, and nothing left to sum
      Job job = jobs.front();
      jobs.pop_front();
      busy = true;
      lock.unlock();
      Status status = ranks->allReduceSum(job.data, job.count);
      lock.lock();
      busy = false;
      finished[job.bucket] = status;
      done.notify_all();
    }
  }

  Communicator *ranks;
  std::mutex mutex;
  std::condition_variable wake, done;
  std::deque<Job> jobs;
  std::map<int, Status> finished;
  bool busy = false, stopping = false;
  std::thread worker; // last: started once the members above exist
};

} // namespace trainc::rt

#endif // TRAINC_RT_CPU_BACKGROUNDSUMS_H
