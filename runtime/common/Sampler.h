//===- Sampler.h - batches drawn by the samples' losses ---------*- C++ -*-===//
//
// Internal to the runtime: --sampler=priority|mh. Each sample has a priority
// p_i = (loss_i + eps)^alpha from the last loss the step returned for it; a
// sample not trained yet has the running maximum of the priorities (1 at the
// start), as prioritized experience replay gives new transitions. The target
// distribution is P(i) = p_i / sum_j p_j.
//
//  * priority: every row of a batch is an independent draw from P, through a
//    sum tree over the trained samples (O(log N) a draw and an update) and
//    the untrained ones as one block of equal priority;
//  * mh: every row is a Metropolis-Hastings chain over the samples: the
//    proposal is uniform, accepted with min(1, p_j / p_i), so that P is the
//    chain's stationary distribution (the chains start at uniform draws).
//
// Each row's loss weight is the importance-sampling weight
// (N P(i))^-beta / max_j (N P(j))^-beta = (p_i / p_min)^-beta, with beta
// annealed from --priority-beta to 1 over the run.
//
// The losses of the batch drawn n-th update the priorities before the draw
// of batch n + 2: the trainer reads a step's losses back while the next step
// runs, so the draws depend on the step sequence alone (not on the workers,
// evaluations or checkpoints), and a resumed run draws what the
// uninterrupted one drew (the pending losses travel in the checkpoint).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_COMMON_SAMPLER_H
#define TRAINC_RT_COMMON_SAMPLER_H

#include "FileIO.h"
#include "HostState.h"
#include "trainc_rt/status.h"

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace trainc::rt::detail {

enum class SamplerKind { Uniform, Priority, MetropolisHastings };

/// --sampler and its parameters.
struct SamplerOptions {
  SamplerKind kind = SamplerKind::Uniform;
  /// NaN: the default of the kind (alpha: 0.6 for priority, prioritized
  /// experience replay's; 1 for mh, the ratio of losses).
  double alpha = std::numeric_limits<double>::quiet_NaN();
  double beta = 0.4, eps = 1e-6;
  /// --trace-batches FILE: every batch's rows, weights and losses as JSON
  /// lines.
  std::string tracePath;
};

const char *samplerName(SamplerKind kind);

/// --select (Selection.h), beside the sampler's options: both choose the
/// samples a step trains.
struct SelectOptions {
  /// --select=topk (the largest losses of each B candidates) or prob (each
  /// candidate kept with probability CDF(loss)^beta over the history of
  /// losses, until the batch is full).
  enum class Kind { None, TopK, Prob } kind = Kind::None;
  /// --select-fraction (topk): the share of the B candidates trained (NaN:
  /// the compiled batch's, k / B).
  double fraction = std::numeric_limits<double>::quiet_NaN();
  /// --select-beta (prob; NaN: 1) and --select-history (prob; 0: 1024).
  double beta = std::numeric_limits<double>::quiet_NaN();
  int64_t history = 0;
};

/// Settles the sampler's defaults and refuses what it cannot do: a
/// parameter without --sampler, a model without per-sample losses (its own
/// loss), data parallelism (the priorities would be per rank),
/// --no-shuffle, the LR range test, alpha < 0, beta outside [0, 1], eps <= 0.
Status settleSampler(SamplerOptions &options, bool sampleLosses, bool dataParallel,
                     bool shuffle, bool rangeTest);

/// A binary tree whose leaves are the priorities of N slots and whose inner
/// nodes are the sums and minima of their children.
class SumTree {
public:
  explicit SumTree(int64_t slots);
  void set(int64_t slot, double value);
  double get(int64_t slot) const { return sums[leaves + slot]; }
  double total() const { return sums[1]; }
  /// The smallest leaf set so far (+inf while none is).
  double minimum() const { return mins[1]; }
  /// The slot whose prefix sum range holds `u` (in [0, total())).
  int64_t find(double u) const;

private:
  int64_t leaves;
  std::vector<double> sums, mins;
};

class PrioritySampler {
public:
  PrioritySampler(const SamplerOptions &options, int64_t samples, int64_t batch, uint64_t seed);

  /// Draws the `count` batches from `seq` on (the run's batches counted
  /// from 0): `rows` and their importance weights, with `beta` (annealed by
  /// the caller). Applies the losses of the batches up to seq - 2 first.
  void drawGroup(int64_t seq, int64_t count, double beta, int64_t *rows, float *weights);
  /// The per-sample losses the step returned for batch `seq`'s rows (the
  /// rows it was drawn with); non-finite losses leave a priority as it was.
  void record(int64_t seq, const float *losses);

  /// The state a checkpoint keeps: tensors (name -> bytes, with dtype and
  /// shape given by checkpointTensors) and manifest fields.
  std::vector<HostTensor> checkpointTensors() const;
  void save(std::map<std::string, std::vector<char>> &tensors,
            std::map<std::string, std::string> &manifest) const;
  Status restore(const std::map<std::string, std::vector<char>> &tensors,
                 const std::map<std::string, std::string> &manifest);

  /// The annealed beta of step `step` of `total` (from --priority-beta to 1).
  double betaAt(int64_t step, int64_t total) const;
  const SamplerOptions &options() const { return opts; }

private:
  double priorityOf(int64_t sample) const;
  void update(int64_t sample, double priority);
  void applyUpTo(int64_t seq);
  int64_t drawOne();
  void drawBatch(int64_t seq, double beta, int64_t *rows, float *weights);

  SamplerOptions opts;
  int64_t samples, batch;
  std::mt19937_64 rng;
  SumTree tree;
  /// Samples without a loss yet: their priority is maxPriority.
  std::vector<int64_t> untrained;
  std::vector<int64_t> untrainedAt;  // position in `untrained`, -1 once trained
  double maxPriority = 1.0;
  /// The rows of the batches drawn whose losses are not applied yet, and
  /// their losses once recorded (NaN before).
  struct Drawn {
    int64_t seq;
    std::vector<int64_t> rows;
    std::vector<float> losses;
  };
  std::deque<Drawn> drawn;
  /// mh: each row's chain (the rows of the last batch drawn).
  std::vector<int64_t> chain;
};

/// The trainer's side of a sampler: the rows and importance weights of the
/// batches of the optimizer step being trained (with --grad-accum, a group
/// is drawn at its first batch, so that each batch's share of the group's
/// weight is known before the group runs), and --trace-batches.
class SampledBatches {
public:
  /// `resumed`: the trace is appended to, not replaced.
  Status open(const SamplerOptions &options, int64_t samples, int64_t batch, uint64_t seed,
              bool resumed);
  bool enabled() const { return sampler != nullptr; }
  PrioritySampler &state() { return *sampler; }

  /// Draws the `count` batches of a group whose first is the run's batch
  /// `seq` (counted from 0 over the epochs), with `beta`.
  Status drawGroup(int64_t seq, int64_t count, double beta);
  /// A batch of the group drawn last.
  const int64_t *rows(int64_t seq) const { return group.data() + (seq - first) * batch; }
  const float *weights(int64_t seq) const { return weightsOf.data() + (seq - first) * batch; }
  /// The per-sample losses the step returned for batch `seq`.
  Status record(int64_t seq, const float *losses);

private:
  std::unique_ptr<PrioritySampler> sampler;
  int64_t batch = 0, first = 0;
  std::vector<int64_t> group;
  std::vector<float> weightsOf;
  std::string tracePath;
  FileHandle trace;
};

} // namespace trainc::rt::detail

#endif // TRAINC_RT_COMMON_SAMPLER_H
