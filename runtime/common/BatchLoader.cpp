//===- BatchLoader.cpp - batches filled ahead of the step -----------------===//

#include "BatchLoader.h"

#include <cstring>

namespace trainc::rt::detail {

void fillBatch(const std::vector<BatchField> &fields, int64_t batch, const int64_t *order,
               int64_t first, int64_t count, char *dst) {
  for (const BatchField &f : fields) {
    char *out = dst + f.offset;
    const char *src = static_cast<const char *>(f.array->data());
    for (int64_t r = 0; r < count; ++r)
      std::memcpy(out + r * f.rowBytes, src + order[first + r] * f.rowBytes, f.rowBytes);
    std::memset(out + count * f.rowBytes, 0, (batch - count) * f.rowBytes);
  }
}

BatchLoader::BatchLoader(std::vector<BatchField> fields, int64_t batch, int workers)
    : fields(std::move(fields)), batch(batch) {
  for (int i = 0; i < workers; ++i)
    threads.emplace_back([this] { work(); });
}

BatchLoader::~BatchLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  jobReady.notify_all();
  for (std::thread &t : threads)
    t.join();
}

void BatchLoader::submit(int slot, char *dst, const int64_t *order, int64_t first,
                         int64_t count) {
  if (threads.empty()) {
    fillBatch(fields, batch, order, first, count, dst);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (static_cast<size_t>(slot) >= submitted.size()) {
      submitted.resize(slot + 1, 0);
      finished.resize(slot + 1, 0);
    }
    ++submitted[slot];
    jobs.push_back({slot, dst, order, first, count});
  }
  jobReady.notify_one();
}

void BatchLoader::wait(int slot) {
  if (threads.empty())
    return;
  std::unique_lock<std::mutex> lock(mutex);
  jobDone.wait(lock, [&] {
    return static_cast<size_t>(slot) >= submitted.size() || finished[slot] == submitted[slot];
  });
}

void BatchLoader::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex);
      // Submitted jobs are finished even when stopping: a caller may be
      // waiting for them.
      jobReady.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty())
        return;
      job = jobs.front();
      jobs.pop_front();
    }
    fillBatch(fields, batch, job.order, job.first, job.count, job.dst);
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++finished[job.slot];
    }
    jobDone.notify_all();
  }
}

} // namespace trainc::rt::detail
