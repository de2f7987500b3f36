//===- PbtPopulationTest.cpp - trainc pbt's exploit and explore -----------===//

#include "Population.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace trainc::pbt;

namespace {

std::vector<HyperSpace> spaces() {
  HyperSpace lr{"lr", Scale::Log, 1e-4, 1e-1};
  HyperSpace momentum{"momentum", Scale::Linear, 0.5, 0.9};
  return {lr, momentum};
}

std::vector<Hypers> drawn(int n, Rng &rng) {
  std::vector<Hypers> values;
  for (int m = 0; m < n; ++m)
    values.push_back(drawAll(spaces(), rng));
  return values;
}

TEST(PbtPopulationTest, FlagsAreTheTrainers) {
  EXPECT_EQ(HyperSpace{"weight_decay"}.flag(), "--weight-decay");
  EXPECT_EQ(HyperSpace{"lr"}.flag(), "--lr");
}

TEST(PbtPopulationTest, DrawsStayInTheirSpaceAndSpreadOverIt) {
  Rng rng(7);
  double lowest = 1, highest = 0;
  for (int i = 0; i < 2000; ++i) {
    Hypers h = drawAll(spaces(), rng);
    EXPECT_GE(h["lr"], 1e-4);
    EXPECT_LE(h["lr"], 1e-1);
    EXPECT_GE(h["momentum"], 0.5);
    EXPECT_LE(h["momentum"], 0.9);
    lowest = std::min(lowest, h["lr"]);
    highest = std::max(highest, h["lr"]);
  }
  // Log-uniform: the decades are equally likely, so both ends are reached.
  EXPECT_LT(lowest, 2e-4);
  EXPECT_GT(highest, 5e-2);
}

TEST(PbtPopulationTest, TruncationReplacesTheBottomByTheTop) {
  Rng rng(1);
  std::vector<Hypers> hypers = drawn(8, rng);
  // Member m scores m: 0 and 1 are the bottom quarter, 6 and 7 the top.
  std::vector<double> scores{0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<Replacement> out =
      exploitAndExplore(scores, hypers, spaces(), ExploitRule{0.25}, ExploreRule{}, rng);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].member, 0);
  EXPECT_EQ(out[1].member, 1);
  for (const Replacement &r : out) {
    EXPECT_TRUE(r.parent == 6 || r.parent == 7);
    EXPECT_FALSE(r.diverged);
    for (const char *name : {"lr", "momentum"}) {
      const HyperSpace &space = spaces()[std::string(name) == "lr" ? 0 : 1];
      const double before = hypers[r.parent].at(name), after = r.after.at(name);
      // Perturbed by 0.8 or 1.25, or clipped to the space's bound.
      EXPECT_TRUE(after == space.clip(before * 0.8) || after == space.clip(before * 1.25))
          << name << " " << before << " -> " << after;
    }
  }
}

TEST(PbtPopulationTest, DivergedMembersAreReplacedAndNeverParents) {
  Rng rng(3);
  std::vector<Hypers> hypers = drawn(6, rng);
  const double nan = std::nan("");
  std::vector<double> scores{5, nan, 3, nan, 4, 9};
  std::vector<Replacement> out =
      exploitAndExplore(scores, hypers, spaces(), ExploitRule{0.25}, ExploreRule{}, rng);
  // 4 ranked: floor(0.25 * 4) = 1 bottom (member 2, score 3), and both
  // diverged members; the one parent is the best, member 5.
  ASSERT_EQ(out.size(), 3u);
  std::set<int> members;
  for (const Replacement &r : out) {
    members.insert(r.member);
    EXPECT_EQ(r.parent, 5);
    EXPECT_EQ(r.diverged, std::isnan(scores[r.member]));
  }
  EXPECT_EQ(members, (std::set<int>{1, 2, 3}));
}

TEST(PbtPopulationTest, TiesRankByMemberAndEveryoneDivergedIsNoDecision) {
  Rng rng(5);
  std::vector<Hypers> hypers = drawn(4, rng);
  std::vector<Replacement> out =
      exploitAndExplore({1, 1, 1, 1}, hypers, spaces(), ExploitRule{0.25}, ExploreRule{}, rng);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].member, 3);
  EXPECT_EQ(out[0].parent, 0);
  const double nan = std::nan("");
  EXPECT_TRUE(exploitAndExplore({nan, nan}, drawn(2, rng), spaces(), ExploitRule{0.5},
                                ExploreRule{}, rng)
                  .empty());
}

TEST(PbtPopulationTest, ResampleDrawsAgainFromTheSpace) {
  Rng rng(9);
  Hypers copied{{"lr", 1e-3}, {"momentum", 0.7}};
  ExploreRule always{ExploreKind::Resample, {}, 1.0};
  int changed = 0;
  for (int i = 0; i < 100; ++i) {
    Hypers h = explore(copied, spaces(), always, rng);
    changed += h["lr"] != 1e-3 * 0.8 && h["lr"] != 1e-3 * 1.25;
    EXPECT_GE(h["lr"], 1e-4);
    EXPECT_LE(h["lr"], 1e-1);
  }
  EXPECT_EQ(changed, 100);
}

TEST(PbtPopulationTest, TheSameSeedDecidesTheSame) {
  auto decide = [] {
    Rng rng(11);
    std::vector<Hypers> hypers = drawn(8, rng);
    std::vector<Replacement> out = exploitAndExplore({3, 1, 4, 1, 5, 9, 2, 6}, hypers, spaces(),
                                                     ExploitRule{0.25}, ExploreRule{}, rng);
    std::vector<double> flat;
    for (const Replacement &r : out) {
      flat.push_back(r.member);
      flat.push_back(r.parent);
      flat.push_back(r.after.at("lr"));
      flat.push_back(r.after.at("momentum"));
    }
    flat.push_back(static_cast<double>(rng.saved()));
    return flat;
  };
  EXPECT_EQ(decide(), decide());
}

TEST(PbtPopulationTest, BelowIsUniform) {
  Rng rng(13);
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 30000; ++i)
    ++counts[rng.below(3)];
  for (int c : counts)
    EXPECT_NEAR(c, 10000, 400); // about 4.5 standard deviations
}

} // namespace
