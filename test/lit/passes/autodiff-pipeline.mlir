// RUN: trainc-opt %s --trainc-autodiff | FileCheck %s

// A middle pipeline stage: it receives relu1 (float) and ids (integer) from
// stage 0, computes fc2, and sends relu1 on (a skip connection), fc2 and
// ids to stage 2. Its backward starts from the gradients of the float
// tensors it sent, received back from stage 2 (none for ids), and ends by
// sending the gradient of each float tensor it received to stage 0: relu1's
// is the sum of what came back for it and what fc2 adds. The loss is the
// last stage's (the constant 0 here).
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<8x8xf32> {tc.grad = @w2, tc.output = "grad.w2"})
// CHECK: %[[IN:.*]] = tc.recv from stage 0 slot 0 {tensor = "relu1"}
// CHECK: tc.send %{{.*}} to stage 2 slot 2 {tensor = "ids"} : tensor<4xi64>
// CHECK: %[[G0:.*]] = tc.recv from stage 2 slot 0 {gradient, tensor = "relu1"} : tensor<4x8xf32>
// CHECK-NEXT: %[[G1:.*]] = tc.recv from stage 2 slot 1 {gradient, tensor = "fc2"} : tensor<4x8xf32>
// CHECK-NOT: slot 2 {gradient
// CHECK: %[[DX:.*]] = tc.gemm %[[G1]], %arg0
// CHECK: %[[DW:.*]] = tc.gemm %[[G1]], %[[IN]] {trans_a = true}
// CHECK: %[[SUM:.*]] = tc.add %[[G0]], %[[DX]]
// CHECK-NEXT: tc.send %[[SUM]] to stage 0 slot 0 {gradient, tensor = "relu1"} : tensor<4x8xf32>
// CHECK-NOT: tc.send
// CHECK: return %{{.*}}, %[[DW]]

module attributes {tc.pipeline_stage = 1 : i64} {
  tc.param @w2 trainable : tensor<8x8xf32> = dense<0.2> : tensor<8x8xf32>
  func.func @loss(%w2: tensor<8x8xf32> {tc.param = @w2}) -> (tensor<f32> {tc.output = "loss"}) {
    %in = tc.recv from stage 0 slot 0 {tensor = "relu1"} : tensor<4x8xf32>
    %ids = tc.recv from stage 0 slot 1 {tensor = "ids"} : tensor<4xi64>
    %h2 = tc.gemm %in, %w2 {trans_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc2")
    tc.send %in to stage 2 slot 0 {tensor = "relu1"} : tensor<4x8xf32>
    tc.send %h2 to stage 2 slot 1 {tensor = "fc2"} : tensor<4x8xf32>
    tc.send %ids to stage 2 slot 2 {tensor = "ids"} : tensor<4xi64>
    %zero = tc.constant dense<0.0> : tensor<f32>
    return %zero : tensor<f32>
  }
}
