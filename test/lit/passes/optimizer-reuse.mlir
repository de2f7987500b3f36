// One pass instance runs on several modules: nothing of one run may leak into
// the next. Without threading the pass manager runs the same
// trainc-optimizer instance on both nested modules; each @train_step must get
// hyperparameter arguments of its own (a hyperparameter remembered from the
// first module would be a value of another function, and the IR would not
// verify).
// RUN: trainc-opt %s --mlir-disable-threading \
// RUN:   --pass-pipeline='builtin.module(builtin.module(trainc-optimizer{optimizer=sgd}))' \
// RUN:   | FileCheck %s

// CHECK-LABEL: module @first
// CHECK: func.func @train_step(
// CHECK-SAME: %[[P:arg1]]: tensor<3xf32> {tc.param = @w}
// CHECK-SAME: %[[LR:arg2]]: tensor<f32> {tc.hyper = #tc.hyper<lr>}, %[[WD:arg3]]: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>}, %[[M:arg4]]: tensor<f32> {tc.hyper = #tc.hyper<momentum>}, %[[B:arg5]]: tensor<3xf32> {tc.state = "momentum.w", tc.state_role = #tc.state_role<momentum>}
// CHECK: tc.sgd_update %[[P]], %{{[^,]*}}, %[[B]], %[[LR]], %[[M]], %[[WD]] :
// CHECK-LABEL: module @second
// CHECK: func.func @train_step(
// CHECK-SAME: %[[P2:arg1]]: tensor<4xf32> {tc.param = @u}
// CHECK-SAME: %[[LR2:arg2]]: tensor<f32> {tc.hyper = #tc.hyper<lr>}, %[[WD2:arg3]]: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>}, %[[M2:arg4]]: tensor<f32> {tc.hyper = #tc.hyper<momentum>}, %[[B2:arg5]]: tensor<4xf32> {tc.state = "momentum.u", tc.state_role = #tc.state_role<momentum>}
// CHECK: tc.sgd_update %[[P2]], %{{[^,]*}}, %[[B2]], %[[LR2]], %[[M2]], %[[WD2]] :
module @first {
  tc.param @w trainable : tensor<3xf32>
  func.func @train_step(%x: tensor<3xf32> {tc.input = "x"}, %w: tensor<3xf32> {tc.param = @w})
      -> (tensor<f32> {tc.output = "loss"}, tensor<3xf32> {tc.grad = @w, tc.output = "grad.w"}) {
    %p = tc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %l = tc.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<3xf32>
  }
}
module @second {
  tc.param @u trainable : tensor<4xf32>
  func.func @train_step(%x: tensor<4xf32> {tc.input = "x"}, %u: tensor<4xf32> {tc.param = @u})
      -> (tensor<f32> {tc.output = "loss"}, tensor<4xf32> {tc.grad = @u, tc.output = "grad.u"}) {
    %p = tc.mul %x, %u : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %l = tc.reduce_sum %p {axes = array<i64>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
    return %l, %x : tensor<f32>, tensor<4xf32>
  }
}
