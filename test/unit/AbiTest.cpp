//===- AbiTest.cpp - the IR's step enums mirror the runtime's -------------===//
//
// The compiler writes tc::Hyper, tc::StateRole, tc::Optimizer and
// tc::Precision (ODS enums) into the generated program as the runtime's
// enums of trainc_rt/abi.h, by value. These check that each runtime value
// has the IR case of the same value and name, and that neither list has a
// case the other lacks.
//
//===----------------------------------------------------------------------===//

#include "ir/TcAttrs.h"
#include "runtime/include/trainc_rt/abi.h"

#include <gtest/gtest.h>

namespace {

using namespace trainc;

template <typename RtEnum, typename TcEnum, typename Stringify, typename MaxValue>
void expectMirror(int runtimeCount, Stringify stringify, MaxValue maxValue) {
  EXPECT_EQ(static_cast<int>(maxValue()) + 1, runtimeCount);
  for (int i = 0; i < runtimeCount; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(stringify(static_cast<TcEnum>(i)).str(), rt::name(static_cast<RtEnum>(i)));
    EXPECT_STRNE(rt::spelling(static_cast<RtEnum>(i)), "?");
  }
  EXPECT_STREQ(rt::name(static_cast<RtEnum>(runtimeCount)), "?");
}

TEST(AbiTest, HypersMirror) {
  expectMirror<rt::Hyper, tc::Hyper>(rt::kNumHypers, tc::stringifyHyper,
                                     tc::getMaxEnumValForHyper);
}

TEST(AbiTest, StateRolesMirror) {
  expectMirror<rt::StateRole, tc::StateRole>(rt::kNumStateRoles, tc::stringifyStateRole,
                                             tc::getMaxEnumValForStateRole);
}

TEST(AbiTest, OptimizersMirror) {
  expectMirror<rt::Optimizer, tc::Optimizer>(rt::kNumOptimizers, tc::stringifyOptimizer,
                                             tc::getMaxEnumValForOptimizer);
}

TEST(AbiTest, LossScalingsMirror) {
  expectMirror<rt::LossScaling, tc::LossScaling>(rt::kNumLossScalings, tc::stringifyLossScaling,
                                                 tc::getMaxEnumValForLossScaling);
}

TEST(AbiTest, PrecisionsMirror) {
  expectMirror<rt::Precision, tc::Precision>(rt::kNumPrecisions, tc::stringifyPrecision,
                                             tc::getMaxEnumValForPrecision);
}

TEST(AbiTest, NamesParseBack) {
  for (int i = 0; i < rt::kNumHypers; ++i)
    EXPECT_EQ(tc::symbolizeHyper(rt::name(static_cast<rt::Hyper>(i))),
              static_cast<tc::Hyper>(i));
  for (int i = 0; i < rt::kNumStateRoles; ++i)
    EXPECT_EQ(tc::symbolizeStateRole(rt::name(static_cast<rt::StateRole>(i))),
              static_cast<tc::StateRole>(i));
}

} // namespace
