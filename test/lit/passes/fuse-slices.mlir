// RUN: trainc-opt %s --trainc-fuse --split-input-file | FileCheck %s

// An LSTM step's gates: four column blocks of one [B, 4H] product, each
// copied by a tc.slice for the cell's pointwise ops. The slices move into
// the cell's group, which reads the product itself, in the slices' order.
// CHECK-LABEL: func.func @gates
// CHECK-NOT: tc.slice {{.*}} : (tensor<4x32xf32>) -> tensor<4x8xf32>
// CHECK: tc.fused "slice_sigmoid_tanh_mul_add"(%arg1, %arg0) : (tensor<4x8xf32>, tensor<4x32xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
// CHECK-NEXT: ^bb0(%[[C:.*]]: tensor<4x8xf32>, %[[G:.*]]: tensor<4x32xf32>):
// CHECK-NEXT: %[[I:.*]] = tc.slice %[[G]] {ends = array<i64: 4, 8>, starts = array<i64: 0, 0>
// CHECK-NEXT: %[[O:.*]] = tc.slice %[[G]] {ends = array<i64: 4, 16>, starts = array<i64: 0, 8>
// CHECK-NEXT: %[[F:.*]] = tc.slice %[[G]] {ends = array<i64: 4, 24>, starts = array<i64: 0, 16>
// CHECK-NEXT: %[[Z:.*]] = tc.slice %[[G]] {ends = array<i64: 4, 32>, starts = array<i64: 0, 24>
// CHECK-NEXT: tc.sigmoid %[[I]]
// CHECK-NOT: tc.slice
// CHECK: return
func.func @gates(%g: tensor<4x32xf32>, %c: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %i = tc.slice %g {starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<4x8xf32>
  %o = tc.slice %g {starts = array<i64: 0, 8>, ends = array<i64: 4, 16>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<4x8xf32>
  %f = tc.slice %g {starts = array<i64: 0, 16>, ends = array<i64: 4, 24>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<4x8xf32>
  %z = tc.slice %g {starts = array<i64: 0, 24>, ends = array<i64: 4, 32>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<4x8xf32>
  %si = tc.sigmoid %i : tensor<4x8xf32>
  %tz = tc.tanh %z : tensor<4x8xf32>
  %sf = tc.sigmoid %f : tensor<4x8xf32>
  %a = tc.mul %si, %tz : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = tc.mul %sf, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %cn = tc.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %so = tc.sigmoid %o : tensor<4x8xf32>
  %tc = tc.tanh %cn : tensor<4x8xf32>
  %h = tc.mul %so, %tc : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %cn, %h : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A lone pointwise op of the slice's shape becomes a group of its own that
// reads the slice in place (steps too: every other column, reversed rows).
// CHECK-LABEL: func.func @lone_reader
// CHECK: tc.fused "slice_relu"(%arg0) : (tensor<4x32xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<4x32xf32>):
// CHECK-NEXT: %[[S:.*]] = tc.slice %[[X]] {{.*}}steps = array<i64: -1, 2>
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[S]]
// CHECK-NEXT: tc.yield %[[R]]
func.func @lone_reader(%x: tensor<4x32xf32>) -> tensor<4x16xf32> {
  %s = tc.slice %x {starts = array<i64: 3, 0>, ends = array<i64: -1, 32>, steps = array<i64: -1, 2>} : (tensor<4x32xf32>) -> tensor<4x16xf32>
  %r = tc.relu %s : tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}

// -----

// Must not fire: a slice that a GEMM reads too stays a copy (the GEMM needs
// it in memory); a contiguous slice is a view already; a reader that
// broadcasts the slice to a larger shape is not of its shape.
// CHECK-LABEL: func.func @stays
// CHECK: %[[A:.*]] = tc.slice %arg0 {ends = array<i64: 4, 8>
// CHECK: tc.relu %[[A]]
// CHECK: tc.gemm %[[A]]
// CHECK: %[[V:.*]] = tc.slice %arg0 {ends = array<i64: 2, 32>, starts = array<i64: 1, 0>
// CHECK: tc.relu %[[V]]
// CHECK: %[[B:.*]] = tc.slice %arg0 {ends = array<i64: 4, 32>, starts = array<i64: 3, 0>
// CHECK: tc.add %[[B]], %arg0
func.func @stays(%x: tensor<4x32xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x32xf32>, tensor<4x32xf32>) {
  %a = tc.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 4, 8>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<4x8xf32>
  %r = tc.relu %a : tensor<4x8xf32>
  %m = tc.gemm %a, %w {alpha = 1.0 : f32, beta = 0.0 : f32, transA = false, transB = false} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %v = tc.slice %x {starts = array<i64: 1, 0>, ends = array<i64: 2, 32>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<1x32xf32>
  %rv = tc.relu %v : tensor<1x32xf32>
  %b = tc.slice %x {starts = array<i64: 3, 0>, ends = array<i64: 4, 32>, steps = array<i64: 1, 1>} : (tensor<4x32xf32>) -> tensor<1x32xf32>
  %s = tc.add %b, %x : (tensor<1x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %r, %m, %rv, %s : tensor<4x8xf32>, tensor<4x8xf32>, tensor<1x32xf32>, tensor<4x32xf32>
}

// -----

// Must not fire: a slice that a dropout takes as its key stays a copy (a
// kernel receives a key as a pointer to the stream's seed and offset and
// never reads it element by element), for a dropout alone or with others.
// CHECK-LABEL: func.func @key_stays
// CHECK: %[[K:.*]] = tc.slice %arg1 {ends = array<i64: 4>, starts = array<i64: 0>, steps = array<i64: 2>}
// CHECK: %[[L:.*]] = tc.slice %arg1 {ends = array<i64: 4>, starts = array<i64: 1>, steps = array<i64: 2>}
// CHECK: tc.fused "dropout_exp"(%arg0, %[[K]], %[[L]])
// CHECK-NOT: tc.slice
func.func @key_stays(%x: tensor<2xf32>, %keys: tensor<4xi64>) -> (tensor<2xf32>, tensor<2xf32>) {
  %k = tc.slice %keys {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 2>} : (tensor<4xi64>) -> tensor<2xi64>
  %d = tc.dropout %x, %k {ratio = 0.5 : f32, stream = 1 : i64, training = true} : tensor<2xf32>, tensor<2xi64>
  %l = tc.slice %keys {starts = array<i64: 1>, ends = array<i64: 4>, steps = array<i64: 2>} : (tensor<4xi64>) -> tensor<2xi64>
  %e = tc.dropout %x, %l {ratio = 0.5 : f32, stream = 2 : i64, training = true} : tensor<2xf32>, tensor<2xi64>
  %f = tc.exp %e : tensor<2xf32>
  return %d, %f : tensor<2xf32>, tensor<2xf32>
}
