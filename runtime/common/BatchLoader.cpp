//===- BatchLoader.cpp - batches filled ahead of the step -----------------===//

#include "BatchLoader.h"

#include <cstring>
#include <utility>
#include <vector>

namespace trainc::rt::detail {

namespace {

/// The field's rows through its transform: the file's rows of each run of
/// consecutive samples, then one sample at a time into `out`.
Status fillTransformed(const BatchField &f, uint64_t fileBytes, const int64_t *order,
                       int64_t first, int64_t count,
                       char *out, int64_t epoch) {
  const SampleTransform &t = *f.transform;
  std::vector<unsigned char> rows;
  for (int64_t r = 0; r < count;) {
    int64_t run = 1;
    while (r + run < count && order[first + r + run] == order[first + r] + run)
      ++run;
    rows.resize(run * t.fileRowBytes);
    TRAINC_RETURN_IF_ERROR(f.array->readBytesOf(fileBytes, order[first + r] * t.fileRowBytes,
                                                run * t.fileRowBytes, rows.data()));
    for (int64_t k = 0; k < run; ++k) {
      const int64_t sample = order[first + r + k];
      const AugmentDraw draw =
          t.augments() ? augmentDraw(t.seed, epoch, sample, t.cropPadding) : AugmentDraw{};
      t.apply(rows.data() + k * t.fileRowBytes,
              reinterpret_cast<float *>(out + (r + k) * f.rowBytes), draw);
    }
    r += run;
  }
  return Status();
}

} // namespace

Status fillBatch(const std::vector<BatchField> &fields, int64_t batch, const int64_t *order,
                 int64_t first, int64_t count, char *dst, int64_t epoch) {
  for (const BatchField &f : fields) {
    char *out = dst + f.offset;
    // An array read whole at open: its rows are copies, checked against
    // the file's size once a batch (NpyArray::readBytesOf).
    uint64_t fileBytes = 0;
    if (f.array->inMemory())
      TRAINC_RETURN_IF_ERROR(f.array->fileSize(fileBytes));
    if (f.transform && !f.transform->identity) {
      TRAINC_RETURN_IF_ERROR(fillTransformed(f, fileBytes, order, first, count, out, epoch));
      std::memset(out + count * f.rowBytes, 0, (batch - count) * f.rowBytes);
      continue;
    }
    // One read per run of consecutive rows: a whole batch without
    // shuffling, mostly single rows with it.
    for (int64_t r = 0; r < count;) {
      int64_t run = 1;
      while (r + run < count && order[first + r + run] == order[first + r] + run)
        ++run;
      TRAINC_RETURN_IF_ERROR(f.array->readBytesOf(fileBytes, order[first + r] * f.rowBytes,
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
                         int64_t count, int64_t epoch) {
  if (threads.empty()) {
    Status filled = fillBatch(fields, batch, order, first, count, dst, epoch);
    grow(slot);
    if (!filled.ok() && errors[slot].ok())
      errors[slot] = std::move(filled);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    grow(slot);
    ++submitted[slot];
    jobs.push_back({slot, dst, order, first, count, epoch});
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
    Status filled =
        fillBatch(fields, batch, job.order, job.first, job.count, job.dst, job.epoch);
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
