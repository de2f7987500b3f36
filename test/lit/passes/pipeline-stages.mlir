// RUN: trainc-opt %s --split-input-file --trainc-pipeline-stages="boundaries=relu1,fc2" | FileCheck %s
// RUN: trainc-opt %s --split-input-file --trainc-pipeline-stages="stages=2" | FileCheck %s --check-prefix=AUTO
// RUN: trainc-opt %s --split-input-file --trainc-pipeline-stages | FileCheck %s --check-prefix=ONE
// RUN: not trainc-opt %s --split-input-file --trainc-pipeline-stages="boundaries=nope" 2>&1 | FileCheck %s --check-prefix=NONODE
// RUN: not trainc-opt %s --split-input-file --trainc-pipeline-stages="boundaries=fc2,fc1" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not trainc-opt %s --split-input-file --trainc-pipeline-stages="boundaries=fc3" 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not trainc-opt %s --split-input-file --trainc-pipeline-stages="stages=4" 2>&1 | FileCheck %s --check-prefix=TOOMANY
// RUN: not trainc-opt %s --split-input-file --trainc-pipeline-stages="stages=3 boundaries=fc1" 2>&1 | FileCheck %s --check-prefix=COUNT

// Three stages cut after relu1 and fc2. relu1's output is read by fc2
// (stage 1) and, through the skip connection, by the add of stage 2: stage
// 0 sends it, stage 1 receives it and sends it on beside fc2's output, so
// both tensors cross the second cut. The constant the loss reads (no
// parameter) is cloned into the stage that reads it. Stages before the last
// return the loss 0 (their steps' ABI); the last returns the loss and the
// per-sample losses.
// CHECK: module attributes {tc.batch_size = 4 : i64, tc.pipeline_stages = 3 : i64}
// CHECK-LABEL: func.func @stage0_loss(
// CHECK-SAME: tensor<4x8xf32> {tc.input = "x"}, %{{.*}}: tensor<8x8xf32> {tc.param = @w1})
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"})
// CHECK-SAME: tc.stage_cost = {{.*}}, tc.stage_send_bytes = 128
// CHECK-NEXT: tc.gemm
// CHECK-NEXT: %[[R1:.*]] = tc.relu
// CHECK-NEXT: tc.send %[[R1]] to stage 1 slot 0 {tensor = "relu1"} : tensor<4x8xf32>
// CHECK-NEXT: %[[ZERO:.*]] = tc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT: return %[[ZERO]]
// CHECK-LABEL: func.func @stage1_loss(
// CHECK-SAME: %[[W2:.*]]: tensor<8x8xf32> {tc.param = @w2})
// CHECK-SAME: tc.stage_send_bytes = 256
// CHECK-NEXT: %[[IN:.*]] = tc.recv from stage 0 slot 0 {tensor = "relu1"} : tensor<4x8xf32>
// CHECK-NEXT: %[[H2:.*]] = tc.gemm %[[IN]], %[[W2]]
// CHECK-NEXT: tc.send %[[IN]] to stage 2 slot 0 {tensor = "relu1"}
// CHECK-NEXT: tc.send %[[H2]] to stage 2 slot 1 {tensor = "fc2"}
// CHECK-LABEL: func.func @stage2_loss(
// CHECK-SAME: tensor<4xi64> {tc.label = "label"}, %[[W3:.*]]: tensor<3x8xf32> {tc.param = @w3})
// CHECK-SAME: -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.output = "sample_losses", tc.sample_losses})
// CHECK-NEXT: %[[A:.*]] = tc.recv from stage 1 slot 0 {tensor = "relu1"}
// CHECK-NEXT: %[[B:.*]] = tc.recv from stage 1 slot 1 {tensor = "fc2"}
// CHECK-NEXT: tc.constant dense<2.500000e-01>
// CHECK-NEXT: %[[S:.*]] = tc.add %[[B]], %[[A]]
// CHECK-NEXT: tc.gemm %[[S]], %[[W3]]
// CHECK: return
// CHECK-NOT: func.func @loss

// The pass picks the cut itself: every stage owns a parameter, and at most
// four tensors cross.
// AUTO-LABEL: func.func @stage0_loss(
// AUTO: tc.send
// AUTO-LABEL: func.func @stage1_loss(
// AUTO: tc.recv from stage 0 slot 0
// AUTO-NOT: func.func @stage2_loss

// One stage: nothing to cut.
// ONE-NOT: tc.pipeline_stages
// ONE: func.func @loss(
// ONE-NOT: tc.send

// NONODE: error: --stage-boundaries: no ONNX node 'nope' in the training graph
// ORDER: error: --stage-boundaries: 'fc1' does not come after 'fc2' in the graph: name the boundaries in graph order
// EMPTY: error: --stage-boundaries: stage 1 (after 'fc3' to the end) reads no trainable parameter of its own
// TOOMANY: error: --pipeline-stages=4: the training graph has no 3 cuts that each cross at most 4 tensors and leave every stage a trainable parameter of its own
// COUNT: error: --stage-boundaries names 1 nodes; --pipeline-stages=3 needs 2

module attributes {tc.batch_size = 4 : i64} {
  tc.param @w1 trainable : tensor<8x8xf32> = dense<0.1> : tensor<8x8xf32>
  tc.param @w2 trainable : tensor<8x8xf32> = dense<0.2> : tensor<8x8xf32>
  tc.param @w3 trainable : tensor<3x8xf32> = dense<0.3> : tensor<3x8xf32>
  func.func @loss(%x: tensor<4x8xf32> {tc.input = "x"}, %label: tensor<4xi64> {tc.label = "label"},
                  %w1: tensor<8x8xf32> {tc.param = @w1}, %w2: tensor<8x8xf32> {tc.param = @w2},
                  %w3: tensor<3x8xf32> {tc.param = @w3})
      -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.output = "sample_losses", tc.sample_losses}) {
    %quarter = tc.constant dense<0.25> : tensor<f32> loc("ce")
    %h1 = tc.gemm %x, %w1 {trans_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc1")
    %r1 = tc.relu %h1 : tensor<4x8xf32> loc("relu1")
    %h2 = tc.gemm %r1, %w2 {trans_b = true} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc2")
    %s = tc.add %h2, %r1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("skip")
    %h3 = tc.gemm %s, %w3 {trans_b = true} : (tensor<4x8xf32>, tensor<3x8xf32>) -> tensor<4x3xf32> loc("fc3")
    %l = tc.softmax_cross_entropy %h3, %label {ignore_index = -100 : i64, reduction = "none"} : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32> loc("ce")
    %sum = tc.reduce_sum %l {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32> loc("ce")
    %mean = tc.mul %sum, %quarter : (tensor<f32>, tensor<f32>) -> tensor<f32> loc("ce")
    return %mean, %l : tensor<f32>, tensor<4xf32>
  }
}

