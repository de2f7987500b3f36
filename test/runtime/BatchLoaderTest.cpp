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

namespace trainc::test {
namespace {

using rt::detail::BatchField;
using rt::detail::BatchLoader;
using rt::detail::fillBatch;

TEST(BatchLoader, WorkersFillWhatASynchronousFillWould) {
  const std::string dir = makeTempDir();
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
  ASSERT_TRUE(xa.data() && la.data());
  // x then the labels at a 256-byte offset, as the trainer lays out a slot.
  const std::vector<BatchField> fields = {{&xa, 12, 0}, {&la, 8, 256}};
  const size_t slotBytes = 512;
  std::vector<int64_t> order(samples);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(3));
  const int64_t batches = (samples + batch - 1) / batch;

  std::vector<char> want(batches * slotBytes, 7);
  for (int64_t b = 0; b < batches; ++b)
    fillBatch(fields, batch, order.data(), b * batch, std::min(batch, samples - b * batch),
              want.data() + b * slotBytes);
  for (int workers : {0, 1, 4}) {
    std::vector<char> got(batches * slotBytes, 7);
    {
      BatchLoader loader(fields, batch, workers);
      // Slots reused round-robin, as the trainer does with 3 host slots.
      std::vector<char> slots(3 * slotBytes, 7);
      for (int64_t b = 0; b < batches; ++b) {
        int slot = static_cast<int>(b % 3);
        loader.submit(slot, slots.data() + slot * slotBytes, order.data(), b * batch,
                      std::min(batch, samples - b * batch));
        loader.wait(slot);
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

} // namespace
} // namespace trainc::test
