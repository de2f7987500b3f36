//===- abi.h - the training step's typed contract ---------------*- C++ -*-===//
//
// What the compiler and the trainer agree on about a training step, as
// enums: the hyperparameters a step reads, the roles of its inputs and of
// its optimizer state, the optimizer, the precision and the loss scaling.
// The generated program's tables hold these values (program.h); nothing in
// the runtime finds a hyperparameter, a state or an input by its name.
//
// The compiler's IR carries the same enums as tc attributes
// (ir/TcAttrs.td: #tc.hyper<lr>, #tc.state_role<exp_avg>, ...): the values
// and the names below must match those, case by case, and
// test/unit/AbiTest.cpp checks that they do. Plain C++, no MLIR.
//
// Each list is an X-macro (X(Enumerator, "name")): the enum, its names and
// the spelling generated code uses come from the one list.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_ABI_H
#define TRAINC_RT_ABI_H

#include <cstdint>

namespace trainc::rt {

/// The f32 scalars a training step reads (TrainArgs::hypers), in the order
/// the step lists them (TrainStep::hypers). The trainer sets each from its
/// flags and the schedule before every step (Trainer.cpp hyperValue).
#define TRAINC_RT_HYPERS(X)                                                    \
  X(Lr, "lr")                                                                  \
  X(Momentum, "momentum")                                                      \
  X(WeightDecay, "weight_decay")                                               \
  X(Beta1, "beta1")                                                            \
  X(Beta2, "beta2")                                                            \
  X(Eps, "eps")                                                                \
  X(MaxGradNorm, "max_grad_norm")                                              \
  X(ScaleGrowthInterval, "scale_growth_interval")                              \
  /* Gradient accumulation: the micro-batch's real samples over the group's,   \
     and 0 on a group's first micro-batch (else 1). */                         \
  X(GradAccumWeight, "grad_accum.weight")                                      \
  X(GradAccumKeep, "grad_accum.keep")                                          \
  /* Data parallelism: the rank's share of the global batch's sample weight. */\
  X(DataParallelScale, "data_parallel.scale")                                  \
  /* Adam's 1 - beta, derived on the host in double (Hyperparameters::value); \
     its bias corrections come from its step count on the device. */           \
  X(OneMinusBeta1, "one_minus_beta1")                                          \
  X(OneMinusBeta2, "one_minus_beta2")                                          \
  /* LARS: the trust coefficient of its layer-wise learning rate. */          \
  X(TrustCoefficient, "trust_coefficient")                                     \
  /* K-FAC: the damping lambda (sqrt(lambda) joins each factor's diagonal),   \
     the factors' running-average decay, the KL clip of the update, and 1 on  \
     a step that inverts the factors (every --kfac-inverse-every steps from   \
     step 1), else 0. */                                                       \
  X(KfacDamping, "kfac.damping")                                               \
  X(KfacStatDecay, "kfac.stat_decay")                                          \
  X(KfacKlClip, "kfac.kl_clip")                                                \
  X(KfacInvert, "kfac.invert")

/// What an optimizer state tensor is (TrainStep::states). The state's name
/// (its name in checkpoints) is the role's name, a dot and the parameter's
/// name for per-parameter state ("exp_avg.fc1.weight"), or the role's name
/// alone for the step's scalars ("loss_scale").
#define TRAINC_RT_STATE_ROLES(X)                                               \
  X(Momentum, "momentum")                                                      \
  X(ExpAvg, "exp_avg")                                                         \
  X(ExpAvgSq, "exp_avg_sq")                                                    \
  /* Adam's (and LAMB's) step count, on the device: its bias corrections are  \
     computed from it (a step that fp16 loss scaling skips does not count). */ \
  X(AdamStep, "adam.step")                                                     \
  X(GradAccum, "grad_accum")                                                   \
  X(LossScale, "loss_scale")                                                   \
  X(LossScaleGrowthTracker, "loss_scale.growth_tracker")                       \
  X(LossScaleSkippedSteps, "loss_scale.skipped_steps")                       \
  /* The global L2 norm of the step's gradients (unscaled, before clipping),  \
     written by every update for the trainer's log; not checkpointed. */       \
  X(GradNorm, "grad_norm")                                                     \
  /* K-FAC's Kronecker factors of a layer (named after its weight): the      \
     running averages of the input covariance A (with a bias column) and of  \
     the output-gradient covariance G, both starting as the identity, and    \
     the inverses of A + sqrt(damping) I and G + sqrt(damping) I. */          \
  X(KfacA, "kfac.a")                                                           \
  X(KfacG, "kfac.g")                                                           \
  X(KfacAInverse, "kfac.a_inverse")                                            \
  X(KfacGInverse, "kfac.g_inverse")

/// The optimizer a step's update implements (trainc compile --optimizer).
#define TRAINC_RT_OPTIMIZERS(X)                                                \
  X(Sgd, "sgd")                                                                \
  X(Adam, "adam")                                                              \
  X(AdamW, "adamw")                                                            \
  X(Lamb, "lamb")                                                              \
  X(Lars, "lars")                                                              \
  X(Kfac, "kfac")

/// The mixed precision a step computes in (trainc compile --precision).
#define TRAINC_RT_PRECISIONS(X)                                                \
  X(Fp32, "fp32")                                                              \
  X(Bf16, "bf16")                                                              \
  X(Fp16, "fp16")

/// fp16 loss scaling: none, a fixed scale (TrainStep::fixedLossScale) or
/// GradScaler's dynamic scale.
#define TRAINC_RT_LOSS_SCALINGS(X)                                             \
  X(None, "none")                                                              \
  X(Fixed, "fixed")                                                            \
  X(Dynamic, "dynamic")

/// What a step input is: read from the data folder (a model input or the
/// label), or set by the trainer: each sample's weight in the loss (0 for
/// the padding rows of a short last batch, else the user's
/// sample_weights.npy or 1), which rows are real samples (1) or padding (0)
/// where batch norms or the mean normalization need to know, and the
/// dropout key [seed, step].
#define TRAINC_RT_INPUT_ROLES(X)                                               \
  X(Data, "data")                                                              \
  X(Label, "label")                                                            \
  X(SampleWeights, "sample_weights")                                           \
  X(SampleMask, "sample_mask")                                                 \
  X(DropoutKey, "dropout_key")

/// How the loss normalizes the user's sample weights w (trainc compile
/// --sample-weight-norm), as PyTorch code writes it from per-sample losses
/// l: (w * l).sum() / w.sum(), or (w * l).mean() (a mean over the batch's
/// real samples).
#define TRAINC_RT_SAMPLE_WEIGHT_NORMS(X)                                       \
  X(Sum, "sum")                                                                \
  X(Mean, "mean")

/// The part of the training step a call belongs to (the trainer's
/// --profile): the forward (the loss included), the backward, the backward's
/// recomputation (--remat), the optimizer's work (updates, clipping, loss
/// scaling, K-FAC's factors) and the sums over data-parallel ranks. The
/// compiler finds it from the ops' locations (#tc.phase) and their order;
/// the IR has no attribute of it.
#define TRAINC_RT_STEP_PARTS(X)                                                \
  X(Forward, "forward")                                                        \
  X(Backward, "backward")                                                      \
  X(Recompute, "recompute")                                                    \
  X(Update, "update")                                                          \
  X(AllReduce, "all-reduce")

#define TRAINC_RT_ENUMERATOR(e, name) e,
#define TRAINC_RT_NAME(e, name) name,
#define TRAINC_RT_SPELLING(e, name) #e,
#define TRAINC_RT_COUNT(e, name) +1

/// Declares `enum class Type`, `kNum<Type>s` and, for its values, `name(v)`
/// (the name in IR, checkpoints and messages) and `spelling(v)` (the
/// enumerator, as generated code writes it).
#define TRAINC_RT_DECLARE_ENUM(Type, LIST)                                     \
  enum class Type : int32_t { LIST(TRAINC_RT_ENUMERATOR) };                    \
  inline constexpr int kNum##Type##s = 0 LIST(TRAINC_RT_COUNT);                \
  constexpr const char *name(Type value) {                                     \
    const char *const names[] = {LIST(TRAINC_RT_NAME)};                        \
    const int i = static_cast<int>(value);                                     \
    return i >= 0 && i < kNum##Type##s ? names[i] : "?";                       \
  }                                                                            \
  constexpr const char *spelling(Type value) {                                 \
    const char *const spellings[] = {LIST(TRAINC_RT_SPELLING)};                \
    const int i = static_cast<int>(value);                                     \
    return i >= 0 && i < kNum##Type##s ? spellings[i] : "?";                   \
  }

TRAINC_RT_DECLARE_ENUM(Hyper, TRAINC_RT_HYPERS)
TRAINC_RT_DECLARE_ENUM(StateRole, TRAINC_RT_STATE_ROLES)
TRAINC_RT_DECLARE_ENUM(Optimizer, TRAINC_RT_OPTIMIZERS)
TRAINC_RT_DECLARE_ENUM(Precision, TRAINC_RT_PRECISIONS)
TRAINC_RT_DECLARE_ENUM(LossScaling, TRAINC_RT_LOSS_SCALINGS)
TRAINC_RT_DECLARE_ENUM(InputRole, TRAINC_RT_INPUT_ROLES)
TRAINC_RT_DECLARE_ENUM(SampleWeightNorm, TRAINC_RT_SAMPLE_WEIGHT_NORMS)
TRAINC_RT_DECLARE_ENUM(StepPart, TRAINC_RT_STEP_PARTS)

#undef TRAINC_RT_DECLARE_ENUM
#undef TRAINC_RT_COUNT
#undef TRAINC_RT_SPELLING
#undef TRAINC_RT_NAME
#undef TRAINC_RT_ENUMERATOR

/// Whether `optimizer` is one of Adam's (reads betas and eps): Adam, AdamW
/// and LAMB. SGD and LARS read momentum.
constexpr bool isAdam(Optimizer optimizer) {
  return optimizer == Optimizer::Adam || optimizer == Optimizer::AdamW ||
         optimizer == Optimizer::Lamb;
}

/// Whether `optimizer` scales each parameter's step by a ratio of norms
/// (LAMB's trust ratio, LARS's local learning rate).
constexpr bool isLayerAdaptive(Optimizer optimizer) {
  return optimizer == Optimizer::Lamb || optimizer == Optimizer::Lars;
}

/// Whether `optimizer` preconditions gradients with Kronecker factors (and
/// takes SGD's momentum on the result).
constexpr bool isKfac(Optimizer optimizer) { return optimizer == Optimizer::Kfac; }

/// Whether a state of `role` is one of K-FAC's factors or their inverses,
/// square matrices that start as the identity (--report-memory's own kind).
constexpr bool isKfacFactor(StateRole role) {
  return role == StateRole::KfacA || role == StateRole::KfacG ||
         role == StateRole::KfacAInverse || role == StateRole::KfacGInverse;
}

/// Whether a state of `role` is the fp16 loss scaler's (a checkpoint's
/// manifest shows these beside the tensors).
constexpr bool isLossScalerState(StateRole role) {
  return role == StateRole::LossScale || role == StateRole::LossScaleGrowthTracker ||
         role == StateRole::LossScaleSkippedSteps;
}

} // namespace trainc::rt

#endif // TRAINC_RT_ABI_H
