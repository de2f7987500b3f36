//===- ContextTest.cpp - the CPU context ----------------------------------===//

#include "TestUtil.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace trainc::test {
namespace {

TEST(CpuContext, AllocatesAlignedAndCopies) {
  auto ctx = makeContext();
  EXPECT_STREQ(ctx->target(), "cpu");
  for (size_t bytes : {size_t(0), size_t(1), size_t(255), size_t(1000)}) {
    void *ptr = nullptr;
    EXPECT_OK(ctx->allocate(&ptr, bytes));
    ASSERT_NE(ptr, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 256, 0u) << bytes;
    ctx->deallocate(ptr);
  }
  std::vector<int> host = {1, 2, 3, 4}, back(4);
  void *device = nullptr;
  EXPECT_OK(ctx->allocate(&device, sizeof(int) * 4));
  EXPECT_OK(ctx->copyToDevice(device, host.data(), sizeof(int) * 4));
  EXPECT_OK(ctx->fill(device, 0, sizeof(int) * 2));
  EXPECT_OK(ctx->synchronize());
  EXPECT_OK(ctx->copyToHost(back.data(), device, sizeof(int) * 4));
  EXPECT_EQ(back, (std::vector<int>{0, 0, 3, 4}));
  ctx->deallocate(device);
  EXPECT_ERROR(ctx->copyToHost(nullptr, host.data(), 4), "dst is null");
  EXPECT_OK(ctx->copyToHost(nullptr, nullptr, 0)); // nothing to copy
}

TEST(CpuContext, HugeAllocationFailsWithStatus) {
  auto ctx = makeContext();
  void *ptr = nullptr;
  EXPECT_ERROR(ctx->allocate(&ptr, SIZE_MAX - 10), "cannot allocate");
  EXPECT_ERROR(ctx->allocate(&ptr, size_t(1) << 60), "out of memory");
}

TEST(CpuContext, WorkspaceGrowsAndIsAligned) {
  auto ctx = makeContext();
  void *small = nullptr, *large = nullptr, *again = nullptr;
  EXPECT_OK(ctx->workspace(&small, 100));
  std::memset(small, 1, 100);
  EXPECT_OK(ctx->workspace(&large, 1 << 20));
  std::memset(large, 2, 1 << 20);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % 256, 0u);
  EXPECT_OK(ctx->workspace(&again, 1000)); // smaller: same buffer
  EXPECT_EQ(again, large);
}

TEST(CpuContext, LerpTensorsAsTorchLerp) {
  // Two tensors in one call (one long enough for the threaded loop), with
  // torch.lerp's two formulas: weight 1 copies exactly, 0 keeps, and a
  // weight below and above 0.5 against float64.
  auto ctx = makeContext();
  const int64_t sizes[2] = {5, 70000};
  std::vector<float> a0 = {1.0f, -2.0f, 1e-8f, 3.0f, 0.0f}, v0 = {2.0f, 4.0f, 1.0f, -3.0f, 7.0f};
  std::vector<float> a1(sizes[1]), v1(sizes[1]);
  for (int64_t i = 0; i < sizes[1]; ++i) {
    a1[i] = std::sin(0.001f * i);
    v1[i] = std::cos(0.002f * i) * 3;
  }
  for (float weight : {0.25f, 0.75f, 0.0f, 1.0f}) {
    std::vector<float> x0 = a0, x1 = a1;
    float *averages[2] = {x0.data(), x1.data()};
    const float *values[2] = {v0.data(), v1.data()};
    EXPECT_OK(ctx->lerpTensors(averages, values, sizes, 2, weight));
    for (int t = 0; t < 2; ++t)
      for (int64_t i = 0; i < sizes[t]; ++i) {
        const float a = t == 0 ? a0[i] : a1[i], v = t == 0 ? v0[i] : v1[i];
        const float got = t == 0 ? x0[i] : x1[i];
        if (weight == 1.0f || weight == 0.0f) {
          ASSERT_EQ(got, weight == 1.0f ? v : a) << t << " " << i;
          continue;
        }
        const double want = a + static_cast<double>(weight) * (static_cast<double>(v) - a);
        ASSERT_NEAR(got, want, 4e-7 * (std::fabs(a) + std::fabs(v))) << t << " " << i;
      }
  }
  float *none[1] = {nullptr};
  const float *nothing[1] = {nullptr};
  const int64_t one[1] = {1};
  EXPECT_ERROR(ctx->lerpTensors(none, nothing, one, 1, 0.5f), "tensor 0 is null");
}

TEST(CpuContext, AsynchronousTransfersAndEvents) {
  // On the CPU every transfer is complete when it returns; the calls still
  // check their arguments, and events are distinct indices.
  auto ctx = makeContext();
  void *pinned = nullptr, *device = nullptr;
  EXPECT_OK(ctx->allocateHost(&pinned, 16));
  EXPECT_OK(ctx->allocate(&device, 16));
  std::memcpy(pinned, "0123456789abcdef", 16);
  int uploaded = -1, computed = -1;
  EXPECT_OK(ctx->createEvent(&uploaded));
  EXPECT_OK(ctx->createEvent(&computed));
  EXPECT_NE(uploaded, computed);
  EXPECT_OK(ctx->uploadAsync(device, pinned, 16));
  EXPECT_OK(ctx->recordEvent(uploaded, rt::Context::Queue::Upload));
  EXPECT_OK(ctx->queueWait(rt::Context::Queue::Compute, uploaded));
  char back[16] = {};
  EXPECT_OK(ctx->downloadAsync(back, device, 16));
  EXPECT_OK(ctx->recordEvent(computed, rt::Context::Queue::Compute));
  EXPECT_OK(ctx->hostWait(computed));
  EXPECT_EQ(std::memcmp(back, "0123456789abcdef", 16), 0);
  EXPECT_ERROR(ctx->uploadAsync(nullptr, pinned, 4), "dst is null");
  EXPECT_ERROR(ctx->hostWait(computed + 1), "unknown event");
  EXPECT_ERROR(ctx->recordEvent(-1, rt::Context::Queue::Upload), "unknown event");
  ctx->deallocate(device);
  ctx->deallocateHost(pinned);
}

} // namespace
} // namespace trainc::test
