//===- LrRangeTest.cpp - the learning-rate range test ---------------------===//

#include "LrRangeTest.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace trainc::rt::detail {

double LrRangeTest::lr(int64_t k) const {
  if (options.steps <= 1)
    return options.minLr;
  return options.minLr * std::pow(options.maxLr / options.minLr,
                                  static_cast<double>(k) / static_cast<double>(options.steps - 1));
}

/// fastai's AvgSmoothLoss (val = lerp(loss, val, beta), shown as
/// val / (1 - beta^count)) and LRFinder.after_batch (the lowest smoothed
/// loss kept; stop above 4x it, or at a NaN).
void LrRangeTest::take(int64_t step, double lr, double loss) {
  if (ended())
    return;
  const double count = static_cast<double>(points_.size() + 1);
  average = loss + kBeta * (average - loss);
  const double smoothed = average / (1 - std::pow(kBeta, count));
  points_.push_back({step, lr, std::isfinite(loss) ? loss : std::nan(""),
                     std::isfinite(smoothed) ? smoothed : std::nan("")});
  if (std::isfinite(smoothed))
    lowest = std::min(lowest, smoothed);
  if (!std::isfinite(smoothed) || smoothed > kDivergence * lowest) {
    endReason_ = "diverged";
    return;
  }
  if (static_cast<int64_t>(points_.size()) >= options.steps)
    endReason_ = "steps";
}

Status LrRangeTest::suggest(Suggestion &out) const {
  // The finite points before the first non-finite one.
  size_t finite = 0;
  while (finite < points_.size() && std::isfinite(points_[finite].smoothed))
    ++finite;
  size_t first = static_cast<size_t>(options.steps / 10),
         end = points_.size() > 5 ? std::min(finite, points_.size() - 5) : 0;
  if (end < first + 2) {
    first = 0;
    end = finite;
  }
  // A loss that diverges within the first tenth of the range (or before 2
  // finite points) shows no descent to suggest a rate from.
  const int64_t recorded = static_cast<int64_t>(points_.size());
  if (end < 2 || (endReason_ == "diverged" && recorded <= std::max<int64_t>(2, options.steps / 10))) {
    char text[320];
    std::snprintf(text, sizeof(text),
                  "the LR range test's loss diverged at step %lld of %lld, within the first "
                  "tenth of the range, at lr %g: the range starts too high to suggest a rate; "
                  "lower --find-lr-min (now %g)",
                  static_cast<long long>(recorded), static_cast<long long>(options.steps),
                  points_.empty() ? options.minLr : points_.back().lr, options.minLr);
    return Status::error(text);
  }
  size_t lowestAt = first, steepestAt = first;
  double steepestSlope = INFINITY;
  for (size_t i = first; i < end; ++i) {
    if (points_[i].smoothed < points_[lowestAt].smoothed)
      lowestAt = i;
    if (i + 1 < end) {
      double slope = (points_[i + 1].smoothed - points_[i].smoothed) /
                     (std::log(points_[i + 1].lr) - std::log(points_[i].lr));
      if (slope < steepestSlope) {
        steepestSlope = slope;
        steepestAt = i;
      }
    }
  }
  out.steepest = points_[steepestAt].lr;
  out.steepestStep = points_[steepestAt].step;
  out.minimum = points_[lowestAt].lr / 10;
  out.lowestStep = points_[lowestAt].step;
  out.suggested = out.minimum;
  return Status();
}

std::string LrRangeTest::jsonLines(const Suggestion &suggestion) const {
  using Json = nlohmann::ordered_json;
  auto number = [](double value) { return std::isfinite(value) ? Json(value) : Json(nullptr); };
  std::string text;
  for (const Point &p : points_) {
    Json record;
    record["step"] = p.step;
    record["lr"] = p.lr;
    record["loss"] = number(p.loss);
    record["smoothed_loss"] = number(p.smoothed);
    text += record.dump() + "\n";
  }
  Json summary;
  summary["suggested_lr"] = number(suggestion.suggested);
  summary["steepest_lr"] = number(suggestion.steepest);
  summary["minimum_lr"] = number(suggestion.minimum);
  summary["lowest_loss_step"] = suggestion.lowestStep;
  summary["steps"] = static_cast<int64_t>(points_.size());
  summary["stopped"] = endReason_.empty() ? "interrupted" : endReason_;
  summary["beta"] = kBeta;
  return text + summary.dump() + "\n";
}

} // namespace trainc::rt::detail
