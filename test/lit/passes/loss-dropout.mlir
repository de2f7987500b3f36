// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=mse" | FileCheck %s
// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=mse" --trainc-autodiff | FileCheck %s --check-prefix=GRAD

// @loss is the training forward: every dropout that drops something switches
// to training mode and reads the step's key [seed, step], a new input after
// the sample weights. @forward keeps the identity.
// CHECK-LABEL: func.func @forward(
// CHECK: tc.dropout %{{.*}} {ratio = 3.000000e-01 : f32, stream = 4 : i64} : tensor<4x8xf32>
// CHECK-LABEL: func.func @loss(
// CHECK-SAME: %{{[^:]*}}: tensor<4xf32> {tc.sample_weights}, %[[KEY:[^:]*]]: tensor<2xi64> {tc.dropout_key}, %{{[^:]*}}: tensor<8x8xf32> {tc.param = @w}
// CHECK: tc.dropout %{{.*}}, %[[KEY]] {ratio = 3.000000e-01 : f32, stream = 4 : i64, training = true} : tensor<4x8xf32>, tensor<2xi64>
// CHECK: tc.dropout %{{.*}}, %[[KEY]] {stream = 7 : i64, training = true} : tensor<4x8xf32>, tensor<2xi64>

// The gradient of a training dropout is the same dropout (key, stream,
// ratio) of the result gradient: it redraws the forward's mask.
// GRAD-LABEL: func.func @train_step(
// GRAD-SAME: %[[KEY:[^:]*]]: tensor<2xi64> {tc.dropout_key}
// GRAD: %[[D1:.*]] = tc.dropout %[[X:[^,]*]], %[[KEY]] {ratio = 3.000000e-01 : f32, stream = 4 : i64, training = true}
// GRAD: tc.dropout %{{.*}}, %[[KEY]] {stream = 7 : i64, training = true}
// GRAD: tc.dropout %{{.*}}, %[[KEY]] {stream = 7 : i64, training = true}
// GRAD: tc.dropout %{{.*}}, %[[KEY]] {ratio = 3.000000e-01 : f32, stream = 4 : i64, training = true}
tc.param @w trainable : tensor<8x8xf32>
func.func @forward(%x: tensor<4x8xf32> {tc.input = "x"}, %w: tensor<8x8xf32> {tc.param = @w})
    -> (tensor<4x8xf32> {tc.output = "y"}) {
  %h = tc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %d = tc.dropout %h {ratio = 0.3 : f32, stream = 4 : i64} : tensor<4x8xf32>
  %t = tc.tanh %d : tensor<4x8xf32>
  %y = tc.dropout %t {stream = 7 : i64} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// A dropout of ratio 0 keeps everything: it stays the identity and the step
// gets no key input.
// CHECK-LABEL: func.func @loss(
// CHECK-NOT: tc.dropout_key
// CHECK: tc.dropout %{{[^,]*}} {ratio = 0.000000e+00 : f32} : tensor<4x8xf32>
// GRAD-LABEL: func.func @train_step(
// GRAD-NOT: tc.dropout_key
// GRAD-NOT: training = true
tc.param @w trainable : tensor<8x8xf32>
func.func @forward(%x: tensor<4x8xf32> {tc.input = "x"}, %w: tensor<8x8xf32> {tc.param = @w})
    -> (tensor<4x8xf32> {tc.output = "y"}) {
  %h = tc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %y = tc.dropout %h {ratio = 0.0 : f32} : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
