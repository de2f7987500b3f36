// RUN: trainc-opt %s --split-input-file --trainc-loss="class-axis=-1" | FileCheck %s --check-prefix=LAST
// RUN: trainc-opt %s --split-input-file --trainc-loss="class-axis=-1 label-smoothing=0.1 class-weights=1,2,1,1" | FileCheck %s --check-prefix=OPTIONS
// RUN: trainc-opt %s --split-input-file --trainc-loss="class-axis=1" | FileCheck %s --check-prefix=AXIS1
// RUN: trainc-opt %s --split-input-file --trainc-loss="class-axis=2" | FileCheck %s --check-prefix=MIDDLE

// Classes on the last axis of [N, T, C] logits (a language model's): the
// cross entropy takes them as [N * T, C] rows through a reshape, which
// moves no data, and its per-position losses go back to [N, T]; no
// transpose. With label smoothing and class weights the same rows feed the
// log-softmax (over axis 1 of the rows) and the weight gather.
// LAST-LABEL: func.func @loss(
// LAST-NOT: tc.transpose
// LAST: %[[ROWS:.*]] = tc.reshape %{{.*}} {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// LAST: %[[LABELS:.*]] = tc.reshape %{{.*}} {shape = array<i64: 6>} : (tensor<2x3xi64>) -> tensor<6xi64>
// LAST: %[[NLL:.*]] = tc.softmax_cross_entropy %[[ROWS]], %[[LABELS]] {{.*}} -> tensor<6xf32>
// LAST: tc.reshape %[[NLL]] {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
// LAST-NOT: tc.transpose
// LAST: return
//
// OPTIONS-LABEL: func.func @loss(
// OPTIONS-NOT: tc.transpose
// OPTIONS: %[[ROWS:.*]] = tc.reshape %{{.*}} {shape = array<i64: 6, 4>}
// OPTIONS: tc.gather
// OPTIONS: tc.log_softmax %[[ROWS]] {axis = 1 : i64} : tensor<6x4xf32>
// OPTIONS-NOT: tc.transpose
// OPTIONS: return
//
//   --class-axis=1 of the same logits (3 classes, 4 positions): already
//   [N, C, T], no reshape and no transpose.
// AXIS1-LABEL: func.func @loss(
// AXIS1-NOT: tc.transpose
// AXIS1-NOT: tc.reshape
// AXIS1: tc.softmax_cross_entropy %{{.*}}, %{{.*}} {{.*}} : (tensor<2x3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
tc.param @w trainable : tensor<4x5xf32>
func.func @forward(%x: tensor<2x3x5xf32> {tc.input = "x"}, %w: tensor<4x5xf32> {tc.param = @w})
    -> (tensor<2x3x4xf32> {tc.output = "logits"}) {
  %y = tc.matmul %x, %w {trans_b = true} : (tensor<2x3x5xf32>, tensor<4x5xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}

// MIDDLE-LABEL: func.func @loss(
// MIDDLE-NOT: tc.transpose
// MIDDLE: tc.reshape %{{.*}} {shape = array<i64: 6, 4>}

// -----

// A middle class axis (2 of [N, T, C, U]) still moves the classes to axis
// 1: a transpose, no reshape.
// MIDDLE-LABEL: func.func @loss(
// MIDDLE-NOT: tc.reshape
// MIDDLE: %[[T:.*]] = tc.transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x5x4xf32>) -> tensor<2x5x3x4xf32>
// MIDDLE: tc.softmax_cross_entropy %[[T]]
tc.param @s trainable : tensor<4xf32>
func.func @forward(%x: tensor<2x3x5x4xf32> {tc.input = "x"}, %s: tensor<4xf32> {tc.param = @s})
    -> (tensor<2x3x5x4xf32> {tc.output = "logits"}) {
  %y = tc.mul %x, %s : (tensor<2x3x5x4xf32>, tensor<4xf32>) -> tensor<2x3x5x4xf32>
  return %y : tensor<2x3x5x4xf32>
}
