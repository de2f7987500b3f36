//===- BatchLoader.cpp - batches filled ahead of the step -----------------===//

#include "BatchLoader.h"

#include <cstring>
#include <utility>

namespace trainc::rt::detail {

Status fillBatch(const std::vector<BatchField> &fields, int64_t batch, const int64_t *order,
                 int64_t first, int64_t count, char *dst) {
  for (const BatchField &f : fields) {
    char *out = dst + f.offset;
    // One pread per run of consecutive rows: a whole batch without
    // shuffling, mostly single rows with it.
    for (int64_t r = 0; r < count;) {
      int64_t run = 1;
      while (r + run < count && order[first + r + run] == order[first + r] + run)
        ++run;
      TRAINC_RETURN_IF_ERROR(f.array->readBytes(order[first + r] * f.rowBytes,
                                                run * f.rowBytes, out + r * f.rowBytes));
      r += run;
    }
    std::memset(out + count * f.rowBytes, 0, (batch - count) * f.rowBytes);
  }
  return Status();
}

BatchLoader::BatchLoader(std::vector<BatchField> fields, int64_t batch, int workers)
    : fields(std::move(fields)), batch(batch) {
  try {
    for (int i = 0; i < workers; ++i)
      threads.emplace_back([this] { work(); });
  } catch (...) {
    // A thread that cannot start (a process or cgroup thread limit) throws
    // std::system_error; the ones already running are joined first, or
    // their destruction would terminate the process.
    stop();
    throw;
  }
}

BatchLoader::~BatchLoader() { stop(); }

void BatchLoader::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    jobs.clear();
  }
  jobReady.notify_all();
  for (std::thread &t : threads)
    t.join();
  threads.clear();
}

void BatchLoader::grow(int slot) {
  if (static_cast<size_t>(slot) >= submitted.size()) {
    submitted.resize(slot + 1, 0);
    finished.resize(slot + 1, 0);
    errors.resize(slot + 1);
  }
}

void BatchLoader::submit(int slot, char *dst, const int64_t *order, int64_t first,
                         int64_t count) {
  if (threads.empty()) {
    Status filled = fillBatch(fields, batch, order, first, count, dst);
    grow(slot);
    if (!filled.ok() && errors[slot].ok())
      errors[slot] = std::move(filled);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    grow(slot);
    ++submitted[slot];
    jobs.push_back({slot, dst, order, first, count});
  }
  jobReady.notify_one();
}

Status BatchLoader::wait(int slot) {
  std::unique_lock<std::mutex> lock(mutex);
  jobDone.wait(lock, [&] {
    return static_cast<size_t>(slot) >= submitted.size() || finished[slot] == submitted[slot];
  });
  if (static_cast<size_t>(slot) >= errors.size())
    return Status();
  return std::exchange(errors[slot], Status());
}

void BatchLoader::work() {
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mutex);
      jobReady.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty())
        return;
      job = jobs.front();
      jobs.pop_front();
    }
    Status filled = fillBatch(fields, batch, job.order, job.first, job.count, job.dst);
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++finished[job.slot];
      if (!filled.ok() && errors[job.slot].ok())
        errors[job.slot] = std::move(filled);
    }
    jobDone.notify_all();
  }
}

} // namespace trainc::rt::detail
