//===- Evaluation.h - held-out metrics and the best of them -----*- C++ -*-===//
//
// Internal to the runtime: --eval-data read batch by batch through the
// forward pass (model.eval()): the loss, accuracy and top-k accuracy of the
// class scores of one output against DIR/label.npy, or the mean of the
// model's own scalar loss. EvalMonitor keeps the best evaluation so far for
// --keep-best and --early-stop-patience, and travels in checkpoints.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_EVALUATION_H
#define TRAINC_RT_COMMON_EVALUATION_H

#include "BatchLoader.h"
#include "ProgramSupport.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace trainc::rt::detail {

/// One evaluation (NaN: not computed: a model computing its own loss has no
/// accuracy; top-k only with --topk).
struct EvalResult {
  double loss = std::nan(""), accuracy = std::nan(""), topk = std::nan("");
};

/// What --keep-best and --early-stop-patience watch.
enum class EvalMetric { Loss, Accuracy, TopK };

/// "eval_loss", "eval_accuracy", "eval_top<k>" (the log's keys).
std::string metricName(EvalMetric metric, int topk);
/// The metric named `text` (with --topk `topk`, 0: none), or an error
/// naming `flag` and what it may be.
Status parseMetric(const std::string &flag, const std::string &text, int topk, bool modelLoss,
                   EvalMetric &out);
double metricValue(const EvalResult &result, EvalMetric metric);

/// Held-out data: the inputs read batch by batch, the labels whole.
struct EvalSet {
  std::vector<NpyArray> arrays;
  /// uint8 conversion and --normalize (never augmented).
  std::vector<SampleTransform> transforms;
  NpyArray labels;
  /// The labels, read whole (8 bytes a sample).
  std::vector<int64_t> truth;
  int64_t samples = 0, classes = 0;
  /// The output evaluated (--eval-output; the first by default) and k of
  /// the top-k accuracy (0: none).
  int output = 0, topk = 0;
  /// The label left out (TrainStep::ignoreIndex).
  int64_t ignoredLabel = -100;
  /// The model computes its own loss (--loss=output): evaluation averages
  /// that output over the full batches (`evaluated` samples), no accuracy.
  bool modelLoss = false;
  int64_t evaluated = 0;
  std::vector<BatchField> fields;
  std::vector<DevicePtr> inputs, outputs;
  std::vector<void *> inputPtrs, outputPtrs;
  std::vector<char> staging;
  std::vector<int64_t> order;
};

/// Opens DIR's inputs and labels and allocates the forward pass's buffers;
/// `outputName` (empty: the first output) must be class scores [N, C] (or,
/// with `modelLoss`, the scalar loss), and `topk` at most C. `samples`: the
/// inputs' uint8 conversion and normalization, as training's.
Status openEvalSet(Context &context, const Program &program, const std::string &dir,
                   bool modelLoss, const std::string &outputName, int topk,
                   const SampleOptions &samples, EvalSet &set);

/// Runs the forward pass over the held-out set with `params`.
Status evaluate(Context &context, const Program &program, EvalSet &set,
                const std::vector<void *> &params, char *arena, EvalResult &result);

/// The best evaluation so far of one metric, and how many evaluations came
/// since (as Keras's EarlyStopping: an evaluation improves on the best when
/// it beats it by more than `minDelta`).
class EvalMonitor {
public:
  EvalMonitor(EvalMetric metric, int topk, double minDelta, int64_t patience)
      : metric(metric), topk(topk), minDelta(minDelta), patience(patience) {}

  /// Takes the evaluation after step `step`: whether it is the new best.
  bool take(const EvalResult &result, int64_t step, int64_t epoch);
  /// --early-stop-patience evaluations without improvement have passed.
  bool exhausted() const { return patience > 0 && since >= patience; }
  std::string name() const { return metricName(metric, topk); }
  bool any() const { return !std::isnan(best); }
  double bestValue() const { return best; }
  int64_t bestStep() const { return step_; }
  int64_t bestEpoch() const { return epoch_; }
  int64_t sinceBest() const { return since; }

  /// The monitor's fields of a checkpoint's manifest ("monitor_*"), and
  /// back: a checkpoint of another metric (or none) starts afresh, with a
  /// note; malformed fields are an error naming `path`.
  void save(std::map<std::string, std::string> &manifest) const;
  Status restore(const std::map<std::string, std::string> &fields, const std::string &path);

private:
  EvalMetric metric;
  int topk;
  double minDelta;
  int64_t patience;
  double best = std::nan("");
  int64_t step_ = 0, epoch_ = 0, since = 0;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_EVALUATION_H
