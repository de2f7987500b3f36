// RUN: trainc-opt %s --trainc-fuse --split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-fuse=epilogues=false --split-input-file | FileCheck %s --check-prefix=OFF

// Conv + BN + ReLU: the training batch norm heads the ReLU. Its running
// statistics are results of the group (after the group's own shape), and
// still replace their operands in place (the return writes them back).
// CHECK-LABEL: func.func @bn_relu
// CHECK: %[[G:.*]]:3 = tc.fused "batch_norm_relu"(%arg0, %arg1, %arg2, %arg3, %arg4) : ({{.*}}) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[Y:.*]], %[[M:.*]], %[[V:.*]] = tc.batch_norm
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[Y]]
// CHECK-NEXT: tc.yield %[[R]], %[[M]], %[[V]] : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK: return %[[G]]#0, %[[G]]#1, %[[G]]#2
// OFF-LABEL: func.func @bn_relu
// OFF-NOT: tc.fused
func.func @bn_relu(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %y, %rm, %rv = tc.batch_norm %x, %g, %b, %m, %v {training = true} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = tc.relu %y : tensor<2x4x3x3xf32>
  return %r, %rm, %rv : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The backward of ReLU then BN: the ReLU gradient mask (and the residual
// gradient's add) is the batch-norm backward's prologue. The masked
// gradient is a result (the norm reads it twice); the input gradient's
// add is its epilogue.
// CHECK-LABEL: func.func @relu_mask_bn_backward
// CHECK: %[[G:.*]]:4 = tc.fused "add_less_equal_where_batch_norm_backward"
// CHECK-SAME: -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0
// CHECK: tc.add
// CHECK: tc.less_equal
// CHECK: %[[D:.*]] = tc.where
// CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = tc.batch_norm_backward %{{.*}}, %{{.*}}, %[[D]]
// CHECK-NEXT: %[[S:.*]] = tc.add %[[DX]]
// CHECK-NEXT: tc.yield %[[D]], %[[S]], %[[DG]], %[[DB]]
// CHECK: return %[[G]]#1, %[[G]]#2, %[[G]]#3
// OFF-LABEL: func.func @relu_mask_bn_backward
// OFF: tc.fused "add_less_equal_where"
// OFF: tc.batch_norm_backward
func.func @relu_mask_bn_backward(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %y: tensor<2x4x3x3xf32>, %dy0: tensor<2x4x3x3xf32>, %dy1: tensor<2x4x3x3xf32>, %skip: tensor<2x4x3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %zero = tc.constant dense<0.0> : tensor<f32>
  %dy = tc.add %dy0, %dy1 : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %off = tc.less_equal %y, %zero : (tensor<2x4x3x3xf32>, tensor<f32>) -> tensor<2x4x3x3xi1>
  %d = tc.where %off, %zero, %dy : (tensor<2x4x3x3xi1>, tensor<f32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  %dx, %dg, %db = tc.batch_norm_backward %x, %g, %d : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %sum = tc.add %dx, %skip : (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %sum, %dg, %db : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A residual add before a layer norm and one after it: the sum, which the
// norm reads twice, is written row by row by the prologue; the epilogue
// reads it back (a result) with the normalized row.
// CHECK-LABEL: func.func @add_layer_norm
// CHECK: %[[G:.*]]:2 = tc.fused "add_layer_norm"(%arg0, %arg1, %arg2, %arg3)
// CHECK: %[[S:.*]] = tc.add
// CHECK-NEXT: %[[N:.*]] = tc.layer_norm %[[S]]
// CHECK-NEXT: %[[O:.*]] = tc.add %[[S]], %[[N]]
// CHECK-NEXT: tc.yield %[[S]], %[[O]]
// CHECK: return %[[G]]#1
func.func @add_layer_norm(%h: tensor<2x3x8xf32>, %a: tensor<2x3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %s = tc.add %h, %a : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %n = tc.layer_norm %s, %g, %b {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %o = tc.add %s, %n : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  return %o : tensor<2x3x8xf32>
}

// -----

// Must not fire: the normalized value is also returned (it needs its own
// buffer and the ReLU reads it there), the sum is read by a library op
// before the norm (a group would sit after that reader), and a bf16 norm
// is not a head.
// CHECK-LABEL: func.func @not_heads
// CHECK: tc.batch_norm
// CHECK-NEXT: tc.relu
// CHECK: tc.add
// CHECK-NEXT: tc.reduce_sum
// CHECK-NEXT: tc.layer_norm
// CHECK: tc.layer_norm {{.*}} -> tensor<2x3x8xbf16>
// CHECK-NEXT: tc.neg
// CHECK-NOT: tc.fused
func.func @not_heads(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %h: tensor<2x3x8xf32>, %lg: tensor<8xf32>, %hb: tensor<2x3x8xbf16>, %lgb: tensor<8xbf16>) -> (tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x3x1xf32>, tensor<2x3x8xf32>, tensor<2x3x8xbf16>) {
  %y, %rm, %rv = tc.batch_norm %x, %g, %b, %m, %v {training = true} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = tc.relu %y : tensor<2x4x3x3xf32>
  %s = tc.add %h, %h : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
  %e = tc.reduce_sum %s {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x8xf32>) -> tensor<2x3x1xf32>
  %n = tc.layer_norm %s, %lg {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
  %nb = tc.layer_norm %hb, %lgb {axis = 2 : i64} : (tensor<2x3x8xbf16>, tensor<8xbf16>) -> tensor<2x3x8xbf16>
  %q = tc.neg %nb : tensor<2x3x8xbf16>
  return %y, %r, %e, %n, %q : tensor<2x4x3x3xf32>, tensor<2x4x3x3xf32>, tensor<2x3x1xf32>, tensor<2x3x8xf32>, tensor<2x3x8xbf16>
}

// -----

// Must not fire: an inference batch norm whose statistics results are read
// (views of its operands, which a group would copy), a training one whose
// running mean is read before its epilogue (the group would sit after that
// reader), and one whose running mean its epilogue would read.
// CHECK-LABEL: func.func @stats_read
// CHECK: tc.batch_norm
// CHECK-NEXT: tc.relu
// CHECK: tc.batch_norm {{.*}}training = true
// CHECK-NEXT: tc.neg
// CHECK-NEXT: tc.relu
// CHECK-NEXT: tc.batch_norm {{.*}}training = true
// CHECK-NEXT: tc.add
// CHECK-NOT: tc.fused
func.func @stats_read(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %x2: tensor<3x4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>) {
  %y, %rm, %rv = tc.batch_norm %x, %g, %b, %m, %v : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = tc.relu %y : tensor<2x4x3x3xf32>
  %y2, %rm2, %rv2 = tc.batch_norm %x, %g, %b, %m, %v {training = true} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %n = tc.neg %rm2 : tensor<4xf32>
  %r2 = tc.relu %y2 : tensor<2x4x3x3xf32>
  %y3, %rm3, %rv3 = tc.batch_norm %x2, %g, %b, %m, %v {training = true} : (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %s3 = tc.add %y3, %rm3 : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %r, %rm, %r2, %n, %rv2, %s3 : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3x4xf32>
}

// -----

// A softmax heads the pointwise ops around it too: the scaled scores are
// its prologue (a result: it reads them twice), the loss gradient's
// (softmax - one-hot) its epilogue, on each row.
// CHECK-LABEL: func.func @softmax_head
// CHECK: tc.fused "mul_softmax_sub"(%arg0, %arg1, %arg2)
// CHECK: %[[S:.*]] = tc.mul
// CHECK-NEXT: %[[P:.*]] = tc.softmax %[[S]]
// CHECK-NEXT: %[[D:.*]] = tc.sub %[[P]]
// CHECK-NEXT: tc.yield %[[S]], %[[D]]
func.func @softmax_head(%x: tensor<4x10xf32>, %scale: tensor<f32>, %onehot: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %s = tc.mul %x, %scale : (tensor<4x10xf32>, tensor<f32>) -> tensor<4x10xf32>
  %p = tc.softmax %s {axis = 1 : i64} : tensor<4x10xf32>
  %d = tc.sub %p, %onehot : (tensor<4x10xf32>, tensor<4x10xf32>) -> tensor<4x10xf32>
  return %d : tensor<4x10xf32>
}
