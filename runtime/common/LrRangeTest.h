//===- LrRangeTest.h - the learning-rate range test -------------*- C++ -*-===//
//
// Internal to the runtime: --find-lr. Training from the initial weights, the
// learning rate grows exponentially from --find-lr-min to --find-lr-max over
// --find-lr-steps steps; the loss is smoothed as fastai's LRFinder does
// (an exponential average, beta 0.98, debiased), and the test stops early
// once the smoothed loss exceeds 4x its lowest or the loss is not finite.
// Two rates are suggested, as fastai's `steep` and `minimum`: where the
// smoothed loss falls fastest against log(lr), and the rate of its lowest
// value / 10 (what --lr=auto trains with). The run's model is thrown away:
// the trainer starts training afresh after it.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_LRRANGETEST_H
#define TRAINC_RT_COMMON_LRRANGETEST_H

#include "trainc_rt/status.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace trainc::rt::detail {

/// --find-lr-steps, --find-lr-min, --find-lr-max, --find-lr-out.
struct RangeTestOptions {
  int64_t steps = 100;
  double minLr = 1e-7, maxLr = 10;
  /// PREFIX.jsonl and PREFIX.png.
  std::string outPrefix = "find-lr";
};

class LrRangeTest {
public:
  /// fastai's smoothing factor and divergence threshold.
  static constexpr double kBeta = 0.98, kDivergence = 4.0;

  struct Point {
    int64_t step;
    /// `loss` is NaN where the step's loss was not finite.
    double lr, loss, smoothed;
  };
  struct Suggestion {
    /// The suggested rate (minimum / 10), the steepest descent's rate and
    /// the lowest smoothed loss's rate / 10, with the points they come from.
    double suggested = std::nan(""), steepest = std::nan(""), minimum = std::nan("");
    int64_t steepestStep = 0, lowestStep = 0;
  };

  explicit LrRangeTest(const RangeTestOptions &options) : options(options) {}

  /// The learning rate of step k (0-based): min * (max / min)^(k / (steps - 1)).
  double lr(int64_t k) const;
  /// Takes step `step`'s (1-based) mean loss, run at `lr`. Ignored once the
  /// test has ended.
  void take(int64_t step, double lr, double loss);
  bool ended() const { return !endReason_.empty(); }
  /// Why the test ended: "diverged" or "steps" (empty: it goes on).
  const std::string &endReason() const { return endReason_; }
  const std::vector<Point> &points() const { return points_; }

  /// The suggestions from the recorded points, fastai's way: the first
  /// tenth of the steps and the last 5 points left out (all finite points
  /// where that leaves fewer than 2). An error where the loss diverged
  /// within the first tenth of the steps (or before 2 finite points): the
  /// range starts too high.
  Status suggest(Suggestion &out) const;

  /// The curve as JSON lines: a record per step ("step", "lr", "loss",
  /// "smoothed_loss") and a last one with the suggestions and why the test
  /// ended.
  std::string jsonLines(const Suggestion &suggestion) const;

private:
  RangeTestOptions options;
  std::vector<Point> points_;
  double average = 0, lowest = INFINITY;
  std::string endReason_;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_LRRANGETEST_H
