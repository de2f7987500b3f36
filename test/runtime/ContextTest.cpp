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

} // namespace
} // namespace trainc::test
