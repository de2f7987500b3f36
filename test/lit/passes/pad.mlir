// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-pad --canonicalize --cse | FileCheck %s
// RUN: not trainc-opt %s --split-input-file --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-pad="multiple=1" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: the pad phase needs a multiple of at least 2, got 1

// Linear(20 -> 84) -> ReLU -> Linear(84 -> 10), trained: the weights and
// biases are padded once (K 20 -> 24, N 84 -> 88, 10 -> 16) and shared by
// the forward and backward products; the hidden activation stays 4x88
// from the first product to the second, forward (relu) and backward (the
// relu gradient, the bias gradient's sum); only the logits, the incoming
// loss gradient and the parameter gradients are cropped or padded.
// The record for --info: each ONNX node's padded dimensions, forward only.
// CHECK: module attributes {tc.pad_to = 8 : i64, tc.padding = ["'fc1': contraction K 20 -> 24", "'fc1': output columns N 84 -> 88", "'fc2': contraction K 84 -> 88", "'fc2': output columns N 10 -> 16"]
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: tc.padding_copy_bytes =
// CHECK: %[[X:.*]] = tc.pad %arg0 {pads = array<i64: 0, 0, 0, 4>} : (tensor<4x20xf32>) -> tensor<4x24xf32>
// CHECK-NEXT: %[[W1:.*]] = tc.pad %arg3 {pads = array<i64: 0, 0, 4, 4>} : (tensor<84x20xf32>) -> tensor<88x24xf32>
// CHECK-NEXT: %[[B1:.*]] = tc.pad %arg4 {pads = array<i64: 0, 4>} : (tensor<84xf32>) -> tensor<88xf32>
// CHECK-NEXT: %[[H:.*]] = tc.gemm %[[X]], %[[W1]], %[[B1]] {trans_b = true} : (tensor<4x24xf32>, tensor<88x24xf32>, tensor<88xf32>) -> tensor<4x88xf32>
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[H]] : tensor<4x88xf32>
// CHECK-NEXT: %[[W2:.*]] = tc.pad %arg5 {pads = array<i64: 0, 0, 6, 4>} : (tensor<10x84xf32>) -> tensor<16x88xf32>
// CHECK-NEXT: %[[B2:.*]] = tc.pad %arg6 {pads = array<i64: 0, 6>} : (tensor<10xf32>) -> tensor<16xf32>
// CHECK-NEXT: %[[Y:.*]] = tc.gemm %[[R]], %[[W2]], %[[B2]] {trans_b = true} : (tensor<4x88xf32>, tensor<16x88xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[LOGITS:.*]] = tc.slice %[[Y]] {ends = array<i64: 4, 10>, {{.*}}} : (tensor<4x16xf32>) -> tensor<4x10xf32>
// CHECK-NEXT: tc.softmax_cross_entropy %[[LOGITS]]
// CHECK: %[[DY:.*]] = tc.pad %{{.*}} {pads = array<i64: 0, 0, 0, 6>} : (tensor<4x10xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: %[[DR:.*]] = tc.gemm %[[DY]], %[[W2]] : (tensor<4x16xf32>, tensor<16x88xf32>) -> tensor<4x88xf32>
// CHECK-NEXT: %[[DW2:.*]] = tc.gemm %[[DY]], %[[R]] {trans_a = true} : (tensor<4x16xf32>, tensor<4x88xf32>) -> tensor<16x88xf32>
// CHECK-NEXT: %[[DW2C:.*]] = tc.slice %[[DW2]] {ends = array<i64: 10, 84>, {{.*}}} : (tensor<16x88xf32>) -> tensor<10x84xf32>
// CHECK-NOT: tc.slice
// CHECK-NOT: tc.pad
// CHECK: %[[DH:.*]] = tc.where %{{.*}}, %{{.*}}, %[[DR]] : (tensor<4x88xi1>, tensor<f32>, tensor<4x88xf32>) -> tensor<4x88xf32>
// CHECK-NEXT: %[[DW1:.*]] = tc.gemm %[[DH]], %[[X]] {trans_a = true} : (tensor<4x88xf32>, tensor<4x24xf32>) -> tensor<88x24xf32>
// CHECK-NEXT: %[[DW1C:.*]] = tc.slice %[[DW1]] {ends = array<i64: 84, 20>, {{.*}}} : (tensor<88x24xf32>) -> tensor<84x20xf32>
// CHECK-NEXT: %[[DB1:.*]] = tc.reduce_sum %[[DH]] {axes = array<i64: 0>, keepdims = false} : (tensor<4x88xf32>) -> tensor<88xf32>
// CHECK-NEXT: %[[DB1C:.*]] = tc.slice %[[DB1]] {ends = array<i64: 84>, {{.*}}} : (tensor<88xf32>) -> tensor<84xf32>
// CHECK-NEXT: return %{{.*}}, %[[DW1C]], %[[DB1C]], %[[DW2C]], %{{.*}} :
tc.param @w1 trainable : tensor<84x20xf32>
tc.param @b1 trainable : tensor<84xf32>
tc.param @w2 trainable : tensor<10x84xf32>
tc.param @b2 trainable : tensor<10xf32>
func.func @forward(%x: tensor<4x20xf32> {tc.input = "x"}, %w1: tensor<84x20xf32> {tc.param = @w1},
                   %b1: tensor<84xf32> {tc.param = @b1}, %w2: tensor<10x84xf32> {tc.param = @w2},
                   %b2: tensor<10xf32> {tc.param = @b2})
    -> (tensor<4x10xf32> {tc.output = "y"}) {
  %h = tc.gemm %x, %w1, %b1 {trans_b = true} : (tensor<4x20xf32>, tensor<84x20xf32>, tensor<84xf32>) -> tensor<4x84xf32> loc("fc1")
  %r = tc.relu %h : tensor<4x84xf32>
  %y = tc.gemm %r, %w2, %b2 {trans_b = true} : (tensor<4x84xf32>, tensor<10x84xf32>, tensor<10xf32>) -> tensor<4x10xf32> loc("fc2")
  return %y : tensor<4x10xf32>
}
