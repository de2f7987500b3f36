// RUN: trainc-opt %s --split-input-file --trainc-loss | FileCheck %s --check-prefix=CE
// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=mse" | FileCheck %s --check-prefix=MSE
// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=bce label=target" | FileCheck %s --check-prefix=BCE
// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=mse sample-weight-norm=mean" | FileCheck %s --check-prefix=MEAN

// Logits [2, 10]: per-sample cross entropy (the second result, before the
// weights), weighted by the sample weights, divided by the weighted count of
// labels that are not -100 (ignored, as by PyTorch's CrossEntropyLoss()).
// No batch norm and the sum normalization: no sample mask. @forward stays as
// it was.
// CE-LABEL: func.func @forward(%arg0: tensor<2x4xf32> {tc.input = "x"}, %arg1: tensor<10x4xf32> {tc.param = @w}) -> (tensor<2x10xf32> {tc.output = "logits"})
// CE-NOT: softmax_cross_entropy
// CE-LABEL: func.func @loss(
// CE-SAME: %arg0: tensor<2x4xf32> {tc.input = "x"}, %[[LABEL:.*]]: tensor<2xi64> {tc.label = "label"}, %[[W:.*]]: tensor<2xf32> {tc.sample_weights}, %arg3: tensor<10x4xf32> {tc.param = @w}) -> (tensor<f32> {tc.output = "loss"}, tensor<2xf32> {tc.output = "sample_losses", tc.sample_losses}, tensor<2x10xf32> {tc.output = "logits"})
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
// CE: return %[[LOSS]], %[[CE]], %[[LOGITS]] : tensor<f32>, tensor<2xf32>, tensor<2x10xf32>
//
// MSE-LABEL: func.func @loss(
// MSE-SAME: %arg0: tensor<2x4xf32> {tc.input = "x"}, %[[T:.*]]: tensor<2x10xf32> {tc.label = "label"}, %[[W:.*]]: tensor<2xf32> {tc.sample_weights}
// MSE: %[[D:.*]] = tc.sub %{{.*}}, %[[T]]
// MSE: %[[SQ:.*]] = tc.mul %[[D]], %[[D]]
//   Ten squared errors per sample: each sample's loss is their mean, and the
//   divisor the weights' sum.
// MSE: %[[ROW:.*]] = tc.reduce_sum %[[SQ]] {axes = array<i64: 1>, keepdims = false}
// MSE: %[[TENTH:.*]] = tc.constant dense<1.000000e-01> : tensor<f32>
// MSE: %[[S:.*]] = tc.mul %[[ROW]], %[[TENTH]]
// MSE: %[[WS:.*]] = tc.mul %[[S]], %[[W]]
// MSE: %[[NUM:.*]] = tc.reduce_sum %[[WS]]
// MSE: %[[DEN:.*]] = tc.reduce_sum %[[W]]
// MSE: %[[L:.*]] = tc.div %[[NUM]], %[[DEN]]
// MSE: return %[[L]], %[[S]], %{{.*}} : tensor<f32>, tensor<2xf32>, tensor<2x10xf32>
//
// --sample-weight-norm=mean, (w * l).mean(): the real rows (the mask after
// the weights) are the divisor.
// MEAN-LABEL: func.func @loss(
// MEAN-SAME: %[[W:[^:]*]]: tensor<2xf32> {tc.sample_weights}, %[[MASK:[^:]*]]: tensor<2xf32> {tc.sample_mask}
// MEAN: %[[S:.*]] = tc.mul %{{.*}}, %{{.*}} : (tensor<2xf32>, tensor<f32>)
// MEAN: %[[WS:.*]] = tc.mul %[[S]], %[[W]]
// MEAN: %[[NUM:.*]] = tc.reduce_sum %[[WS]]
// MEAN: %[[DEN:.*]] = tc.reduce_sum %[[MASK]]
// MEAN: tc.div %[[NUM]], %[[DEN]]
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
// each sample's loss is the mean of its 3 positions.
// CE-LABEL: func.func @loss(
// CE-SAME: %arg0: tensor<2x5x3xf32> {tc.input = "x"}, %{{.*}}: tensor<2x3xi64> {tc.label = "label"}
// CE: %[[NLL:.*]] = tc.softmax_cross_entropy {{.*}} : (tensor<2x5x3xf32>, tensor<2x3xi64>) -> tensor<2x3xf32>
// CE: %[[ROW:.*]] = tc.reduce_sum %[[NLL]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
// CE: %[[THIRD:.*]] = tc.constant dense<0.333333343> : tensor<f32>
// CE: %[[S:.*]] = tc.mul %[[ROW]], %[[THIRD]]
// CE: return %{{.*}}, %[[S]], %{{.*}} : tensor<f32>, tensor<2xf32>, tensor<2x5x3xf32>
func.func @forward(%x: tensor<2x5x3xf32> {tc.input = "x"}) -> (tensor<2x5x3xf32> {tc.output = "scores"}) {
  %s = tc.relu %x : tensor<2x5x3xf32>
  return %s : tensor<2x5x3xf32>
}
