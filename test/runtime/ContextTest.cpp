//===- ContextTest.cpp - the CPU context ----------------------------------===//

#include "TestUtil.h"

#include <cstdint>
#include <cstring>

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
