//===- BatchLoader.h - batches filled ahead of the step ---------*- C++ -*-===//
//
// Internal to the runtime. Copies the rows of one batch, in the epoch's order,
// from memory-mapped sample arrays into a host buffer (pinned by the caller),
// on worker threads while the device runs earlier steps. Each buffer is a
// slot: the trainer submits a batch into a slot and waits for that slot
// before uploading it. With no workers, submit() fills the slot at once.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_BATCHLOADER_H
#define TRAINC_RT_COMMON_BATCHLOADER_H

#include "Npy.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace trainc::rt::detail {

/// One array's rows: `rowBytes` per sample, written at `offset` of a batch
/// buffer.
struct BatchField {
  const NpyArray *array;
  uint64_t rowBytes;
  uint64_t offset;
};

/// Copies rows `order[first, first + count)` of every field into `dst` and
/// zero-fills the rest of the `batch` rows.
void fillBatch(const std::vector<BatchField> &fields, int64_t batch, const int64_t *order,
               int64_t first, int64_t count, char *dst);

class BatchLoader {
public:
  BatchLoader(std::vector<BatchField> fields, int64_t batch, int workers);
  /// Finishes the submitted batches, then joins the workers.
  ~BatchLoader();
  BatchLoader(const BatchLoader &) = delete;
  BatchLoader &operator=(const BatchLoader &) = delete;

  /// Fills `dst` with rows `order[first, first + count)` as slot `slot`. The
  /// order, `dst` and the arrays must stay valid until wait(slot) returns.
  void submit(int slot, char *dst, const int64_t *order, int64_t first, int64_t count);
  /// Returns once everything submitted to `slot` is filled.
  void wait(int slot);

private:
  struct Job {
    int slot;
    char *dst;
    const int64_t *order;
    int64_t first, count;
  };
  void work();

  std::vector<BatchField> fields;
  int64_t batch;
  std::mutex mutex;
  std::condition_variable jobReady, jobDone;
  std::deque<Job> jobs;
  /// Per slot: jobs submitted and jobs finished.
  std::vector<uint64_t> submitted, finished;
  bool stopping = false;
  std::vector<std::thread> threads;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_BATCHLOADER_H
