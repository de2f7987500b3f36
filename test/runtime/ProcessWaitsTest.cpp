//===- ProcessWaitsTest.cpp - the wait settings of a CPU program ----------===//
//
// The /proc parsing and the spin choice of common/ProcessWaits.h: the texts
// below are the formats the kernel documents (proc(5)).
//
//===----------------------------------------------------------------------===//

#include "common/ProcessWaits.h"

#include <gtest/gtest.h>

namespace trainc::test {
namespace {

using rt::detail::kLongSpinCount;
using rt::detail::kShortSpinCount;

TEST(ProcessWaits, ProcsRunningIsReadFromItsOwnLine) {
  const char *stat = "cpu  2255 34 2290 22625563 6290 127 456 0 0 0\n"
                     "cpu0 1132 34 1441 11311718 3675 127 438 0 0 0\n"
                     "intr 114930548 113199788 3 0 5 263 0 4 [... 50 more]\n"
                     "ctxt 1990473\nbtime 1062191376\nprocesses 2915\n"
                     "procs_running 3\nprocs_blocked 0\n";
  EXPECT_EQ(rt::detail::procsRunning(stat), 3);
  EXPECT_EQ(rt::detail::procsRunning("procs_running 12"), 12); // no final newline
  // Absent, or not a count: unknown, never a guess.
  EXPECT_EQ(rt::detail::procsRunning("processes 2915\nprocs_blocked 0\n"), std::nullopt);
  EXPECT_EQ(rt::detail::procsRunning("procs_running x\n"), std::nullopt);
  EXPECT_EQ(rt::detail::procsRunning("procs_running 3 4\n"), std::nullopt);
  EXPECT_EQ(rt::detail::procsRunning("xprocs_running 3\n"), std::nullopt);
  EXPECT_EQ(rt::detail::procsRunning(""), std::nullopt);
}

TEST(ProcessWaits, TaskStateFollowsTheLastParenthesis) {
  EXPECT_EQ(rt::detail::taskState("4242 (trainer) R 1 4242 4242 0 -1 4194560"), 'R');
  EXPECT_EQ(rt::detail::taskState("4243 (omp) worker) S 1 4242"), 'S');
  EXPECT_EQ(rt::detail::taskState("4244 (a) R (b) D 1"), 'D');
  EXPECT_EQ(rt::detail::taskState("4245 (name)"), 0);
  EXPECT_EQ(rt::detail::taskState(""), 0);
}

TEST(ProcessWaits, LongSpinOnlyOnIdleCores) {
  EXPECT_STREQ(rt::detail::spinCountFor(0), kLongSpinCount);
  EXPECT_STREQ(rt::detail::spinCountFor(1), kShortSpinCount);
  EXPECT_STREQ(rt::detail::spinCountFor(7), kShortSpinCount);
  EXPECT_STREQ(rt::detail::spinCountFor(std::nullopt), kShortSpinCount);
}

TEST(ProcessWaits, ThisMachineIsReadable) {
  // This test's own thread is runnable as it reads: it is not counted.
  std::optional<int> others = rt::detail::otherRunnableTasks();
  ASSERT_TRUE(others.has_value());
  EXPECT_GE(*others, 0);
}

} // namespace
} // namespace trainc::test
