// RUN: trainc-opt %s --split-input-file --trainc-loss | FileCheck %s --check-prefix=CE
// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=mse" | FileCheck %s --check-prefix=MSE
// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=bce label=target" | FileCheck %s --check-prefix=BCE

// Logits [2, 10]: per-sample cross entropy, weighted by the sample weights,
// divided by the weighted count of labels that are not -100 (ignored, as by
// PyTorch's CrossEntropyLoss()). @forward stays as it was.
// CE-LABEL: func.func @forward(%arg0: tensor<2x4xf32> {tc.input = "x"}, %arg1: tensor<10x4xf32> {tc.param = @w}) -> (tensor<2x10xf32> {tc.output = "logits"})
// CE-NOT: softmax_cross_entropy
// CE-LABEL: func.func @loss(
// CE-SAME: %arg0: tensor<2x4xf32> {tc.input = "x"}, %[[LABEL:.*]]: tensor<2xi64> {tc.label = "label"}, %[[W:.*]]: tensor<2xf32> {tc.sample_weights}, %arg3: tensor<10x4xf32> {tc.param = @w}) -> (tensor<f32> {tc.output = "loss"}, tensor<2x10xf32> {tc.output = "logits"})
// CE: %[[LOGITS:.*]] = tc.gemm %arg0, %arg3
// CE: %[[CE:.*]] = tc.softmax_cross_entropy %[[LOGITS]], %[[LABEL]] {ignore_index = -100 : i64, reduction = "none"} : (tensor<2x10xf32>, tensor<2xi64>) -> tensor<2xf32>
// CE: %[[IGNORE:.*]] = tc.constant dense<-100> : tensor<i64>
// CE: %[[IGNORED:.*]] = tc.equal %[[LABEL]], %[[IGNORE]]
// CE: %[[KEPT:.*]] = tc.not %[[IGNORED]]
// CE: %[[COUNTED:.*]] = tc.cast %[[KEPT]] {to = f32}
// CE: %[[WCE:.*]] = tc.mul %[[CE]], %[[W]]
// CE: %[[SUM:.*]] = tc.reduce_sum %[[WCE]] {axes = array<i64>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
// CE: %[[WCOUNT:.*]] = tc.mul %[[COUNTED]], %[[W]]
// CE: %[[COUNT:.*]] = tc.reduce_sum %[[WCOUNT]] {axes = array<i64>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
// CE: %[[LOSS:.*]] = tc.div %[[SUM]], %[[COUNT]]
// CE: return %[[LOSS]], %[[LOGITS]] : tensor<f32>, tensor<2x10xf32>
//
// MSE-LABEL: func.func @loss(
// MSE-SAME: %arg0: tensor<2x4xf32> {tc.input = "x"}, %[[T:.*]]: tensor<2x10xf32> {tc.label = "label"}, %[[W:.*]]: tensor<2xf32> {tc.sample_weights}
// MSE: %[[D:.*]] = tc.sub %{{.*}}, %[[T]]
// MSE: %[[SQ:.*]] = tc.mul %[[D]], %[[D]]
//   Ten squared errors per sample: weights become [2, 1], the divisor sum(w) * 10.
// MSE: %[[WR:.*]] = tc.reshape %[[W]] {shape = array<i64: 2, 1>}
// MSE: tc.mul %[[SQ]], %[[WR]]
// MSE: %[[TEN:.*]] = tc.constant dense<1.000000e+01> : tensor<f32>
// MSE: tc.mul %{{.*}}, %[[TEN]]
//
// BCE-LABEL: func.func @loss(
// BCE-SAME: %arg0: tensor<2x4xf32> {tc.input = "x"}, %{{.*}}: tensor<2x10xf32> {tc.label = "target"}
// BCE: tc.relu
// BCE: tc.abs
// BCE: tc.neg
// BCE: tc.exp
// BCE: tc.log
tc.param @w trainable : tensor<10x4xf32>
func.func @forward(%x: tensor<2x4xf32> {tc.input = "x"}, %w: tensor<10x4xf32> {tc.param = @w})
    -> (tensor<2x10xf32> {tc.output = "logits"}) {
  %y = tc.gemm %x, %w {trans_b = true} : (tensor<2x4xf32>, tensor<10x4xf32>) -> tensor<2x10xf32>
  return %y : tensor<2x10xf32>
}

// -----

// Per-position cross entropy over [N, C, d] = [2, 5, 3]: labels [2, 3], and
// each sample counts 3 positions.
// CE-LABEL: func.func @loss(
// CE-SAME: %arg0: tensor<2x5x3xf32> {tc.input = "x"}, %{{.*}}: tensor<2x3xi64> {tc.label = "label"}
// CE: tc.softmax_cross_entropy {{.*}} : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
// CE: tc.reshape %{{.*}} {shape = array<i64: 2, 1>}
// CE: tc.constant dense<3.000000e+00> : tensor<f32>
func.func @forward(%x: tensor<2x5x3xf32> {tc.input = "x"}) -> (tensor<2x5x3xf32> {tc.output = "scores"}) {
  %s = tc.relu %x : tensor<2x5x3xf32>
  return %s : tensor<2x5x3xf32>
}
