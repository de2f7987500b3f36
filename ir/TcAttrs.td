//===- TcAttrs.td - attributes of the tc dialect -----------*- tablegen -*-===//
//
// Attributes that only the compiler makes. A model's strings (node, input
// and initializer names) become NameLocs and string attributes, never these,
// so what they mark cannot be forged by naming a node.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCATTRS_TD
#define TRAINC_IR_TCATTRS_TD

include "TcBase.td"
include "mlir/IR/EnumAttr.td"

def Tc_StepPhase : I32EnumAttr<"StepPhase",
    "the part of the training step that a phase derived an op for", [
  I32EnumAttrCase<"Backward", 0, "backward">,
  I32EnumAttrCase<"Recompute", 1, "recompute">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}

// The metadata of the fused location that autodiff (backward) and remat
// (recompute) put under the NameLoc of every op they create:
//   loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
// Liveness, remat and padding tell the backward from the forward by it.
def Tc_StepPhaseAttr : EnumAttr<Tc_Dialect, Tc_StepPhase, "phase"> {
  let summary = "marks a location as the backward's or remat's";
  let assemblyFormat = "`<` $value `>`";
}

//===----------------------------------------------------------------------===//
// The training step's ABI (runtime/include/trainc_rt/abi.h mirrors each enum,
// value for value and name for name; test/unit/AbiTest.cpp checks them).
//===----------------------------------------------------------------------===//

// `tc.hyper` on a @train_step argument: #tc.hyper<lr>.
def Tc_Hyper : I32EnumAttr<"Hyper", "a hyperparameter the trainer sets before each step", [
  I32EnumAttrCase<"Lr", 0, "lr">,
  I32EnumAttrCase<"Momentum", 1, "momentum">,
  I32EnumAttrCase<"WeightDecay", 2, "weight_decay">,
  I32EnumAttrCase<"Beta1", 3, "beta1">,
  I32EnumAttrCase<"Beta2", 4, "beta2">,
  I32EnumAttrCase<"Eps", 5, "eps">,
  I32EnumAttrCase<"MaxGradNorm", 6, "max_grad_norm">,
  I32EnumAttrCase<"ScaleGrowthInterval", 7, "scale_growth_interval">,
  I32EnumAttrCase<"GradAccumWeight", 8, "grad_accum.weight">,
  I32EnumAttrCase<"GradAccumKeep", 9, "grad_accum.keep">,
  I32EnumAttrCase<"DataParallelScale", 10, "data_parallel.scale">,
  I32EnumAttrCase<"OneMinusBeta1", 11, "one_minus_beta1">,
  I32EnumAttrCase<"OneMinusBeta2", 12, "one_minus_beta2">,
  I32EnumAttrCase<"TrustCoefficient", 13, "trust_coefficient">,
  I32EnumAttrCase<"KfacDamping", 14, "kfac.damping">,
  I32EnumAttrCase<"KfacStatDecay", 15, "kfac.stat_decay">,
  I32EnumAttrCase<"KfacKlClip", 16, "kfac.kl_clip">,
  I32EnumAttrCase<"KfacInvert", 17, "kfac.invert">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}
def Tc_HyperAttr : EnumAttr<Tc_Dialect, Tc_Hyper, "hyper"> {
  let summary = "the runtime hyperparameter a step argument is";
  let assemblyFormat = "`<` $value `>`";
}

// `tc.state_role` beside `tc.state` (the state's name) on a @train_step
// argument: #tc.state_role<exp_avg>.
def Tc_StateRole : I32EnumAttr<"StateRole", "what an optimizer state tensor holds", [
  I32EnumAttrCase<"Momentum", 0, "momentum">,
  I32EnumAttrCase<"ExpAvg", 1, "exp_avg">,
  I32EnumAttrCase<"ExpAvgSq", 2, "exp_avg_sq">,
  I32EnumAttrCase<"AdamStep", 3, "adam.step">,
  I32EnumAttrCase<"GradAccum", 4, "grad_accum">,
  I32EnumAttrCase<"LossScale", 5, "loss_scale">,
  I32EnumAttrCase<"LossScaleGrowthTracker", 6, "loss_scale.growth_tracker">,
  I32EnumAttrCase<"LossScaleSkippedSteps", 7, "loss_scale.skipped_steps">,
  I32EnumAttrCase<"GradNorm", 8, "grad_norm">,
  I32EnumAttrCase<"KfacA", 9, "kfac.a">,
  I32EnumAttrCase<"KfacG", 10, "kfac.g">,
  I32EnumAttrCase<"KfacAInverse", 11, "kfac.a_inverse">,
  I32EnumAttrCase<"KfacGInverse", 12, "kfac.g_inverse">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}
def Tc_StateRoleAttr : EnumAttr<Tc_Dialect, Tc_StateRole, "state_role"> {
  let summary = "the role of an optimizer state argument";
  let assemblyFormat = "`<` $value `>`";
}

// `tc.optimizer` on @train_step once the optimizer phase ran.
def Tc_Optimizer : I32EnumAttr<"Optimizer", "the optimizer of a training step", [
  I32EnumAttrCase<"Sgd", 0, "sgd">,
  I32EnumAttrCase<"Adam", 1, "adam">,
  I32EnumAttrCase<"AdamW", 2, "adamw">,
  I32EnumAttrCase<"Lamb", 3, "lamb">,
  I32EnumAttrCase<"Lars", 4, "lars">,
  I32EnumAttrCase<"Kfac", 5, "kfac">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}
def Tc_OptimizerAttr : EnumAttr<Tc_Dialect, Tc_Optimizer, "optimizer"> {
  let summary = "the optimizer @train_step updates with";
  let assemblyFormat = "`<` $value `>`";
}

// `tc.precision` on the module after the mixed-precision phase.
def Tc_Precision : I32EnumAttr<"Precision", "the mixed precision of a training step", [
  I32EnumAttrCase<"Fp32", 0, "fp32">,
  I32EnumAttrCase<"Bf16", 1, "bf16">,
  I32EnumAttrCase<"Fp16", 2, "fp16">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}
def Tc_PrecisionAttr : EnumAttr<Tc_Dialect, Tc_Precision, "precision"> {
  let summary = "the mixed precision of @loss";
  let assemblyFormat = "`<` $value `>`";
}

// `tc.loss_scale` on the module under dynamic fp16 loss scaling (a fixed
// scale is an f32 attribute instead).
def Tc_LossScaling : I32EnumAttr<"LossScaling", "the loss scaling of a training step", [
  I32EnumAttrCase<"None", 0, "none">,
  I32EnumAttrCase<"Fixed", 1, "fixed">,
  I32EnumAttrCase<"Dynamic", 2, "dynamic">
]> {
  let cppNamespace = "::trainc::tc";
  let genSpecializedAttr = 0;
}
def Tc_LossScalingAttr : EnumAttr<Tc_Dialect, Tc_LossScaling, "loss_scaling"> {
  let summary = "the loss scaling of @train_step";
  let assemblyFormat = "`<` $value `>`";
}

#endif // TRAINC_IR_TCATTRS_TD
