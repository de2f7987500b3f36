//===- BatchLoader.h - batches filled ahead of the step ---------*- C++ -*-===//
//
// Internal to the runtime. Reads the rows of one batch, in the epoch's order,
// from the sample files (pread, one call per run of consecutive rows) into a
// host buffer (pinned by the caller), on worker threads while the device runs
// earlier steps. Each buffer is a slot: the trainer submits a batch into a
// slot and waits for that slot before uploading it; a read error (a file
// truncated while training) comes back from that wait. With no workers,
// submit() fills the slot at once.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_BATCHLOADER_H
#define TRAINC_RT_COMMON_BATCHLOADER_H

#include "Npy.h"
#include "SampleTransform.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace trainc::rt::detail {

/// One array's rows: `rowBytes` per sample, written at `offset` of a batch
/// buffer, through `transform` where it is not null nor the identity (its
/// file rows then have the transform's fileRowBytes).
struct BatchField {
  const NpyArray *array;
  uint64_t rowBytes;
  uint64_t offset;
  const SampleTransform *transform = nullptr;
};

/// Reads rows `order[first, first + count)` of every field into `dst` and
/// zero-fills the rest of the `batch` rows; an augmenting transform draws
/// for (`epoch`, sample). A failed read is an error naming the file; `dst`
/// is then partly filled.
Status fillBatch(const std::vector<BatchField> &fields, int64_t batch, const int64_t *order,
                 int64_t first, int64_t count, char *dst, int64_t epoch = 0);

class BatchLoader {
public:
  BatchLoader(std::vector<BatchField> fields, int64_t batch, int workers);
  /// Drops the batches no worker has started, finishes the ones in progress
  /// and joins the workers (nobody can be waiting for a slot any more).
  ~BatchLoader();
  BatchLoader(const BatchLoader &) = delete;
  BatchLoader &operator=(const BatchLoader &) = delete;

  /// Fills `dst` with rows `order[first, first + count)` as slot `slot`. The
  /// order, `dst` and the arrays must stay valid until wait(slot) returns.
  void submit(int slot, char *dst, const int64_t *order, int64_t first, int64_t count,
              int64_t epoch);
  /// Returns once everything submitted to `slot` is filled: the first read
  /// error of those batches, if any (the slot's contents are then garbage).
  Status wait(int slot);

private:
  struct Job {
    int slot;
    char *dst;
    const int64_t *order;
    int64_t first, count, epoch;
  };
  void work();
  /// Drops the queued jobs and joins the workers.
  void stop();
  void grow(int slot);

  std::vector<BatchField> fields;
  int64_t batch;
  std::mutex mutex;
  std::condition_variable jobReady, jobDone;
  std::deque<Job> jobs;
  /// Per slot: jobs submitted, jobs finished, the first error since the
  /// last wait().
  std::vector<uint64_t> submitted, finished;
  std::vector<Status> errors;
  bool stopping = false;
  std::vector<std::thread> threads;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_BATCHLOADER_H
