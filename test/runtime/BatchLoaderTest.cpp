//===- BatchLoaderTest.cpp - batches filled by worker threads -------------===//
//
// Worker threads fill the same bytes as a synchronous fill, for every slot,
// however many workers there are: rows in the given order, padding zeroed.
//
//===----------------------------------------------------------------------===//

#include "common/BatchLoader.h"
#include "common/Npy.h"
#include "TestUtil.h"

#include <cstring>
#include <numeric>
#include <random>
#include <unistd.h>

namespace trainc::test {
namespace {

using rt::detail::BatchField;
using rt::detail::BatchLoader;
using rt::detail::fillBatch;

TEST(BatchLoader, WorkersFillWhatASynchronousFillWould) {
  TempDir tempDir;
  const std::string dir = tempDir.path();
  const int64_t samples = 37, batch = 8;
  std::vector<float> x(samples * 3);
  std::vector<int64_t> labels(samples);
  std::iota(x.begin(), x.end(), 0.5f);
  std::iota(labels.begin(), labels.end(), 100);
  EXPECT_OK(rt::writeNpy(dir + "/x.npy", rt::DType::F32, {samples, 3}, x.data()));
  EXPECT_OK(rt::writeNpy(dir + "/label.npy", rt::DType::I64, {samples}, labels.data()));
  rt::NpyArray xa, la;
  EXPECT_OK(rt::NpyArray::open(dir + "/x.npy", xa));
  EXPECT_OK(rt::NpyArray::open(dir + "/label.npy", la));
  // x then the labels at a 256-byte offset, as the trainer lays out a slot.
  const std::vector<BatchField> fields = {{&xa, 12, 0}, {&la, 8, 256}};
  const size_t slotBytes = 512;
  std::vector<int64_t> order(samples);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  const int64_t batches = (samples + batch - 1) / batch;

  std::vector<char> want(batches * slotBytes, 7);
  for (int64_t b = 0; b < batches; ++b)
    EXPECT_OK(fillBatch(fields, batch, order.data(), b * batch,
                        std::min(batch, samples - b * batch), want.data() + b * slotBytes));
  for (int workers : {0, 1, 4}) {
    std::vector<char> got(batches * slotBytes, 7);
    {
      BatchLoader loader(fields, batch, workers);
      // Slots reused round-robin, as the trainer does with 3 host slots.
      std::vector<char> slots(3 * slotBytes, 7);
      for (int64_t b = 0; b < batches; ++b) {
        int slot = static_cast<int>(b % 3);
        loader.submit(slot, slots.data() + slot * slotBytes, order.data(), b * batch,
                      std::min(batch, samples - b * batch), 1);
        EXPECT_OK(loader.wait(slot));
        std::memcpy(got.data() + b * slotBytes, slots.data() + slot * slotBytes, 384);
        std::memcpy(got.data() + b * slotBytes + 384, want.data() + b * slotBytes + 384,
                    slotBytes - 384);
      }
    }
    EXPECT_EQ(got, want) << workers << " workers";
  }
  // The last batch (5 rows) is padded with zeros.
  const float *last = reinterpret_cast<const float *>(want.data() + (batches - 1) * slotBytes);
  EXPECT_EQ(last[5 * 3], 0.0f);
  EXPECT_EQ(last[0], x[order[32] * 3]);
}

// Unshuffled batches are read in one pread per field; the bytes are the same
// as row by row.
TEST(BatchLoader, ConsecutiveRowsAreReadTogether) {
  TempDir dir;
  std::vector<float> x(10 * 2);
  std::iota(x.begin(), x.end(), 1.0f);
  EXPECT_OK(rt::writeNpy(dir / "x.npy", rt::DType::F32, {10, 2}, x.data()));
  rt::NpyArray xa;
  EXPECT_OK(rt::NpyArray::open(dir / "x.npy", xa));
  const std::vector<BatchField> fields = {{&xa, 8, 0}};
  const std::vector<int64_t> order = {0, 1, 2, 7, 8, 3, 9, 4, 5, 6};
  std::vector<float> got(6 * 2, -1);
  EXPECT_OK(fillBatch(fields, 6, order.data(), 1, 5, reinterpret_cast<char *>(got.data())));
  EXPECT_EQ(got, (std::vector<float>{3, 4, 5, 6, 15, 16, 17, 18, 7, 8, 0, 0}));
}

// A sample file truncated while training: the worker's read error comes
// back from wait() on that slot, naming the file, the next batches of the
// slot are not affected by it, and the loader still stops and joins.
TEST(BatchLoader, ReadErrorsComeBackThroughWait) {
  TempDir dir;
  const int64_t samples = 64, batch = 8;
  std::vector<float> x(samples * 4, 0.5f);
  EXPECT_OK(rt::writeNpy(dir / "x.npy", rt::DType::F32, {samples, 4}, x.data()));
  rt::NpyArray xa;
  EXPECT_OK(rt::NpyArray::open(dir / "x.npy", xa));
  // The first half of the samples stays.
  ASSERT_EQ(::truncate((dir / "x.npy").c_str(), 128 + samples / 2 * 16), 0);
  const std::vector<BatchField> fields = {{&xa, 16, 0}};
  std::vector<int64_t> order(samples);
  std::iota(order.begin(), order.end(), 0);
  for (int workers : {0, 1, 3}) {
    SCOPED_TRACE(std::to_string(workers) + " workers");
    BatchLoader loader(fields, batch, workers);
    std::vector<char> slots(4 * batch * 16);
    loader.submit(0, slots.data(), order.data(), 0, batch, 1); // rows 0-7: fine
    EXPECT_OK(loader.wait(0));
    loader.submit(1, slots.data() + 128, order.data(), 40, batch, 1); // rows 40-47: gone
    loader.submit(2, slots.data() + 256, order.data(), 8, batch, 1);
    EXPECT_ERROR(loader.wait(1), dir / "x.npy" + " was truncated");
    EXPECT_OK(loader.wait(2));
    EXPECT_OK(loader.wait(1)); // the error was reported once
    // Batches queued behind a failure are dropped or finished on destruction.
    for (int k = 0; k < 3; ++k)
      loader.submit(k, slots.data() + k * 128, order.data(), 48, batch, 1);
  }
}

} // namespace
} // namespace trainc::test
