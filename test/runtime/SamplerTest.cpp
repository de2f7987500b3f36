//===- SamplerTest.cpp - batches drawn by the samples' losses --------------===//
//
// The sum tree's sums, minima and lookups; 10^5 draws of --sampler=priority
// and of the --sampler=mh chains against the target distribution
// P(i) = p_i / sum_j p_j (Pearson's chi-squared, 49 degrees of freedom, at
// the 0.001 level: 85.35), with samples not trained yet at the running
// maximum; the importance weights against (p_i / p_min)^-beta; the losses of
// batch n applied before the draw of batch n + 2 and not before; a
// checkpointed sampler drawing what the original draws.
//
//===----------------------------------------------------------------------===//

#include "common/Sampler.h"
#include "TestUtil.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

namespace trainc::test {
namespace {

using rt::detail::PrioritySampler;
using rt::detail::SamplerKind;
using rt::detail::SamplerOptions;
using rt::detail::SumTree;

constexpr int64_t kSamples = 50, kBatch = 100;
constexpr double kChiSquared49At0001 = 85.35;

TEST(SumTree, SumsMinimaAndLookups) {
  SumTree tree(5);
  EXPECT_EQ(tree.total(), 0.0);
  EXPECT_TRUE(std::isinf(tree.minimum()));
  const double values[] = {1.0, 0.0, 2.5, 0.5, 4.0};
  for (int i = 0; i < 5; ++i)
    tree.set(i, values[i]);
  EXPECT_DOUBLE_EQ(tree.total(), 8.0);
  EXPECT_DOUBLE_EQ(tree.minimum(), 0.0);
  // Prefix ranges: [0, 1) -> 0, (slot 1 is empty), [1, 3.5) -> 2,
  // [3.5, 4) -> 3, [4, 8) -> 4.
  EXPECT_EQ(tree.find(0.0), 0);
  EXPECT_EQ(tree.find(0.999), 0);
  EXPECT_EQ(tree.find(1.0), 2);
  EXPECT_EQ(tree.find(3.49), 2);
  EXPECT_EQ(tree.find(3.5), 3);
  EXPECT_EQ(tree.find(7.999), 4);
  // Past the total (rounding) stays on a non-empty slot.
  EXPECT_EQ(tree.find(8.5), 4);
  tree.set(1, 0.25);
  EXPECT_DOUBLE_EQ(tree.minimum(), 0.25);
  EXPECT_EQ(tree.find(1.1), 1);
}

/// A sampler whose samples 0..24 have priorities 0.2 + 0.08 i and 25..49
/// are untrained (at the running maximum, 2.5), through a checkpoint's
/// state.
PrioritySampler makeSampler(SamplerKind kind, std::vector<double> &priorities) {
  SamplerOptions options;
  options.kind = kind;
  options.alpha = 1.0;
  options.beta = 0.5;
  options.eps = 1e-6;
  PrioritySampler sampler(options, kSamples, kBatch, 7);
  std::map<std::string, std::vector<char>> tensors;
  std::map<std::string, std::string> manifest;
  sampler.save(tensors, manifest);
  std::vector<double> stored(kSamples, -1.0);
  std::vector<int64_t> untrained(kSamples, -1);
  priorities.assign(kSamples, 2.5);
  for (int64_t i = 0; i < kSamples; ++i) {
    if (i < 25)
      stored[i] = priorities[i] = 0.2 + 0.08 * static_cast<double>(i);
    else
      untrained[i - 25] = i;
  }
  auto bytes = [](const void *data, size_t n) {
    return std::vector<char>(static_cast<const char *>(data),
                             static_cast<const char *>(data) + n);
  };
  tensors["sampler.priority"] = bytes(stored.data(), stored.size() * 8);
  tensors["sampler.untrained"] = bytes(untrained.data(), untrained.size() * 8);
  manifest["sampler_max_priority"] = "2.5";
  EXPECT_OK(sampler.restore(tensors, manifest));
  return sampler;
}

double chiSquared(const std::vector<int64_t> &counts, const std::vector<double> &priorities) {
  double total = 0, draws = 0, statistic = 0;
  for (double p : priorities)
    total += p;
  for (int64_t c : counts)
    draws += static_cast<double>(c);
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = draws * priorities[i] / total;
    statistic += (static_cast<double>(counts[i]) - expected) *
                 (static_cast<double>(counts[i]) - expected) / expected;
  }
  return statistic;
}

TEST(PrioritySampler, DrawsFollowThePriorities) {
  std::vector<double> priorities;
  PrioritySampler sampler = makeSampler(SamplerKind::Priority, priorities);
  std::vector<int64_t> rows(kBatch * 1000), counts(kSamples, 0);
  std::vector<float> weights(rows.size());
  // 1000 batches of 100 draws, with no loss recorded: the priorities stay.
  sampler.drawGroup(0, 1000, 0.5, rows.data(), weights.data());
  const double pMin = 0.2;
  double worst = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    ASSERT_GE(rows[r], 0);
    ASSERT_LT(rows[r], kSamples);
    ++counts[rows[r]];
    const double want = std::pow(priorities[rows[r]] / pMin, -0.5);
    worst = std::max(worst, std::fabs(weights[r] - want) / want);
  }
  EXPECT_LT(chiSquared(counts, priorities), kChiSquared49At0001);
  EXPECT_LT(worst, 1e-6) << "importance weights (p_i / p_min)^-beta";
  // The same draws from uniform priorities would fail the test.
  EXPECT_GT(chiSquared(counts, std::vector<double>(kSamples, 1.0)), 10 * kChiSquared49At0001);
}

TEST(PrioritySampler, MetropolisHastingsChainsReachThePriorities) {
  std::vector<double> priorities;
  PrioritySampler sampler = makeSampler(SamplerKind::MetropolisHastings, priorities);
  // 100 chains, 2100 steps: the first 100 dropped, then every second step
  // (10^5 draws).
  std::vector<int64_t> rows(kBatch), counts(kSamples, 0);
  std::vector<float> weights(kBatch);
  for (int64_t step = 0; step < 2100; ++step) {
    sampler.drawGroup(step, 1, 0.5, rows.data(), weights.data());
    if (step >= 100 && step % 2 == 0)
      for (int64_t r : rows)
        ++counts[r];
  }
  EXPECT_LT(chiSquared(counts, priorities), kChiSquared49At0001);
  // Accepting by the inverse ratio would reach 1 / p instead.
  std::vector<double> inverse;
  for (double p : priorities)
    inverse.push_back(1 / p);
  EXPECT_GT(chiSquared(counts, inverse), 10 * kChiSquared49At0001);
}

TEST(PrioritySampler, LossesCountTwoBatchesLater) {
  SamplerOptions options;
  options.kind = SamplerKind::Priority;
  options.alpha = 1.0;
  options.beta = 1.0;
  options.eps = 0.0;
  PrioritySampler sampler(options, 4, 2, 3);
  std::vector<int64_t> rows(2);
  std::vector<float> weights(2);
  sampler.drawGroup(0, 1, 1.0, rows.data(), weights.data());
  const std::vector<int64_t> first = rows;
  // Sample losses 8 (trained rows): priorities 8 against the untrained
  // ones' running maximum, which becomes 8 too.
  const float losses[] = {8.0f, 8.0f};
  sampler.record(0, losses);
  sampler.drawGroup(1, 1, 1.0, rows.data(), weights.data());
  // Batch 1 is drawn before batch 0's losses apply: every weight is 1.
  EXPECT_EQ(weights[0], 1.0f);
  EXPECT_EQ(weights[1], 1.0f);
  const float small[] = {1.0f, 1.0f};
  sampler.record(1, small);
  sampler.drawGroup(2, 1, 1.0, rows.data(), weights.data());
  // Batch 0's losses apply now (not batch 1's): the maximum is 8, the
  // untrained samples stand at 8, and every priority is 8.
  EXPECT_EQ(weights[0], 1.0f);
  sampler.drawGroup(3, 1, 1.0, rows.data(), weights.data());
  // Batch 1's losses (1) apply now: a row of priority 8 weighs 1/8.
  for (int r = 0; r < 2; ++r)
    EXPECT_TRUE(weights[r] == 1.0f || std::fabs(weights[r] - 0.125f) < 1e-7) << weights[r];
}

TEST(PrioritySampler, ACheckpointedSamplerDrawsAsTheOriginal) {
  for (SamplerKind kind : {SamplerKind::Priority, SamplerKind::MetropolisHastings}) {
    SamplerOptions options;
    options.kind = kind;
    options.alpha = 0.6;
    options.beta = 0.4;
    options.eps = 1e-6;
    PrioritySampler a(options, kSamples, 8, 11);
    std::vector<int64_t> rows(8), other(8);
    std::vector<float> weights(8), otherWeights(8);
    std::vector<float> losses(8);
    for (int64_t seq = 0; seq < 20; ++seq) {
      a.drawGroup(seq, 1, 0.4, rows.data(), weights.data());
      for (int r = 0; r < 8; ++r)
        losses[r] = 0.1f + static_cast<float>((rows[r] * 37 + seq) % 17);
      a.record(seq, losses.data());
    }
    std::map<std::string, std::vector<char>> tensors;
    std::map<std::string, std::string> manifest;
    a.save(tensors, manifest);
    PrioritySampler b(options, kSamples, 8, 999);
    EXPECT_OK(b.restore(tensors, manifest));
    for (int64_t seq = 20; seq < 40; ++seq) {
      a.drawGroup(seq, 1, 0.5, rows.data(), weights.data());
      b.drawGroup(seq, 1, 0.5, other.data(), otherWeights.data());
      ASSERT_EQ(rows, other) << "batch " << seq;
      ASSERT_EQ(weights, otherWeights) << "batch " << seq;
      for (int r = 0; r < 8; ++r)
        losses[r] = 0.2f + static_cast<float>((rows[r] * 13 + seq) % 11);
      a.record(seq, losses.data());
      b.record(seq, losses.data());
    }
    // Another sampler's flags are refused.
    options.alpha = 0.7;
    PrioritySampler c(options, kSamples, 8, 11);
    EXPECT_FALSE(c.restore(tensors, manifest).ok());
  }
}

} // namespace
} // namespace trainc::test
