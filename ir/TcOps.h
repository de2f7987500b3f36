//===- TcOps.h - ops of the tc dialect -------------------------*- C++ -*-===//

#ifndef TRAINC_IR_TCOPS_H
#define TRAINC_IR_TCOPS_H

#include "ir/TcDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace trainc::tc {
namespace OpTrait {
/// Marks ops whose result elements depend only on operand elements at the same
/// (broadcast) index; see Tc_Pointwise in TcBase.td.
template <typename ConcreteType>
class Pointwise : public mlir::OpTrait::TraitBase<ConcreteType, Pointwise> {};
/// An optimizer's update of one parameter (operand 0) from its gradient
/// (operand 1); see Tc_ParamUpdate in TcBase.td.
template <typename ConcreteType>
class ParamUpdate : public mlir::OpTrait::TraitBase<ConcreteType, ParamUpdate> {};
/// A GEMM or a convolution; see Tc_Contraction in TcBase.td.
template <typename ConcreteType>
class Contraction : public mlir::OpTrait::TraitBase<ConcreteType, Contraction> {};
/// An op with the runtime's bf16/fp16 kernels; see Tc_LowPrecisionKernel.
template <typename ConcreteType>
class LowPrecisionKernel : public mlir::OpTrait::TraitBase<ConcreteType, LowPrecisionKernel> {};
/// A pointwise op with f(0) = 0; see Tc_KeepsZero.
template <typename ConcreteType>
class KeepsZero : public mlir::OpTrait::TraitBase<ConcreteType, KeepsZero> {};
/// Autocast classes; see Tc_AutocastFollow and Tc_AutocastF32.
template <typename ConcreteType>
class AutocastFollow : public mlir::OpTrait::TraitBase<ConcreteType, AutocastFollow> {};
template <typename ConcreteType>
class AutocastF32 : public mlir::OpTrait::TraitBase<ConcreteType, AutocastF32> {};
template <typename ConcreteType>
class AutocastWidest : public mlir::OpTrait::TraitBase<ConcreteType, AutocastWidest> {};
template <typename ConcreteType>
class AutocastNorm : public mlir::OpTrait::TraitBase<ConcreteType, AutocastNorm> {};
/// Recompute cost classes (TcBase.td).
template <typename ConcreteType>
class DataMovement : public mlir::OpTrait::TraitBase<ConcreteType, DataMovement> {};
template <typename ConcreteType>
class Normalization : public mlir::OpTrait::TraitBase<ConcreteType, Normalization> {};
} // namespace OpTrait

/// Shape function of the broadcasting pointwise ops: all operands share the
/// element type and broadcast to one shape; the result is that shape with the
/// operands' element type, or i1 when `boolResult`.
llvm::LogicalResult inferBroadcastResult(std::optional<mlir::Location> location,
                                         llvm::ArrayRef<mlir::Type> operands,
                                         bool boolResult,
                                         llvm::SmallVectorImpl<mlir::Type> &inferred);

/// Shape function of the reductions (`outType`: their optional out_type).
llvm::LogicalResult inferReduceResult(std::optional<mlir::Location> location,
                                      mlir::Type input,
                                      llvm::ArrayRef<int64_t> axes, bool keepdims,
                                      mlir::TypeAttr outType,
                                      llvm::SmallVectorImpl<mlir::Type> &inferred);

/// Name of the function argument attribute naming a `tc.param` symbol.
inline constexpr llvm::StringLiteral kParamAttrName = "tc.param";
/// Name of the function argument/result attribute holding the ONNX input or
/// output name.
inline constexpr llvm::StringLiteral kInputAttrName = "tc.input";
inline constexpr llvm::StringLiteral kOutputAttrName = "tc.output";
/// Argument attributes of the loss function's label (its name), per-sample
/// weights and, where a batch norm or the mean normalization needs it, the
/// mask of the batch's real rows (unit attributes).
inline constexpr llvm::StringLiteral kLabelAttrName = "tc.label";
inline constexpr llvm::StringLiteral kSampleWeightsAttrName = "tc.sample_weights";
inline constexpr llvm::StringLiteral kSampleMaskAttrName = "tc.sample_mask";
/// Result attribute (unit) of the per-sample losses [N] of @loss and the
/// steps built from it, which the trainer reads back with the loss.
inline constexpr llvm::StringLiteral kSampleLossesAttrName = "tc.sample_losses";
/// Argument attribute (unit) of the training step's dropout key [seed, step],
/// which the trainer fills before each step; the input is named
/// kDropoutKeyInputName.
inline constexpr llvm::StringLiteral kDropoutKeyAttrName = "tc.dropout_key";
inline constexpr llvm::StringLiteral kDropoutKeyInputName = "dropout_key";
/// The training step's ABI (ir/StepAbi.h writes and reads these): an
/// argument's `tc.hyper` (#tc.hyper<...>) is a runtime hyperparameter, its
/// `tc.state` (a name) and `tc.state_role` (#tc.state_role<...>) an
/// optimizer state tensor; a result's `tc.grad` / `tc.update` name the
/// parameter it is the gradient / next value of, `tc.state_update` the
/// state; `tc.optimizer` (#tc.optimizer<...>) on the function is the
/// optimizer.
inline constexpr llvm::StringLiteral kHyperAttrName = "tc.hyper";
inline constexpr llvm::StringLiteral kStateAttrName = "tc.state";
inline constexpr llvm::StringLiteral kStateRoleAttrName = "tc.state_role";
inline constexpr llvm::StringLiteral kGradAttrName = "tc.grad";
inline constexpr llvm::StringLiteral kUpdateAttrName = "tc.update";
inline constexpr llvm::StringLiteral kStateUpdateAttrName = "tc.state_update";
inline constexpr llvm::StringLiteral kOptimizerAttrName = "tc.optimizer";
/// --optimizer=kfac (passes/Kfac.h): autodiff's results of a layer's input
/// rows (tc.kfac_input = the weight, with tc.kfac_layout of the weight,
/// "out_in" ([M, K]), "in_out" ([K, M]) or "conv" ([M, C, kh, kw] as [M, K]),
/// tc.kfac_samples, the batch N, and tc.kfac_bias, the trained bias) and
/// output-gradient rows (tc.kfac_output_grad = the weight), which the
/// optimizer phase consumes; and @train_step's tc.kfac_plain, the trained
/// weights of Gemm, MatMul and Conv layers that autodiff or the optimizer
/// phase left to plain SGD, each with the reason (an array of strings).
inline constexpr llvm::StringLiteral kKfacInputAttrName = "tc.kfac_input";
inline constexpr llvm::StringLiteral kKfacOutputGradAttrName = "tc.kfac_output_grad";
inline constexpr llvm::StringLiteral kKfacLayoutAttrName = "tc.kfac_layout";
inline constexpr llvm::StringLiteral kKfacSamplesAttrName = "tc.kfac_samples";
inline constexpr llvm::StringLiteral kKfacBiasAttrName = "tc.kfac_bias";
inline constexpr llvm::StringLiteral kKfacPlainAttrName = "tc.kfac_plain";
/// The names the per-sample weights and mask inputs have in the program's
/// tables.
inline constexpr llvm::StringLiteral kSampleWeightsInputName = "sample_weights";
inline constexpr llvm::StringLiteral kSampleMaskInputName = "sample_mask";
/// Argument attribute (unit) of a parameter whose only use trainc-fold-bias-bn
/// removed: autodiff gives it the gradient 0 (its exact value).
inline constexpr llvm::StringLiteral kFoldedBiasAttrName = "tc.folded_bias";
/// Module attribute: the mixed precision of @loss (#tc.precision<bf16>,
/// #tc.precision<fp16>); absent for fp32.
inline constexpr llvm::StringLiteral kPrecisionAttrName = "tc.precision";
/// Module attribute: the loss scaling of an fp16 training step,
/// #tc.loss_scaling<dynamic> (GradScaler's) or a fixed scale (an f32
/// attribute); absent without loss scaling.
/// The mixed-precision phase sets it, autodiff seeds the backward with the
/// scale and the optimizer phase unscales, skips and updates the scale.
inline constexpr llvm::StringLiteral kLossScaleAttrName = "tc.loss_scale";
/// Argument attribute of a `tc.state` scalar that does not start at 0: its
/// initial value (a float), e.g. the dynamic loss scale's 65536.
inline constexpr llvm::StringLiteral kStateInitAttrName = "tc.state_init";

/// What later phases record, for codegen, the trainer's tables and reports.
/// Module: the batch size the import fixed (i64); --pad-to's multiple (i64)
/// and what it padded (an array of lines).
inline constexpr llvm::StringLiteral kBatchSizeAttrName = "tc.batch_size";
inline constexpr llvm::StringLiteral kPadToAttrName = "tc.pad_to";
inline constexpr llvm::StringLiteral kPaddingAttrName = "tc.padding";
/// @train_step: the bytes the pad phase's copies write per step (i64), the
/// compiled --clip-grad-norm (f64), --grad-accum's micro-batches (i64), the
/// data-parallel buckets (i64) and remat's record (a dictionary).
inline constexpr llvm::StringLiteral kPaddingCopyBytesAttrName = "tc.padding_copy_bytes";
inline constexpr llvm::StringLiteral kClipGradNormAttrName = "tc.clip_grad_norm";
/// On the module: the label --loss=cross-entropy ignores (--ignore-index).
inline constexpr llvm::StringLiteral kIgnoreIndexAttrName = "tc.ignore_index";
/// On the module: "mean" where --sample-weight-norm=mean (absent: sum).
inline constexpr llvm::StringLiteral kSampleWeightNormAttrName = "tc.sample_weight_norm";
inline constexpr llvm::StringLiteral kGradAccumAttrName = "tc.grad_accum";
inline constexpr llvm::StringLiteral kDataParallelAttrName = "tc.data_parallel";
inline constexpr llvm::StringLiteral kRematAttrName = "tc.remat";
/// An op remat cloned (i64: how many ops its cluster had).
inline constexpr llvm::StringLiteral kRecomputedAttrName = "tc.recomputed";
/// The memory plan: an op's result offsets in the arena (i64 array), a
/// function's arena bytes (i64).
inline constexpr llvm::StringLiteral kOffsetsAttrName = "tc.offsets";
inline constexpr llvm::StringLiteral kArenaBytesAttrName = "tc.arena_bytes";
/// A tc.concat whose operands the plan put where it puts them: it copies
/// nothing (unit).
inline constexpr llvm::StringLiteral kInPlaceAttrName = "tc.in_place";
/// Pipeline parallelism: on the module, the number of stages (i64); on a
/// stage's module, its index (i64); on a stage's function (the pipeline
/// phase's @stageK_loss), its estimated step seconds (f64, OpCost.h) and the
/// bytes it sends forward per micro-batch (i64).
inline constexpr llvm::StringLiteral kPipelineStagesAttrName = "tc.pipeline_stages";
inline constexpr llvm::StringLiteral kPipelineStageAttrName = "tc.pipeline_stage";
inline constexpr llvm::StringLiteral kStageCostAttrName = "tc.stage_cost";
inline constexpr llvm::StringLiteral kStageSendBytesAttrName = "tc.stage_send_bytes";
/// Module: the ONNX model's default-domain opset (i64).
inline constexpr llvm::StringLiteral kOpsetAttrName = "tc.opset";
/// Module: the ONNX model's producer_name, which the fingerprint leaves out.
inline constexpr llvm::StringLiteral kProducerAttrName = "tc.producer";

} // namespace trainc::tc

#include "ir/TcInterfaces.h.inc"

#define GET_OP_CLASSES
#include "ir/TcOps.h.inc"

namespace trainc::tc {

/// The operand that `result` overwrites with its next value (an optimizer
/// update's parameter and state, an accumulated gradient, a training batch
/// norm's running statistic), or null: TiedOpInterface::getReplacedOperand.
/// The planner writes such a result in place when nothing reads the old
/// value afterwards.
mlir::Value replacedOperand(mlir::OpResult result);
/// The operand whose buffer `result` is (TiedOpInterface::getViewSource), or
/// null.
mlir::Value viewSource(mlir::OpResult result);
/// Whether every result of `op` is a view: the op computes nothing.
bool isView(mlir::Operation *op);

/// Gradient accumulation fused into the GEMM (as Megatron's gradient
/// accumulation fusion): a tc.matmul, or a tc.gemm without C, whose only
/// reader is the tc.accumulate_grad it computes the gradient of, whose
/// accumulator (an argument) nothing else reads. That op, or null. The
/// memory plan then gives the GEMM no buffer when the accumulation is in
/// place, and the GEMM writes the accumulator (alpha = weight, beta = keep).
AccumulateGradOp accumulatingGemmUser(mlir::Operation *op);

/// Whether an op may be part of a tc.fused group: pointwise ops, expand, and
/// training-mode dropout (its mask comes from the element index).
bool isFusible(mlir::Operation *op);
/// Whether an op may head a tc.fused group as its GEMM, whose output the
/// group's pointwise ops then finish (the GEMM epilogue): an f32 tc.matmul,
/// or an f32 tc.gemm with alpha 1 and no C or, with beta 1, a C that is a
/// bias row or the whole result (the library call adds it).
bool isEpilogueHead(mlir::Operation *op);
/// Whether an op may head a tc.fused group as its normalization: an f32
/// tc.batch_norm (in inference mode only when nothing reads its statistics
/// results), tc.layer_norm, tc.batch_norm_backward, tc.layer_norm_backward,
/// tc.softmax or tc.log_softmax. The runtime's kernel runs the group's pointwise
/// ops before it (the prologue, which computes its streamed operand) and
/// after it (the epilogue, which finishes its result) on each plane or row
/// it reads or writes, while that is in cache.
bool isNormHead(mlir::Operation *op);
/// The operand a normalization head reads plane by plane or row by row,
/// which a group's prologue may compute: the input of a forward norm or a
/// softmax, the result gradient of a backward norm.
mlir::Value streamedOperand(mlir::Operation *normHead);
/// The library op heading a tc.fused group (a GEMM or a normalization), or
/// null.
mlir::Operation *groupHead(mlir::Block &block);
/// Whether an op is a tc.constant with one repeated value (code generation
/// writes it as a literal).
bool isSplatConstant(mlir::Operation *op);

} // namespace trainc::tc

#endif // TRAINC_IR_TCOPS_H
