//===- TrainChecks.h - what a training run checks before step 1 -*- C++ -*-===//
//
// Internal to the runtime: checks of the training data and the output
// targets that run before anything is trained, so that a bad label or an
// unwritable target costs no training time.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_TRAINCHECKS_H
#define TRAINC_RT_COMMON_TRAINCHECKS_H

#include "ProgramSupport.h"
#include "SampleTransform.h"

#include <vector>

namespace trainc::rt::detail {

/// The class label that --loss=cross-entropy and evaluation leave out
/// (TrainStep::ignoreIndex: --ignore-index, PyTorch's -100 by default).
inline int64_t ignoredLabel(const Program &program) {
  return program.train ? program.train->ignoreIndex : -100;
}

/// The training data: the step's inputs that come from files (all but the
/// per-sample weights and the dropout key, which the trainer sets), opened,
/// with their sample count.
struct TrainingData {
  std::vector<TensorInfo> fileInputs;
  /// Of each file input among the step's inputs.
  std::vector<int> fileIndex;
  /// The trainer's inputs among the step's (-1: none).
  int weightsIndex = -1, maskIndex = -1, keyIndex = -1;
  /// DIR/sample_weights.npy, one finite weight >= 0 per sample (empty: every
  /// sample weighs 1).
  std::vector<float> userWeights;
  /// The loss divides by the weights' sum (--sample-weight-norm=sum).
  bool weightSumDivides = true;
  /// Without per-sample weights the model computes its own loss
  /// (--loss=output), a mean over the batch inside the model: a short batch
  /// padded with repeated rows would count those rows, so it is not
  /// trained, as PyTorch's DataLoader(drop_last=True) does.
  bool dropLast = false;
  std::vector<NpyArray> arrays;
  /// Per sample, whether the loss counts some label of it (empty: every
  /// sample counts, or the labels are not class labels); a step none of
  /// whose samples counts is not run (its loss would be 0/0).
  std::vector<uint8_t> counted;
  /// Per file input: uint8 conversion, --normalize, --augment.
  std::vector<SampleTransform> transforms;
  int64_t samples = 0;
};

/// Opens the training data in `dir` and checks it all before step 1: enough
/// samples, no NaN or infinity in float inputs (read in chunks of rows,
/// never whole: a data set may be larger than memory), labels and token ids
/// in range (checkTrainingLabels, checkIndexInputs).
/// `samples` and `seed`: the inputs' transforms (SampleTransform.h).
/// `lossData`: a pipeline stage before the last, whose step reads neither
/// labels nor sample weights: the last stage's data (opened here too), from
/// which it takes what decides each batch's weight and whether it runs.
Status openTrainingData(const Program &program, const std::string &dir,
                        const SampleOptions &samples, uint64_t seed, TrainingData &data,
                        const TrainingData *lossData = nullptr);

/// The weight of each sample in the loss: DIR/sample_weights.npy where it
/// exists (float32, one per sample, finite and >= 0; anything else is
/// refused naming the file and the first bad sample), else none.
Status openSampleWeights(const Program &program, const std::string &dir, TrainingData &data);

/// The trainer's per-row inputs of a batch of `batch` rows whose first
/// `count` rows are the samples `rows` (the padding after them): `weights`
/// (each sample's weight times its `importance` where given, 0 for
/// padding; may be null) and `mask` (1 for a
/// sample, 0 for padding; may be null). A batch without any sample (a rank's
/// share past a short last global batch) weighs 1 everywhere, and one whose
/// samples all weigh 0 gives them 1 where the weights' sum divides, so that
/// its loss is finite: its gradient's share (the batch's weight over its
/// group's) is 0.
void fillSampleRows(const TrainingData &data, const int64_t *rows, int64_t count, int64_t batch,
                    float *weights, float *mask, const float *importance = nullptr);

/// Class labels of the training data must lie in [0, classes) or be
/// the ignored label (ignoredLabel), checked
/// before step 1 (a bad label would otherwise stop the run at its batch). The
/// ABI carries no class count: the label is the step input before the
/// sample weights that is not a model input (a model's own loss takes its
/// labels as a model input and may have an ignore_index, so those are not
/// checked), int64, and its class count is that of the first output, f32
/// scores with one more axis than the label: axis 1 (--class-axis=1) or the
/// last axis (--class-axis=-1), as evaluation reads them.
/// `counted` (where given and the labels are class labels): per sample, 1
/// where some label is not the ignored one, 0 where the loss ignores all.
Status checkTrainingLabels(const Program &program, const std::vector<TensorInfo> &fileInputs,
                           const std::vector<NpyArray> &arrays, int64_t samples,
                           std::vector<uint8_t> *counted = nullptr);

/// Integer inputs that index a table (TensorInfo::indexLimit: an embedding's
/// token ids) must lie in [0, indexLimit), checked over every sample before
/// anything runs: a negative id is refused as PyTorch's nn.Embedding refuses
/// it (ONNX's Gather would count it from the end), and an error names the
/// value, the sample, the file and the node that reads the table.
Status checkIndexInputs(const TensorInfo *infos, int count, const std::vector<NpyArray> &arrays,
                        int64_t samples);

/// Every hyperparameter flag given must change something: one the compiled
/// optimizer does not read (--momentum on an Adam trainer, --beta1 or --eps on
/// an SGD one) or a schedule's parameter without that schedule (--step-size
/// without --lr-schedule step or cyclic) is an error naming the flag and what
/// the program was compiled with.
Status checkHyperFlags(const TrainStep &train, const TrainOptions &options);

/// The outputs a run writes (--export, --log, the checkpoint files) must be
/// absent or regular files, and --export's folder must exist: checked before
/// anything is read or trained, so a bad target costs no training.
/// The evaluation and checkpoint flags that need --eval-data or
/// --checkpoint-dir (--topk, --keep-best, --keep-last, ...), and
/// --early-stop-min-delta without --early-stop-patience, are errors.
Status checkEvaluationFlags(const TrainOptions &options);

Status checkOutputTargets(const Program &program, const TrainOptions &options);

/// --async-workers: refused, with the reason, where a step's work is not
/// its own (shared gradient accumulators, a loss scale or gradient norm
/// kept across steps, averaged weights, drawn or selected batches) or the
/// run has more processes; `lossScaling`, `gradNorm`: the run keeps them.
/// --async and --staleness-bound: refused, with the reason, outside a
/// data-parallel run (`ranks`), and where a step's work is not its own
/// (gradient accumulation) or a decision needs every rank at one step
/// (early stopping, averaging, the range test).
Status checkAsyncRanks(const TrainOptions &options, bool ranks, int64_t accum, bool rangeTest);

Status checkAsyncWorkers(const TrainOptions &options, int ranks, bool staged, int64_t accum,
                         bool lossScaling, bool gradNorm);

/// The export table of the program: every segment byte and every parameter
/// exactly once, with the program's sizes. `largest`: the largest parameter.
Status checkExportLayout(const Program &program, uint64_t &largest);

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_TRAINCHECKS_H
