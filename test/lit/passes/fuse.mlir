// RUN: trainc-opt %s --trainc-fuse=epilogues=false --split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-fuse="max-ops=2 epilogues=false" --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: not trainc-opt %s --trainc-fuse=max-ops=1 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: trainc-fuse: max-ops must be at least 2

// Forward: the bias add (broadcast [64] to [8,64]), the activation and a
// scale by a splat constant become one group; the constant moves inside.
// CHECK-LABEL: func.func @forward_chain
// CHECK-NOT: tc.constant
// CHECK: %[[G:.*]] = tc.fused "add_relu_mul"(%arg0, %arg1) : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<8x64xf32>, %[[B:.*]]: tensor<64xf32>):
// CHECK-NEXT: %[[S:.*]] = tc.add %[[A]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[S]]
// CHECK-NEXT: %[[C:.*]] = tc.constant dense<2.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[M:.*]] = tc.mul %[[R]], %[[C]]
// CHECK-NEXT: tc.yield %[[M]] : tensor<8x64xf32>
// CHECK: return %[[G]]
// SMALL-LABEL: func.func @forward_chain
// SMALL: tc.fused "add_relu"
// SMALL-NOT: tc.fused
// SMALL: tc.mul
func.func @forward_chain(%x: tensor<8x64xf32>, %b: tensor<64xf32>) -> tensor<8x64xf32> {
  %c = tc.constant dense<2.0> : tensor<f32>
  %0 = tc.add %x, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %1 = tc.relu %0 : tensor<8x64xf32>
  %2 = tc.mul %1, %c : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// -----

// Backward of relu: the mask and the select are one group; the bool mask is
// an intermediate (not yielded) and both scalar constants are inlined.
// CHECK-LABEL: func.func @relu_backward
// CHECK: tc.fused "greater_where"(%arg0, %arg1)
// CHECK: tc.greater
// CHECK: tc.where
// CHECK: tc.yield %{{.*}} : tensor<8x64xf32>
// CHECK-NOT: tc.fused
func.func @relu_backward(%x: tensor<8x64xf32>, %dy: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %zero = tc.constant dense<0.0> : tensor<f32>
  %zero2 = tc.constant dense<0.0> : tensor<f32>
  %m = tc.greater %x, %zero : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xi1>
  %dx = tc.where %m, %dy, %zero2 : (tensor<8x64xi1>, tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  return %dx : tensor<8x64xf32>
}

// -----

// A value two groups need, also saved for the backward (returned): the
// first group yields it, the second reads it. A library op (matmul) in the
// middle ends the first group: the tanh after it starts a new one.
// CHECK-LABEL: func.func @shared_value
// CHECK: %[[G1:.*]] = tc.fused "add_relu"(%arg0, %arg1) : {{.*}} -> tensor<8x64xf32>
// CHECK: %[[MM:.*]] = tc.matmul %[[G1]], %arg2
// CHECK: %[[G2:.*]] = tc.fused "tanh_mul"(%[[MM]], %[[G1]])
// CHECK: return %[[G2]], %[[G1]]
func.func @shared_value(%x: tensor<8x64xf32>, %b: tensor<64xf32>, %w: tensor<64x64xf32>)
    -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %0 = tc.add %x, %b : (tensor<8x64xf32>, tensor<64xf32>) -> tensor<8x64xf32>
  %1 = tc.relu %0 : tensor<8x64xf32>
  %2 = tc.matmul %1, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %3 = tc.tanh %2 : tensor<8x64xf32>
  %4 = tc.mul %3, %1 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %4, %1 : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// Must not fire: shapes differ ([8,64] then a broadcast up to [2,8,64]),
// and a lone op stays a plain op.
// CHECK-LABEL: func.func @mismatched_shapes
// CHECK-NOT: tc.fused
// CHECK: tc.relu
// CHECK: tc.add
func.func @mismatched_shapes(%x: tensor<8x64xf32>, %y: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %0 = tc.relu %x : tensor<8x64xf32>
  %1 = tc.add %0, %y : (tensor<8x64xf32>, tensor<2x8x64xf32>) -> tensor<2x8x64xf32>
  return %1 : tensor<2x8x64xf32>
}

// -----

// Must not fire: the relu's value was read by the matmul before the add, so
// the relu cannot move down to the add; both stay single ops.
// CHECK-LABEL: func.func @sealed_by_library_op
// CHECK-NOT: tc.fused
// CHECK: tc.relu
// CHECK: tc.matmul
// CHECK: tc.add
func.func @sealed_by_library_op(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
  %0 = tc.relu %x : tensor<8x64xf32>
  %1 = tc.matmul %0, %w : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
  %2 = tc.add %0, %1 : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  return %2 : tensor<8x64xf32>
}

// -----

// Two independent producer groups of the same shape merge into the op that
// reads both; training dropout and expand are fusible.
// CHECK-LABEL: func.func @merge_groups
// CHECK: tc.fused "dropout_exp_expand_neg_etc"
// CHECK-SAME: (%arg0, %arg2, %arg1)
// CHECK: tc.dropout
// CHECK: tc.expand
// CHECK: tc.yield %{{.*}} : tensor<4x8xf32>
// CHECK-NOT: tc.fused
func.func @merge_groups(%x: tensor<4x8xf32>, %v: tensor<8xf32>, %key: tensor<2xi64>) -> tensor<4x8xf32> {
  %0 = tc.dropout %x, %key {ratio = 0.5 : f32, stream = 1 : i64, training = true} : tensor<4x8xf32>, tensor<2xi64>
  %1 = tc.exp %0 : tensor<4x8xf32>
  %2 = tc.expand %v {shape = array<i64: 4, 8>} : (tensor<8xf32>) -> tensor<4x8xf32>
  %3 = tc.neg %2 : tensor<4x8xf32>
  %4 = tc.add %1, %3 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %4 : tensor<4x8xf32>
}

// -----

// Siblings: two kernels of one shape that read one input (a loss's terms
// weighted by the same sample weights) are one group with two results; an
// op of another shape, or one whose sibling group was already read, starts
// its own.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[G:.*]]:2 = tc.fused "mul_equal_not_cast"(%arg0, %arg2, %arg1)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: tc.mul
// CHECK-NEXT: tc.constant
// CHECK-NEXT: tc.equal
// CHECK-NEXT: tc.not
// CHECK-NEXT: tc.cast
// CHECK-NEXT: tc.mul
// CHECK-NEXT: tc.yield
// CHECK: tc.reduce_sum %[[G]]#0
// CHECK-NEXT: tc.exp %arg2
// CHECK-NEXT: tc.neg %arg3
func.func @siblings(%loss: tensor<8xf32>, %labels: tensor<8xi64>, %w: tensor<8xf32>, %v: tensor<2x8xf32>) -> (tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<2x8xf32>) {
  %0 = tc.mul %loss, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %ignore = tc.constant dense<-100> : tensor<i64>
  %1 = tc.equal %labels, %ignore : (tensor<8xi64>, tensor<i64>) -> tensor<8xi1>
  %2 = tc.not %1 : tensor<8xi1>
  %3 = tc.cast %2 {to = f32} : (tensor<8xi1>) -> tensor<8xf32>
  %4 = tc.mul %3, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %5 = tc.reduce_sum %0 {axes = array<i64: 0>, keepdims = false} : (tensor<8xf32>) -> tensor<f32>
  %6 = tc.exp %w : tensor<8xf32>
  %7 = tc.neg %v : tensor<2x8xf32>
  return %5, %4, %6, %7 : tensor<f32>, tensor<8xf32>, tensor<8xf32>, tensor<2x8xf32>
}
