// RUN: trainc-opt %s --trainc-loss="label-smoothing=0.1 class-weights=1,2,1,1 ignore-index=3" | FileCheck %s --check-prefix=ALL
// RUN: trainc-opt %s --trainc-loss="label-smoothing=0.25" | FileCheck %s --check-prefix=SMOOTH
// RUN: trainc-opt %s --trainc-loss | FileCheck %s --check-prefix=PLAIN
// RUN: not trainc-opt %s --trainc-loss="class-weights=1,2" 2>&1 | FileCheck %s --check-prefix=COUNT
// RUN: not trainc-opt %s --trainc-loss="loss=mse label-smoothing=0.1" 2>&1 | FileCheck %s --check-prefix=MSE
// RUN: not trainc-opt %s --trainc-loss="label-smoothing=1.5" 2>&1 | FileCheck %s --check-prefix=RANGE

// CrossEntropyLoss(weight=[1, 2, 1, 1], ignore_index=3, label_smoothing=0.1):
// each position's (1 - 0.1) w[y] nll + 0.1 / 4 sum_c w[c] (-log p_c), the
// mean over w[y] of the counted labels (the ignored label read as class 0,
// then zeroed). A non-default ignore index is recorded on the module for the
// trainer.
// ALL: module attributes {tc.ignore_index = 3 : i64}
// ALL-LABEL: func.func @loss(
// ALL: %[[NLL:.*]] = tc.softmax_cross_entropy %[[LOGITS:.*]], %[[LABEL:[^ ]*]] {ignore_index = 3 : i64, reduction = "none"}
// ALL: %[[IGN:.*]] = tc.constant dense<3> : tensor<i64>
// ALL: %[[IGNORED:.*]] = tc.equal %[[LABEL]], %[[IGN]]
// ALL: %[[TABLE:.*]] = tc.constant dense<[1.000000e+00, 2.000000e+00, 1.000000e+00, 1.000000e+00]> : tensor<4xf32>
// ALL: %[[SAFE:.*]] = tc.where %[[IGNORED]], %{{.*}}, %[[LABEL]]
// ALL: %[[WY:.*]] = tc.gather %[[TABLE]], %[[SAFE]] {axis = 0 : i64}
// ALL: %[[COUNTED:.*]] = tc.mul %[[WY]], %{{.*}}
// ALL: %[[WNLL:.*]] = tc.mul %[[NLL]], %[[COUNTED]]
// ALL: %[[LOGP:.*]] = tc.log_softmax %[[LOGITS]] {axis = 1 : i64}
// ALL: %[[WT:.*]] = tc.reshape %[[TABLE]] {shape = array<i64: 1, 4>}
// ALL: tc.mul %[[LOGP]], %[[WT]]
// ALL: tc.reduce_sum %{{.*}} {axes = array<i64: 1>, keepdims = false}
// ALL: tc.constant dense<0.899999976> : tensor<f32>
// ALL: tc.constant dense<2.500000e-02> : tensor<f32>
//
// SMOOTH-NOT: tc.ignore_index
// SMOOTH-LABEL: func.func @loss(
// SMOOTH-NOT: tc.gather
// SMOOTH: tc.log_softmax
// SMOOTH: tc.constant dense<7.500000e-01> : tensor<f32>
// SMOOTH: tc.constant dense<6.250000e-02> : tensor<f32>
//
//   Without the options the loss is as before: no smoothing, no weights.
// PLAIN-NOT: tc.ignore_index
// PLAIN-LABEL: func.func @loss(
// PLAIN-NOT: tc.log_softmax
// PLAIN-NOT: tc.gather
// PLAIN: return
//
// COUNT: error: --class-weights has 2 weights; the logits 'tensor<2x4xf32>' have 4 classes
// MSE: error: --class-axis, --label-smoothing, --class-weights and --ignore-index apply to --loss=cross-entropy only
// RANGE: error: --label-smoothing must be in [0, 1]
tc.param @w trainable : tensor<4x3xf32>
func.func @forward(%x: tensor<2x3xf32> {tc.input = "x"}, %w: tensor<4x3xf32> {tc.param = @w})
    -> (tensor<2x4xf32> {tc.output = "logits"}) {
  %y = tc.gemm %x, %w {trans_b = true} : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}
