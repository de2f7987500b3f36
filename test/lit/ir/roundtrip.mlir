// RUN: trainc-opt %s | FileCheck %s
// RUN: trainc-opt %s | trainc-opt | FileCheck %s

// Round trip of every op of the tc dialect, one function per op family.
//
// Every result type written below was computed by hand from ONNX / PyTorch
// semantics (the arithmetic is in the comments). Because every tc op verifies
// its declared result type against its shape function, parsing this file at
// all checks each shape function; the CHECK lines then make sure the printed
// form keeps the same types and survives a second print-parse-print.

//===----------------------------------------------------------------------===//
// tc.param
//===----------------------------------------------------------------------===//

// CHECK: tc.param @fc1.weight trainable : tensor<2x3xf32> = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>
tc.param @fc1.weight trainable : tensor<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
// CHECK: tc.param @fc1.bias trainable : tensor<3xf32> = dense<0.000000e+00> : tensor<3xf32>
tc.param @fc1.bias trainable : tensor<3xf32> = dense<0.0> : tensor<3xf32>
// A frozen parameter (no `trainable`), and one without an initial value.
// CHECK: tc.param @bn.running_mean : tensor<3xf32> = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
tc.param @bn.running_mean : tensor<3xf32> = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
// CHECK: tc.param @step : tensor<i64>{{$}}
tc.param @step : tensor<i64>
// CHECK: tc.param @emb trainable : tensor<4x2xbf16>{{$}}
tc.param @emb trainable : tensor<4x2xbf16>

// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[W:[^:]+]]: tensor<2x3xf32> {tc.param = @fc1.weight}, %[[B:[^:]+]]: tensor<3xf32> {tc.param = @fc1.bias}, %[[X:[^:]+]]: tensor<4x2xf32>)
// CHECK: %[[Y:[^ ]+]] = tc.matmul %[[X]], %[[W]] : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[Z:[^ ]+]] = tc.add %[[Y]], %[[B]] : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
// CHECK: return %[[Z]] : tensor<4x3xf32>
func.func @forward(%w: tensor<2x3xf32> {tc.param = @fc1.weight},
                   %b: tensor<3xf32> {tc.param = @fc1.bias},
                   %x: tensor<4x2xf32>) -> tensor<4x3xf32> {
  // [4, 2] x [2, 3] -> [4, 3]; + [3] broadcasts to [4, 3].
  %y = tc.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %z = tc.add %y, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
  return %z : tensor<4x3xf32>
}

//===----------------------------------------------------------------------===//
// tc.constant
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @constants
// CHECK: %[[C0:[^ ]+]] = tc.constant dense<[1, 2]> : tensor<2xi64>
// CHECK: %[[C1:[^ ]+]] = tc.constant dense<1.500000e+00> : tensor<2x2xf32>
// CHECK: %[[C2:[^ ]+]] = tc.constant dense<0.000000e+00> : tensor<f32>
// CHECK: %[[C3:[^ ]+]] = tc.constant dense<[true, false, true]> : tensor<3xi1>
// CHECK: %[[C4:[^ ]+]] = tc.constant dense<7> : tensor<1x1xi32>
// CHECK: %[[C5:[^ ]+]] = tc.constant dense<> : tensor<0x4xf16>
// CHECK: return %[[C0]], %[[C1]], %[[C2]], %[[C3]], %[[C4]], %[[C5]]
func.func @constants() -> (tensor<2xi64>, tensor<2x2xf32>, tensor<f32>, tensor<3xi1>,
                           tensor<1x1xi32>, tensor<0x4xf16>) {
  %0 = tc.constant dense<[1, 2]> : tensor<2xi64>
  %1 = tc.constant dense<1.5> : tensor<2x2xf32>
  %2 = tc.constant dense<0.0> : tensor<f32>
  %3 = tc.constant dense<[true, false, true]> : tensor<3xi1>
  %4 = tc.constant dense<7> : tensor<1x1xi32>
  %5 = tc.constant dense<> : tensor<0x4xf16>
  return %0, %1, %2, %3, %4, %5 : tensor<2xi64>, tensor<2x2xf32>, tensor<f32>, tensor<3xi1>,
                                  tensor<1x1xi32>, tensor<0x4xf16>
}

//===----------------------------------------------------------------------===//
// Pointwise unary ops: the result has the operand's type.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @unary
// CHECK-SAME: (%[[F:[^:]+]]: tensor<4x8xf32>, %[[I:[^:]+]]: tensor<3xi64>, %[[J:[^:]+]]: tensor<2x2xi32>, %[[H:[^:]+]]: tensor<5xf16>, %[[G:[^:]+]]: tensor<2x1xbf16>, %[[D:[^:]+]]: tensor<f64>, %[[M:[^:]+]]: tensor<2x3xi1>)
// CHECK: tc.neg %[[F]] : tensor<4x8xf32>
// CHECK: tc.neg %[[I]] : tensor<3xi64>
// CHECK: tc.abs %[[J]] : tensor<2x2xi32>
// CHECK: tc.abs %[[H]] : tensor<5xf16>
// CHECK: tc.relu %[[F]] : tensor<4x8xf32>
// CHECK: tc.sigmoid %[[G]] : tensor<2x1xbf16>
// CHECK: tc.tanh %[[D]] : tensor<f64>
// CHECK: tc.erf %[[F]] : tensor<4x8xf32>
// CHECK: tc.exp %[[H]] : tensor<5xf16>
// CHECK: tc.log %[[F]] : tensor<4x8xf32>
// CHECK: tc.sqrt %[[D]] : tensor<f64>
// CHECK: tc.reciprocal %[[F]] : tensor<4x8xf32>
// CHECK: tc.not %[[M]] : tensor<2x3xi1>
// CHECK: return
func.func @unary(%f: tensor<4x8xf32>, %i: tensor<3xi64>, %j: tensor<2x2xi32>,
                 %h: tensor<5xf16>, %g: tensor<2x1xbf16>, %d: tensor<f64>,
                 %m: tensor<2x3xi1>) {
  %0 = tc.neg %f : tensor<4x8xf32>
  %1 = tc.neg %i : tensor<3xi64>
  %2 = tc.abs %j : tensor<2x2xi32>
  %3 = tc.abs %h : tensor<5xf16>
  %4 = tc.relu %f : tensor<4x8xf32>
  %5 = tc.sigmoid %g : tensor<2x1xbf16>
  %6 = tc.tanh %d : tensor<f64>
  %7 = tc.erf %f : tensor<4x8xf32>
  %8 = tc.exp %h : tensor<5xf16>
  %9 = tc.log %f : tensor<4x8xf32>
  %10 = tc.sqrt %d : tensor<f64>
  %11 = tc.reciprocal %f : tensor<4x8xf32>
  %12 = tc.not %m : tensor<2x3xi1>
  return
}

// Unary ops with attributes. Default-valued attributes are not printed.
// CHECK-LABEL: func.func @unary_attrs
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4x8xf32>, %[[K:[^:]+]]: tensor<2xi64>)
// CHECK: tc.gelu %[[X]] : tensor<4x8xf32>
// CHECK: tc.gelu %[[X]] {approximate = "tanh"} : tensor<4x8xf32>
// CHECK: tc.leaky_relu %[[X]] : tensor<4x8xf32>
// CHECK: tc.leaky_relu %[[X]] {alpha = 2.000000e-01 : f32} : tensor<4x8xf32>
// CHECK: tc.clip %[[X]] {max = 6.000000e+00 : f32, min = 0.000000e+00 : f32} : tensor<4x8xf32>
// CHECK: tc.clip %[[X]] {min = -1.000000e+00 : f32} : tensor<4x8xf32>
// CHECK: tc.clip %[[X]] : tensor<4x8xf32>
// CHECK: tc.dropout %[[X]] : tensor<4x8xf32>
// CHECK: tc.dropout %[[X]] {ratio = 1.000000e-01 : f32} : tensor<4x8xf32>
// CHECK: tc.dropout %[[X]] {ratio = 0.000000e+00 : f32} : tensor<4x8xf32>
// CHECK: tc.dropout %[[X]], %[[K]] {ratio = 1.000000e-01 : f32, stream = 3 : i64, training = true} : tensor<4x8xf32>, tensor<2xi64>
func.func @unary_attrs(%x: tensor<4x8xf32>, %k: tensor<2xi64>) {
  %0 = tc.gelu %x : tensor<4x8xf32>
  %1 = tc.gelu %x {approximate = "tanh"} : tensor<4x8xf32>
  %2 = tc.leaky_relu %x : tensor<4x8xf32>
  %3 = tc.leaky_relu %x {alpha = 0.2 : f32} : tensor<4x8xf32>
  %4 = tc.clip %x {min = 0.0 : f32, max = 6.0 : f32} : tensor<4x8xf32>
  %5 = tc.clip %x {min = -1.0 : f32} : tensor<4x8xf32>
  %6 = tc.clip %x : tensor<4x8xf32>
  %7 = tc.dropout %x : tensor<4x8xf32>
  %8 = tc.dropout %x {ratio = 0.1 : f32} : tensor<4x8xf32>
  %9 = tc.dropout %x {ratio = 0.0 : f32} : tensor<4x8xf32>
  %10 = tc.dropout %x, %k {ratio = 0.1 : f32, stream = 3 : i64, training = true} : tensor<4x8xf32>, tensor<2xi64>
  return
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops (numpy rules: align right, 1 stretches).
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @binary
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32>, %[[B:[^:]+]]: tensor<3xf32>, %[[C:[^:]+]]: tensor<4x1x5xf32>, %[[D:[^:]+]]: tensor<3x1xf32>, %[[S:[^:]+]]: tensor<f32>, %[[I:[^:]+]]: tensor<2x1xi64>, %[[J:[^:]+]]: tensor<1x3xi64>, %[[K:[^:]+]]: tensor<1x3xi32>, %[[E:[^:]+]]: tensor<0x3xf32>)
// CHECK: tc.add %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK: tc.add %[[B]], %[[A]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: tc.sub %[[C]], %[[D]] : (tensor<4x1x5xf32>, tensor<3x1xf32>) -> tensor<4x3x5xf32>
// CHECK: tc.mul %[[S]], %[[A]] : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: tc.div %[[A]], %[[S]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK: tc.pow %[[D]], %[[B]] : (tensor<3x1xf32>, tensor<3xf32>) -> tensor<3x3xf32>
// CHECK: tc.max %[[I]], %[[J]] : (tensor<2x1xi64>, tensor<1x3xi64>) -> tensor<2x3xi64>
// CHECK: tc.min %[[K]], %[[K]] : (tensor<1x3xi32>, tensor<1x3xi32>) -> tensor<1x3xi32>
// CHECK: tc.add %[[S]], %[[S]] : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: tc.mul %[[E]], %[[B]] : (tensor<0x3xf32>, tensor<3xf32>) -> tensor<0x3xf32>
func.func @binary(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %c: tensor<4x1x5xf32>,
                  %d: tensor<3x1xf32>, %s: tensor<f32>, %i: tensor<2x1xi64>,
                  %j: tensor<1x3xi64>, %k: tensor<1x3xi32>, %e: tensor<0x3xf32>) {
  // [2,3] + [3]: [3] aligns with the last axis -> [2,3]; either order.
  %0 = tc.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = tc.add %b, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // [4,1,5] - [3,1] = [4,1,5] - [1,3,1] -> [4,3,5].
  %2 = tc.sub %c, %d : (tensor<4x1x5xf32>, tensor<3x1xf32>) -> tensor<4x3x5xf32>
  // A rank-0 operand broadcasts to anything.
  %3 = tc.mul %s, %a : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = tc.div %a, %s : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // [3,1] ^ [3] = [3,1] ^ [1,3] -> [3,3] (an outer product shape).
  %5 = tc.pow %d, %b : (tensor<3x1xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  // [2,1] max [1,3] -> [2,3].
  %6 = tc.max %i, %j : (tensor<2x1xi64>, tensor<1x3xi64>) -> tensor<2x3xi64>
  %7 = tc.min %k, %k : (tensor<1x3xi32>, tensor<1x3xi32>) -> tensor<1x3xi32>
  %8 = tc.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // A zero-sized axis stays zero: [0,3] * [3] -> [0,3].
  %9 = tc.mul %e, %b : (tensor<0x3xf32>, tensor<3xf32>) -> tensor<0x3xf32>
  return
}

// Comparisons broadcast like the arithmetic ops and return i1.
// CHECK-LABEL: func.func @compare
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32>, %[[B:[^:]+]]: tensor<3xf32>, %[[I:[^:]+]]: tensor<4x1xi64>, %[[J:[^:]+]]: tensor<5xi64>, %[[P:[^:]+]]: tensor<2x1xi1>, %[[Q:[^:]+]]: tensor<1x3xi1>)
// CHECK: tc.equal %[[A]], %[[B]] : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK: tc.equal %[[P]], %[[Q]] : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
// CHECK: tc.less %[[I]], %[[J]] : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi1>
// CHECK: tc.less_equal %[[B]], %[[A]] : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK: tc.greater %[[A]], %[[A]] : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK: tc.greater_equal %[[J]], %[[I]] : (tensor<5xi64>, tensor<4x1xi64>) -> tensor<4x5xi1>
// CHECK: tc.and %[[P]], %[[Q]] : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
// CHECK: tc.or %[[Q]], %[[P]] : (tensor<1x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
func.func @compare(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %i: tensor<4x1xi64>,
                   %j: tensor<5xi64>, %p: tensor<2x1xi1>, %q: tensor<1x3xi1>) {
  %0 = tc.equal %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %1 = tc.equal %p, %q : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  // [4,1] < [5] = [4,1] < [1,5] -> [4,5].
  %2 = tc.less %i, %j : (tensor<4x1xi64>, tensor<5xi64>) -> tensor<4x5xi1>
  %3 = tc.less_equal %b, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %4 = tc.greater %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %5 = tc.greater_equal %j, %i : (tensor<5xi64>, tensor<4x1xi64>) -> tensor<4x5xi1>
  %6 = tc.and %p, %q : (tensor<2x1xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  %7 = tc.or %q, %p : (tensor<1x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  return
}

// CHECK-LABEL: func.func @where
// CHECK-SAME: (%[[M:[^:]+]]: tensor<1x1x4x4xi1>, %[[X:[^:]+]]: tensor<2x2x4x4xf32>, %[[Y:[^:]+]]: tensor<f32>, %[[N:[^:]+]]: tensor<3x1xi1>, %[[U:[^:]+]]: tensor<1x4xi64>, %[[V:[^:]+]]: tensor<1xi64>)
// CHECK: tc.where %[[M]], %[[X]], %[[Y]] : (tensor<1x1x4x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
// CHECK: tc.where %[[N]], %[[U]], %[[V]] : (tensor<3x1xi1>, tensor<1x4xi64>, tensor<1xi64>) -> tensor<3x4xi64>
func.func @where(%m: tensor<1x1x4x4xi1>, %x: tensor<2x2x4x4xf32>, %y: tensor<f32>,
                 %n: tensor<3x1xi1>, %u: tensor<1x4xi64>, %v: tensor<1xi64>) {
  // All three operands broadcast: [1,1,4,4], [2,2,4,4], [] -> [2,2,4,4].
  %0 = tc.where %m, %x, %y : (tensor<1x1x4x4xi1>, tensor<2x2x4x4xf32>, tensor<f32>) -> tensor<2x2x4x4xf32>
  // The condition contributes its own axis: [3,1], [1,4], [1] -> [3,4].
  %1 = tc.where %n, %u, %v : (tensor<3x1xi1>, tensor<1x4xi64>, tensor<1xi64>) -> tensor<3x4xi64>
  return
}

// CHECK-LABEL: func.func @cast
// CHECK-SAME: (%[[X:[^:]+]]: tensor<4xf32>, %[[I:[^:]+]]: tensor<2x3xi64>, %[[B:[^:]+]]: tensor<2xi1>)
// CHECK: tc.cast %[[X]] {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
// CHECK: tc.cast %[[I]] {to = f32} : (tensor<2x3xi64>) -> tensor<2x3xf32>
// CHECK: tc.cast %[[X]] {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
// CHECK: tc.cast %[[B]] {to = i32} : (tensor<2xi1>) -> tensor<2xi32>
// CHECK: tc.cast %[[X]] {to = f32} : (tensor<4xf32>) -> tensor<4xf32>
func.func @cast(%x: tensor<4xf32>, %i: tensor<2x3xi64>, %b: tensor<2xi1>) {
  %0 = tc.cast %x {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
  %1 = tc.cast %i {to = f32} : (tensor<2x3xi64>) -> tensor<2x3xf32>
  %2 = tc.cast %x {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
  %3 = tc.cast %b {to = i32} : (tensor<2xi1>) -> tensor<2xi32>
  %4 = tc.cast %x {to = f32} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @matmul
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x16x32xf32>, %[[B:[^:]+]]: tensor<32x64xf32>, %[[C:[^:]+]]: tensor<3x1x4x5xf32>, %[[D:[^:]+]]: tensor<2x5x6xf32>, %[[V:[^:]+]]: tensor<5xf32>, %[[M:[^:]+]]: tensor<5x6xf32>, %[[N:[^:]+]]: tensor<4x5xf32>, %[[E:[^:]+]]: tensor<2x4x5xf32>, %[[I:[^:]+]]: tensor<3x4xi32>, %[[J:[^:]+]]: tensor<4x2xi32>)
// CHECK: tc.matmul %[[A]], %[[B]] : (tensor<2x16x32xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
// CHECK: tc.matmul %[[C]], %[[D]] : (tensor<3x1x4x5xf32>, tensor<2x5x6xf32>) -> tensor<3x2x4x6xf32>
// CHECK: tc.matmul %[[V]], %[[M]] : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
// CHECK: tc.matmul %[[N]], %[[V]] : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4xf32>
// CHECK: tc.matmul %[[V]], %[[V]] : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
// CHECK: tc.matmul %[[V]], %[[D]] : (tensor<5xf32>, tensor<2x5x6xf32>) -> tensor<2x6xf32>
// CHECK: tc.matmul %[[E]], %[[V]] : (tensor<2x4x5xf32>, tensor<5xf32>) -> tensor<2x4xf32>
// CHECK: tc.matmul %[[I]], %[[J]] : (tensor<3x4xi32>, tensor<4x2xi32>) -> tensor<3x2xi32>
func.func @matmul(%a: tensor<2x16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<3x1x4x5xf32>,
                  %d: tensor<2x5x6xf32>, %v: tensor<5xf32>, %m: tensor<5x6xf32>,
                  %n: tensor<4x5xf32>, %e: tensor<2x4x5xf32>, %i: tensor<3x4xi32>,
                  %j: tensor<4x2xi32>) {
  // Batch [2] against no batch: [2] x ([16,32] x [32,64]) -> [2,16,64].
  %0 = tc.matmul %a, %b : (tensor<2x16x32xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
  // Batches [3,1] and [2] broadcast to [3,2]; [4,5] x [5,6] -> [4,6].
  %1 = tc.matmul %c, %d : (tensor<3x1x4x5xf32>, tensor<2x5x6xf32>) -> tensor<3x2x4x6xf32>
  // 1-D lhs is promoted to [1,5], then the 1 is removed: [6].
  %2 = tc.matmul %v, %m : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<6xf32>
  // 1-D rhs is promoted to [5,1], then the 1 is removed: [4].
  %3 = tc.matmul %n, %v : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4xf32>
  // Dot product: a scalar.
  %4 = tc.matmul %v, %v : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  // 1-D lhs against a batched rhs: [1,5] x [2,5,6] -> [2,1,6] -> [2,6].
  %5 = tc.matmul %v, %d : (tensor<5xf32>, tensor<2x5x6xf32>) -> tensor<2x6xf32>
  // Batched lhs against a 1-D rhs: [2,4,5] x [5,1] -> [2,4,1] -> [2,4].
  %6 = tc.matmul %e, %v : (tensor<2x4x5xf32>, tensor<5xf32>) -> tensor<2x4xf32>
  %7 = tc.matmul %i, %j : (tensor<3x4xi32>, tensor<4x2xi32>) -> tensor<3x2xi32>
  return
}

// beta = 1.0 and trans_a = trans_b = false are the defaults: they are not printed.
// CHECK-LABEL: func.func @gemm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x784xf32>, %[[W:[^:]+]]: tensor<128x784xf32>, %[[B:[^:]+]]: tensor<128xf32>, %[[A:[^:]+]]: tensor<3x4xf32>, %[[AT:[^:]+]]: tensor<4x3xf32>, %[[K:[^:]+]]: tensor<4x5xf32>, %[[KT:[^:]+]]: tensor<5x4xf32>, %[[C1:[^:]+]]: tensor<1x5xf32>, %[[C2:[^:]+]]: tensor<3x1xf32>, %[[C3:[^:]+]]: tensor<f32>, %[[C4:[^:]+]]: tensor<3x5xf32>, %[[H:[^:]+]]: tensor<2x2xf64>)
// CHECK: tc.gemm %[[X]], %[[W]], %[[B]] {trans_b = true} : (tensor<8x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<8x128xf32>
// CHECK: tc.gemm %[[A]], %[[K]] : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: tc.gemm %[[AT]], %[[K]] {trans_a = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: tc.gemm %[[AT]], %[[KT]], %[[C1]] {alpha = 5.000000e-01 : f32, beta = 2.000000e+00 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
// CHECK: tc.gemm %[[A]], %[[K]], %[[C2]] : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
// CHECK: tc.gemm %[[A]], %[[K]], %[[C3]] : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<f32>) -> tensor<3x5xf32>
// CHECK: tc.gemm %[[A]], %[[KT]], %[[C4]] {trans_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
// CHECK: tc.gemm %[[H]], %[[H]] : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
func.func @gemm(%x: tensor<8x784xf32>, %w: tensor<128x784xf32>, %b: tensor<128xf32>,
                %a: tensor<3x4xf32>, %at: tensor<4x3xf32>, %k: tensor<4x5xf32>,
                %kt: tensor<5x4xf32>, %c1: tensor<1x5xf32>, %c2: tensor<3x1xf32>,
                %c3: tensor<f32>, %c4: tensor<3x5xf32>, %h: tensor<2x2xf64>) {
  // [8,784] x [128,784]^T -> [8,128]; bias [128] broadcasts over rows.
  %0 = tc.gemm %x, %w, %b {trans_b = true, beta = 1.0 : f32}
      : (tensor<8x784xf32>, tensor<128x784xf32>, tensor<128xf32>) -> tensor<8x128xf32>
  // No C: [3,4] x [4,5] -> [3,5].
  %1 = tc.gemm %a, %k : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  // op(A) = [4,3]^T = [3,4].
  %2 = tc.gemm %at, %k {trans_a = true} : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  // Both transposed: [3,4] x [4,5]; C [1,5] broadcasts over rows.
  %3 = tc.gemm %at, %kt, %c1 {trans_a = true, trans_b = true, alpha = 0.5 : f32, beta = 2.0 : f32}
      : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<1x5xf32>) -> tensor<3x5xf32>
  // C [3,1] broadcasts over columns, a scalar C over everything.
  %4 = tc.gemm %a, %k, %c2 : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3x1xf32>) -> tensor<3x5xf32>
  %5 = tc.gemm %a, %k, %c3 : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<f32>) -> tensor<3x5xf32>
  %6 = tc.gemm %a, %kt, %c4 {trans_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<3x5xf32>) -> tensor<3x5xf32>
  %7 = tc.gemm %h, %h {trans_a = false, trans_b = false} : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
  return
}

//===----------------------------------------------------------------------===//
// Convolution: out = floor((in + pad_begin + pad_end - dilation * (k - 1) - 1) / stride) + 1
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @conv
// CHECK-SAME: (%[[X0:[^:]+]]: tensor<2x3x64x64xf32>, %[[W0:[^:]+]]: tensor<64x3x7x7xf32>, %[[B0:[^:]+]]: tensor<64xf32>, %[[X1:[^:]+]]: tensor<1x3x10x10xf32>, %[[W1:[^:]+]]: tensor<8x3x3x3xf32>, %[[X2:[^:]+]]: tensor<1x8x9x9xf32>, %[[W2:[^:]+]]: tensor<16x2x3x3xf32>, %[[B2:[^:]+]]: tensor<16xf32>, %[[W3:[^:]+]]: tensor<8x1x3x3xf32>, %[[X4:[^:]+]]: tensor<1x1x10x12xf32>, %[[W4:[^:]+]]: tensor<2x1x3x3xf32>, %[[X5:[^:]+]]: tensor<1x1x5x5xf32>, %[[W5:[^:]+]]: tensor<1x1x3x3xf32>, %[[X6:[^:]+]]: tensor<2x4x16xf32>, %[[W6:[^:]+]]: tensor<6x4x5xf32>, %[[B6:[^:]+]]: tensor<6xf32>, %[[X7:[^:]+]]: tensor<1x2x5x6x7xf32>, %[[W7:[^:]+]]: tensor<3x2x3x3x3xf32>, %[[X8:[^:]+]]: tensor<1x1x7x7xf16>, %[[W8:[^:]+]]: tensor<1x1x2x2xf16>, %[[X9:[^:]+]]: tensor<1x1x1x1xf32>)
// CHECK: tc.conv %[[X0]], %[[W0]], %[[B0]] {dilations = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 2, 2>} : (tensor<2x3x64x64xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<2x64x32x32xf32>
// CHECK: tc.conv %[[X1]], %[[W1]] {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
// CHECK: tc.conv %[[X2]], %[[W2]], %[[B2]] {dilations = array<i64: 1, 1>, group = 4 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x9x9xf32>, tensor<16x2x3x3xf32>, tensor<16xf32>) -> tensor<1x16x9x9xf32>
// CHECK: tc.conv %[[X2]], %[[W3]] {dilations = array<i64: 1, 1>, group = 8 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x8x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
// CHECK: tc.conv %[[X4]], %[[W4]] {dilations = array<i64: 2, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x10x12xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x6x10xf32>
// CHECK: tc.conv %[[X5]], %[[W5]] {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 2, 1>, strides = array<i64: 2, 1>} : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x5xf32>
// CHECK: tc.conv %[[X6]], %[[W6]], %[[B6]] {dilations = array<i64: 1>, pads = array<i64: 2, 2>, strides = array<i64: 3>} : (tensor<2x4x16xf32>, tensor<6x4x5xf32>, tensor<6xf32>) -> tensor<2x6x6xf32>
// CHECK: tc.conv %[[X7]], %[[W7]] {dilations = array<i64: 1, 1, 1>, pads = array<i64: 1, 1, 1, 1, 1, 1>, strides = array<i64: 1, 2, 3>} : (tensor<1x2x5x6x7xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x5x3x3xf32>
// CHECK: tc.conv %[[X8]], %[[W8]] {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 3, 3>} : (tensor<1x1x7x7xf16>, tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16>
// CHECK: tc.conv %[[X9]], %[[W5]] {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x1x1xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
func.func @conv(%x0: tensor<2x3x64x64xf32>, %w0: tensor<64x3x7x7xf32>, %b0: tensor<64xf32>,
                %x1: tensor<1x3x10x10xf32>, %w1: tensor<8x3x3x3xf32>,
                %x2: tensor<1x8x9x9xf32>, %w2: tensor<16x2x3x3xf32>, %b2: tensor<16xf32>,
                %w3: tensor<8x1x3x3xf32>,
                %x4: tensor<1x1x10x12xf32>, %w4: tensor<2x1x3x3xf32>,
                %x5: tensor<1x1x5x5xf32>, %w5: tensor<1x1x3x3xf32>,
                %x6: tensor<2x4x16xf32>, %w6: tensor<6x4x5xf32>, %b6: tensor<6xf32>,
                %x7: tensor<1x2x5x6x7xf32>, %w7: tensor<3x2x3x3x3xf32>,
                %x8: tensor<1x1x7x7xf16>, %w8: tensor<1x1x2x2xf16>,
                %x9: tensor<1x1x1x1xf32>) {
  // ResNet stem: (64 + 3 + 3 - 7) / 2 + 1 = 63 / 2 + 1 = 31 + 1 = 32.
  %0 = tc.conv %x0, %w0, %b0 {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>,
                              dilations = array<i64: 1, 1>, group = 1 : i64}
      : (tensor<2x3x64x64xf32>, tensor<64x3x7x7xf32>, tensor<64xf32>) -> tensor<2x64x32x32xf32>
  // No bias, no padding: 10 - 3 + 1 = 8.
  %1 = tc.conv %x1, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
                         dilations = array<i64: 1, 1>}
      : (tensor<1x3x10x10xf32>, tensor<8x3x3x3xf32>) -> tensor<1x8x8x8xf32>
  // 4 groups: weight channels 8 / 4 = 2; "same" padding: 9 + 2 - 3 + 1 = 9.
  %2 = tc.conv %x2, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
                              dilations = array<i64: 1, 1>, group = 4 : i64}
      : (tensor<1x8x9x9xf32>, tensor<16x2x3x3xf32>, tensor<16xf32>) -> tensor<1x16x9x9xf32>
  // Depthwise (group = C = 8), stride 2: (9 - 3) / 2 + 1 = 4.
  %3 = tc.conv %x2, %w3 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>,
                         dilations = array<i64: 1, 1>, group = 8 : i64}
      : (tensor<1x8x9x9xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x4x4xf32>
  // Dilation 2 on H: span 2 * 2 + 1 = 5, 10 - 5 + 1 = 6; dilation 1 on W: 12 - 3 + 1 = 10.
  %4 = tc.conv %x4, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>,
                         dilations = array<i64: 2, 1>}
      : (tensor<1x1x10x12xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x6x10xf32>
  // Asymmetric pads [h_begin, w_begin, h_end, w_end] = [0, 1, 2, 1]:
  // H: (5 + 0 + 2 - 3) / 2 + 1 = 3; W: (5 + 1 + 1 - 3) / 1 + 1 = 5.
  %5 = tc.conv %x5, %w5 {strides = array<i64: 2, 1>, pads = array<i64: 0, 1, 2, 1>,
                         dilations = array<i64: 1, 1>}
      : (tensor<1x1x5x5xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x5xf32>
  // 1-D: (16 + 2 + 2 - 5) / 3 + 1 = 15 / 3 + 1 = 6.
  %6 = tc.conv %x6, %w6, %b6 {strides = array<i64: 3>, pads = array<i64: 2, 2>,
                              dilations = array<i64: 1>}
      : (tensor<2x4x16xf32>, tensor<6x4x5xf32>, tensor<6xf32>) -> tensor<2x6x6xf32>
  // 3-D: D (5 + 2 - 3) / 1 + 1 = 5; H (6 + 2 - 3) / 2 + 1 = 3; W (7 + 2 - 3) / 3 + 1 = 3.
  %7 = tc.conv %x7, %w7 {strides = array<i64: 1, 2, 3>, pads = array<i64: 1, 1, 1, 1, 1, 1>,
                         dilations = array<i64: 1, 1, 1>}
      : (tensor<1x2x5x6x7xf32>, tensor<3x2x3x3x3xf32>) -> tensor<1x3x5x3x3xf32>
  // The stride does not divide: floor((7 - 2) / 3) + 1 = 1 + 1 = 2.
  %8 = tc.conv %x8, %w8 {strides = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>,
                         dilations = array<i64: 1, 1>}
      : (tensor<1x1x7x7xf16>, tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16>
  // The kernel is larger than the input but fits with the padding: 1 + 2 - 3 + 1 = 1.
  %9 = tc.conv %x9, %w5 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>,
                         dilations = array<i64: 1, 1>}
      : (tensor<1x1x1x1xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

// momentum = 0.9 and epsilon = 1e-5 are the defaults: they are not printed.
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x64x8x8xf32>, %[[S:[^:]+]]: tensor<64xf32>, %[[B:[^:]+]]: tensor<64xf32>, %[[M:[^:]+]]: tensor<64xf32>, %[[V:[^:]+]]: tensor<64xf32>, %[[Y:[^:]+]]: tensor<8x4xf16>, %[[T:[^:]+]]: tensor<4xf16>)
// CHECK: %[[R0:[^ ,]+]], %[[RM0:[^ ,]+]], %[[RV0:[^ ,]+]] = tc.batch_norm %[[X]], %[[S]], %[[B]], %[[M]], %[[V]] : (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK: %[[R1:[^ ,]+]], %[[RM1:[^ ,]+]], %[[RV1:[^ ,]+]] = tc.batch_norm %[[X]], %[[S]], %[[B]], %[[RM0]], %[[RV0]] {epsilon = 1.000000e-03 : f32, training = true} : (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK: tc.batch_norm %[[Y]], %[[T]], %[[T]], %[[T]], %[[T]] {training = true} : (tensor<8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>) -> (tensor<8x4xf16>, tensor<4xf16>, tensor<4xf16>)
// CHECK: return %[[R1]], %[[RM1]], %[[RV1]]
func.func @batch_norm(%x: tensor<2x64x8x8xf32>, %s: tensor<64xf32>, %b: tensor<64xf32>,
                      %m: tensor<64xf32>, %v: tensor<64xf32>,
                      %y: tensor<8x4xf16>, %t: tensor<4xf16>)
    -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>) {
  // The output has the input's type; the running statistics the stats' type.
  %r0, %rm0, %rv0 = tc.batch_norm %x, %s, %b, %m, %v
      : (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>)
  %r1, %rm1, %rv1 = tc.batch_norm %x, %s, %b, %rm0, %rv0 {epsilon = 1.0e-3 : f32, momentum = 0.9 : f32, training = true}
      : (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
      -> (tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>)
  // Rank 2 ([N, C], after a Gemm): channels are axis 1.
  %r2:3 = tc.batch_norm %y, %t, %t, %t, %t {training = true}
      : (tensor<8x4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>)
      -> (tensor<8x4xf16>, tensor<4xf16>, tensor<4xf16>)
  return %r1, %rm1, %rv1 : tensor<2x64x8x8xf32>, tensor<64xf32>, tensor<64xf32>
}

// epsilon = 1e-5 is the default: it is not printed.
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x32xf32>, %[[G:[^:]+]]: tensor<32xf32>, %[[B:[^:]+]]: tensor<32xf32>, %[[G2:[^:]+]]: tensor<16x32xf32>, %[[G3:[^:]+]]: tensor<2x16x32xf32>)
// CHECK: tc.layer_norm %[[X]], %[[G]], %[[B]] {axis = 2 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
// CHECK: tc.layer_norm %[[X]], %[[G2]] {axis = 1 : i64, epsilon = 9.99999997E-7 : f32} : (tensor<2x16x32xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
// CHECK: tc.layer_norm %[[X]], %[[G3]], %[[G3]] {axis = 0 : i64} : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
func.func @layer_norm(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>,
                      %g2: tensor<16x32xf32>, %g3: tensor<2x16x32xf32>) {
  // Normalized shape is input.shape[axis:]: [32], [16,32], [2,16,32].
  %0 = tc.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  %1 = tc.layer_norm %x, %g2 {axis = 1 : i64, epsilon = 1.0e-06 : f32}
      : (tensor<2x16x32xf32>, tensor<16x32xf32>) -> tensor<2x16x32xf32>
  %2 = tc.layer_norm %x, %g3, %g3 {axis = 0 : i64}
      : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// Pooling. floor mode: (in + pads - span) / stride + 1; ceil mode rounds the
// division up, then drops a last window that would start in the end padding.
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @max_pool
// CHECK-SAME: (%[[X0:[^:]+]]: tensor<2x64x32x32xf32>, %[[X1:[^:]+]]: tensor<1x1x6x6xf32>, %[[X2:[^:]+]]: tensor<1x1x5x4xf32>, %[[X3:[^:]+]]: tensor<1x1x10xf32>, %[[X4:[^:]+]]: tensor<1x2x5x8x4xf32>)
// CHECK: tc.max_pool %[[X0]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x64x32x32xf32>) -> tensor<2x64x16x16xf32>
// CHECK: tc.max_pool %[[X1]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x2x2xf32>
// CHECK: tc.max_pool %[[X1]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
// CHECK: tc.max_pool %[[X2]] {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x5x4xf32>) -> tensor<1x1x3x2xf32>
// CHECK: tc.max_pool %[[X2]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x1x5x4xf32>) -> tensor<1x1x3x3xf32>
// CHECK: tc.max_pool %[[X3]] {dilations = array<i64: 2>, kernel_shape = array<i64: 3>, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<1x1x10xf32>) -> tensor<1x1x6xf32>
// CHECK: tc.max_pool %[[X4]] {ceil_mode = true, dilations = array<i64: 1, 2, 1>, kernel_shape = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0, 0, 0>, strides = array<i64: 2, 2, 2>} : (tensor<1x2x5x8x4xf32>) -> tensor<1x2x3x4x2xf32>
func.func @max_pool(%x0: tensor<2x64x32x32xf32>, %x1: tensor<1x1x6x6xf32>,
                    %x2: tensor<1x1x5x4xf32>, %x3: tensor<1x1x10xf32>,
                    %x4: tensor<1x2x5x8x4xf32>) {
  // ResNet: (32 + 1 + 1 - 3) / 2 + 1 = 31 / 2 + 1 = 16.
  %0 = tc.max_pool %x0 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x64x32x32xf32>) -> tensor<2x64x16x16xf32>
  // floor: (6 - 3) / 2 + 1 = 2; ceil: ceil(3 / 2) + 1 = 3, the last window
  // starts at 4 < 6, inside the input, so it stays (PyTorch gives 3x3).
  %1 = tc.max_pool %x1 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x6x6xf32>) -> tensor<1x1x2x2xf32>
  %2 = tc.max_pool %x1 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true}
      : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
  // H = 5, k = 2, s = 2, pads 1 + 1: floor 5 / 2 + 1 = 3; ceil: ceil(5 / 2) + 1 = 4,
  //   but the 4th window starts at 3 * 2 = 6 >= 5 + 1 (only end padding): dropped -> 3.
  // W = 4, k = 3, s = 2, pads 1 + 1: floor 3 / 2 + 1 = 2; ceil: ceil(3 / 2) + 1 = 3,
  //   the 3rd window starts at 4 < 4 + 1: kept -> 3.
  %3 = tc.max_pool %x2 {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, 2>,
                        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x5x4xf32>) -> tensor<1x1x3x2xf32>
  %4 = tc.max_pool %x2 {kernel_shape = array<i64: 2, 3>, strides = array<i64: 2, 2>,
                        pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true}
      : (tensor<1x1x5x4xf32>) -> tensor<1x1x3x3xf32>
  // 1-D with dilation 2: span 2 * 2 + 1 = 5, 10 - 5 + 1 = 6.
  %5 = tc.max_pool %x3 {kernel_shape = array<i64: 3>, strides = array<i64: 1>,
                        pads = array<i64: 0, 0>, dilations = array<i64: 2>, ceil_mode = false}
      : (tensor<1x1x10xf32>) -> tensor<1x1x6xf32>
  // 3-D, ceil mode, dilation 2 on the middle axis:
  // D: 5 - 2 = 3, ceil(3 / 2) + 1 = 3, last start 4 < 5: 3.
  // H: span 3, 8 - 3 = 5, ceil(5 / 2) + 1 = 4, last start 6 < 8: 4.
  // W: 4 - 2 = 2, ceil(2 / 2) + 1 = 2: 2.
  %6 = tc.max_pool %x4 {kernel_shape = array<i64: 2, 2, 2>, strides = array<i64: 2, 2, 2>,
                        pads = array<i64: 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 2, 1>, ceil_mode = true}
      : (tensor<1x2x5x8x4xf32>) -> tensor<1x2x3x4x2xf32>
  return
}

// CHECK-LABEL: func.func @avg_pool
// CHECK-SAME: (%[[X0:[^:]+]]: tensor<2x16x10x10xf32>, %[[X1:[^:]+]]: tensor<1x3x8x8xf32>, %[[X2:[^:]+]]: tensor<1x1x7x7xf32>, %[[X3:[^:]+]]: tensor<2x3x5xf64>)
// CHECK: tc.avg_pool %[[X0]] {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x16x10x10xf32>) -> tensor<2x16x5x5xf32>
// CHECK: tc.avg_pool %[[X1]] {count_include_pad = true, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK: tc.avg_pool %[[X2]] {ceil_mode = true, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
// CHECK: tc.avg_pool %[[X2]] {kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
// CHECK: tc.avg_pool %[[X3]] {ceil_mode = true, kernel_shape = array<i64: 2>, pads = array<i64: 1, 1>, strides = array<i64: 2>} : (tensor<2x3x5xf64>) -> tensor<2x3x3xf64>
func.func @avg_pool(%x0: tensor<2x16x10x10xf32>, %x1: tensor<1x3x8x8xf32>,
                    %x2: tensor<1x1x7x7xf32>, %x3: tensor<2x3x5xf64>) {
  // (10 - 2) / 2 + 1 = 5.
  %0 = tc.avg_pool %x0 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>}
      : (tensor<2x16x10x10xf32>) -> tensor<2x16x5x5xf32>
  // (8 + 2 - 3) / 2 + 1 = 3 + 1 = 4.
  %1 = tc.avg_pool %x1 {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>,
                        pads = array<i64: 1, 1, 1, 1>, count_include_pad = true}
      : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  // ceil: ceil((7 - 2) / 2) + 1 = 4, last start 6 < 7: kept. floor: 5 / 2 + 1 = 3.
  %2 = tc.avg_pool %x2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>, ceil_mode = true}
      : (tensor<1x1x7x7xf32>) -> tensor<1x1x4x4xf32>
  %3 = tc.avg_pool %x2 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>,
                        pads = array<i64: 0, 0, 0, 0>}
      : (tensor<1x1x7x7xf32>) -> tensor<1x1x3x3xf32>
  // 1-D, ceil: ceil((5 + 2 - 2) / 2) + 1 = 4, last start 6 >= 5 + 1: dropped -> 3.
  %4 = tc.avg_pool %x3 {kernel_shape = array<i64: 2>, strides = array<i64: 2>,
                        pads = array<i64: 1, 1>, ceil_mode = true, count_include_pad = false}
      : (tensor<2x3x5xf64>) -> tensor<2x3x3xf64>
  return
}

// CHECK-LABEL: func.func @global_avg_pool
// CHECK-SAME: (%[[X0:[^:]+]]: tensor<2x512x2x2xf32>, %[[X1:[^:]+]]: tensor<3x4x7xf32>, %[[X2:[^:]+]]: tensor<1x2x3x4x5xbf16>)
// CHECK: tc.global_avg_pool %[[X0]] : (tensor<2x512x2x2xf32>) -> tensor<2x512x1x1xf32>
// CHECK: tc.global_avg_pool %[[X1]] : (tensor<3x4x7xf32>) -> tensor<3x4x1xf32>
// CHECK: tc.global_avg_pool %[[X2]] : (tensor<1x2x3x4x5xbf16>) -> tensor<1x2x1x1x1xbf16>
func.func @global_avg_pool(%x0: tensor<2x512x2x2xf32>, %x1: tensor<3x4x7xf32>,
                           %x2: tensor<1x2x3x4x5xbf16>) {
  // Every spatial axis becomes 1; N and C stay.
  %0 = tc.global_avg_pool %x0 : (tensor<2x512x2x2xf32>) -> tensor<2x512x1x1xf32>
  %1 = tc.global_avg_pool %x1 : (tensor<3x4x7xf32>) -> tensor<3x4x1xf32>
  %2 = tc.global_avg_pool %x2 : (tensor<1x2x3x4x5xbf16>) -> tensor<1x2x1x1x1xbf16>
  return
}

//===----------------------------------------------------------------------===//
// Softmax and reductions
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @softmax
// CHECK-SAME: (%[[X:[^:]+]]: tensor<8x10xf32>, %[[Y:[^:]+]]: tensor<2x4x16x16xf16>)
// CHECK: tc.softmax %[[X]] {axis = 1 : i64} : tensor<8x10xf32>
// CHECK: tc.softmax %[[X]] {axis = 0 : i64} : tensor<8x10xf32>
// CHECK: tc.log_softmax %[[X]] {axis = 1 : i64} : tensor<8x10xf32>
// CHECK: tc.softmax %[[Y]] {axis = 3 : i64} : tensor<2x4x16x16xf16>
// CHECK: tc.log_softmax %[[Y]] {axis = 2 : i64} : tensor<2x4x16x16xf16>
func.func @softmax(%x: tensor<8x10xf32>, %y: tensor<2x4x16x16xf16>) {
  %0 = tc.softmax %x {axis = 1 : i64} : tensor<8x10xf32>
  %1 = tc.softmax %x {axis = 0 : i64} : tensor<8x10xf32>
  %2 = tc.log_softmax %x {axis = 1 : i64} : tensor<8x10xf32>
  %3 = tc.softmax %y {axis = 3 : i64} : tensor<2x4x16x16xf16>
  %4 = tc.log_softmax %y {axis = 2 : i64} : tensor<2x4x16x16xf16>
  return
}

// CHECK-LABEL: func.func @reduce
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x3x4xf32>, %[[I:[^:]+]]: tensor<3x4xi64>)
// CHECK: tc.reduce_sum %[[X]] {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK: tc.reduce_sum %[[X]] {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK: tc.reduce_sum %[[X]] {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK: tc.reduce_sum %[[X]] {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
// CHECK: tc.reduce_sum %[[X]] {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK: tc.reduce_mean %[[X]] {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK: tc.reduce_mean %[[X]] {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK: tc.reduce_max %[[I]] {axes = array<i64: 0>, keepdims = false} : (tensor<3x4xi64>) -> tensor<4xi64>
// CHECK: tc.reduce_max %[[X]] {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<1x1x4xf32>
func.func @reduce(%x: tensor<2x3x4xf32>, %i: tensor<3x4xi64>) {
  %0 = tc.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  // keepdims defaults to true (ONNX).
  %1 = tc.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %2 = tc.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  // Empty axes reduce every axis.
  %3 = tc.reduce_sum %x {axes = array<i64>} : (tensor<2x3x4xf32>) -> tensor<1x1x1xf32>
  %4 = tc.reduce_sum %x {axes = array<i64>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %5 = tc.reduce_mean %x {axes = array<i64: 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %6 = tc.reduce_mean %x {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<f32>
  %7 = tc.reduce_max %i {axes = array<i64: 0>, keepdims = false} : (tensor<3x4xi64>) -> tensor<4xi64>
  %8 = tc.reduce_max %x {axes = array<i64: 0, 1>} : (tensor<2x3x4xf32>) -> tensor<1x1x4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @reshape
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x5x5xf32>, %[[S:[^:]+]]: tensor<1x1xf32>, %[[T:[^:]+]]: tensor<f32>, %[[B:[^:]+]]: tensor<2x3xi1>, %[[E:[^:]+]]: tensor<0x3xi64>)
// CHECK: tc.reshape %[[X]] {shape = array<i64: 2, 400>} : (tensor<2x16x5x5xf32>) -> tensor<2x400xf32>
// CHECK: tc.reshape %[[S]] {shape = array<i64>} : (tensor<1x1xf32>) -> tensor<f32>
// CHECK: tc.reshape %[[T]] {shape = array<i64: 1, 1, 1>} : (tensor<f32>) -> tensor<1x1x1xf32>
// CHECK: tc.reshape %[[B]] {shape = array<i64: 3, 2>} : (tensor<2x3xi1>) -> tensor<3x2xi1>
// CHECK: tc.reshape %[[E]] {shape = array<i64: 5, 0>} : (tensor<0x3xi64>) -> tensor<5x0xi64>
func.func @reshape(%x: tensor<2x16x5x5xf32>, %s: tensor<1x1xf32>, %t: tensor<f32>,
                   %b: tensor<2x3xi1>, %e: tensor<0x3xi64>) {
  // 16 * 5 * 5 = 400.
  %0 = tc.reshape %x {shape = array<i64: 2, 400>} : (tensor<2x16x5x5xf32>) -> tensor<2x400xf32>
  %1 = tc.reshape %s {shape = array<i64>} : (tensor<1x1xf32>) -> tensor<f32>
  %2 = tc.reshape %t {shape = array<i64: 1, 1, 1>} : (tensor<f32>) -> tensor<1x1x1xf32>
  %3 = tc.reshape %b {shape = array<i64: 3, 2>} : (tensor<2x3xi1>) -> tensor<3x2xi1>
  // Zero elements on both sides.
  %4 = tc.reshape %e {shape = array<i64: 5, 0>} : (tensor<0x3xi64>) -> tensor<5x0xi64>
  return
}

// CHECK-LABEL: func.func @transpose
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x16x3x8xf32>, %[[Y:[^:]+]]: tensor<2x3x4xi32>, %[[Z:[^:]+]]: tensor<5x7xf32>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: tc.transpose %[[X]] {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x3x8xf32>) -> tensor<2x3x16x8xf32>
// CHECK: tc.transpose %[[Y]] {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
// CHECK: tc.transpose %[[Y]] {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xi32>) -> tensor<3x4x2xi32>
// CHECK: tc.transpose %[[Z]] {perm = array<i64: 1, 0>} : (tensor<5x7xf32>) -> tensor<7x5xf32>
// CHECK: tc.transpose %[[S]] {perm = array<i64>} : (tensor<f32>) -> tensor<f32>
func.func @transpose(%x: tensor<2x16x3x8xf32>, %y: tensor<2x3x4xi32>, %z: tensor<5x7xf32>,
                     %s: tensor<f32>) {
  // result dim i = input dim perm[i].
  %0 = tc.transpose %x {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x16x3x8xf32>) -> tensor<2x3x16x8xf32>
  // perm [2, 0, 1]: [4, 2, 3] (not the inverse permutation, which gives [3, 4, 2]).
  %1 = tc.transpose %y {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
  %2 = tc.transpose %y {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xi32>) -> tensor<3x4x2xi32>
  %3 = tc.transpose %z {perm = array<i64: 1, 0>} : (tensor<5x7xf32>) -> tensor<7x5xf32>
  %4 = tc.transpose %s {perm = array<i64>} : (tensor<f32>) -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[A:[^:]+]]: tensor<2x3xf32>, %[[B:[^:]+]]: tensor<2x5xf32>, %[[C:[^:]+]]: tensor<1x4xi64>, %[[D:[^:]+]]: tensor<2x4xi64>, %[[E:[^:]+]]: tensor<3x4xi64>, %[[Z:[^:]+]]: tensor<2x0xf32>)
// CHECK: tc.concat %[[A]], %[[B]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
// CHECK: tc.concat %[[C]], %[[D]], %[[E]] {axis = 0 : i64} : (tensor<1x4xi64>, tensor<2x4xi64>, tensor<3x4xi64>) -> tensor<6x4xi64>
// CHECK: tc.concat %[[A]] {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: tc.concat %[[A]], %[[Z]], %[[A]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<1x4xi64>,
                  %d: tensor<2x4xi64>, %e: tensor<3x4xi64>, %z: tensor<2x0xf32>) {
  // 3 + 5 = 8.
  %0 = tc.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
  // 1 + 2 + 3 = 6.
  %1 = tc.concat %c, %d, %e {axis = 0 : i64} : (tensor<1x4xi64>, tensor<2x4xi64>, tensor<3x4xi64>) -> tensor<6x4xi64>
  %2 = tc.concat %a {axis = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // 3 + 0 + 3 = 6.
  %3 = tc.concat %a, %z, %a {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// CHECK-LABEL: func.func @slice
// CHECK-SAME: (%[[X:[^:]+]]: tensor<2x4xf32>, %[[V:[^:]+]]: tensor<10xf32>, %[[T:[^:]+]]: tensor<4x4x4xi64>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: tc.slice %[[X]] {ends = array<i64: 2, 4>, starts = array<i64: 0, 2>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: 10>, starts = array<i64: 1>, steps = array<i64: 3>} : (tensor<10xf32>) -> tensor<3xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: -1>, starts = array<i64: 9>, steps = array<i64: -1>} : (tensor<10xf32>) -> tensor<10xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: 2>, starts = array<i64: 8>, steps = array<i64: -2>} : (tensor<10xf32>) -> tensor<3xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: -1>, starts = array<i64: 9>, steps = array<i64: -4>} : (tensor<10xf32>) -> tensor<3xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: 5>, starts = array<i64: 5>, steps = array<i64: 1>} : (tensor<10xf32>) -> tensor<0xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: 10>, starts = array<i64: 10>, steps = array<i64: 1>} : (tensor<10xf32>) -> tensor<0xf32>
// CHECK: tc.slice %[[V]] {ends = array<i64: 7>, starts = array<i64: 2>, steps = array<i64: -1>} : (tensor<10xf32>) -> tensor<0xf32>
// CHECK: tc.slice %[[T]] {ends = array<i64: 0, -1, 4>, starts = array<i64: 3, 3, 0>, steps = array<i64: -1, -2, 5>} : (tensor<4x4x4xi64>) -> tensor<3x2x1xi64>
// CHECK: tc.slice %[[S]] {ends = array<i64>, starts = array<i64>, steps = array<i64>} : (tensor<f32>) -> tensor<f32>
func.func @slice(%x: tensor<2x4xf32>, %v: tensor<10xf32>, %t: tensor<4x4x4xi64>, %s: tensor<f32>) {
  // Rows [0:2], columns [2:4].
  %0 = tc.slice %x {starts = array<i64: 0, 2>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>}
      : (tensor<2x4xf32>) -> tensor<2x2xf32>
  // [1:10:3] = 1, 4, 7.
  %1 = tc.slice %v {starts = array<i64: 1>, ends = array<i64: 10>, steps = array<i64: 3>}
      : (tensor<10xf32>) -> tensor<3xf32>
  // Full reverse [::-1]: start 9, end clamped to -1: 9, 8, ..., 0 = 10 elements.
  %2 = tc.slice %v {starts = array<i64: 9>, ends = array<i64: -1>, steps = array<i64: -1>}
      : (tensor<10xf32>) -> tensor<10xf32>
  // [8:2:-2] = 8, 6, 4.
  %3 = tc.slice %v {starts = array<i64: 8>, ends = array<i64: 2>, steps = array<i64: -2>}
      : (tensor<10xf32>) -> tensor<3xf32>
  // [9::-4] = 9, 5, 1.
  %4 = tc.slice %v {starts = array<i64: 9>, ends = array<i64: -1>, steps = array<i64: -4>}
      : (tensor<10xf32>) -> tensor<3xf32>
  // Empty slices: [5:5], [10:10], and [2:7:-1] (a backward step from below the end).
  %5 = tc.slice %v {starts = array<i64: 5>, ends = array<i64: 5>, steps = array<i64: 1>}
      : (tensor<10xf32>) -> tensor<0xf32>
  %6 = tc.slice %v {starts = array<i64: 10>, ends = array<i64: 10>, steps = array<i64: 1>}
      : (tensor<10xf32>) -> tensor<0xf32>
  %7 = tc.slice %v {starts = array<i64: 2>, ends = array<i64: 7>, steps = array<i64: -1>}
      : (tensor<10xf32>) -> tensor<0xf32>
  // Mixed: [3:0:-1] = 3, 2, 1; [3::-2] = 3, 1; [0:4:5] = 0.
  %8 = tc.slice %t {starts = array<i64: 3, 3, 0>, ends = array<i64: 0, -1, 4>, steps = array<i64: -1, -2, 5>}
      : (tensor<4x4x4xi64>) -> tensor<3x2x1xi64>
  %9 = tc.slice %s {starts = array<i64>, ends = array<i64>, steps = array<i64>}
      : (tensor<f32>) -> tensor<f32>
  return
}

// CHECK-LABEL: func.func @gather
// CHECK-SAME: (%[[T:[^:]+]]: tensor<64x32xf32>, %[[I:[^:]+]]: tensor<2x16xi64>, %[[D:[^:]+]]: tensor<3x4x5xf32>, %[[J:[^:]+]]: tensor<6xi32>, %[[S:[^:]+]]: tensor<i64>)
// CHECK: tc.gather %[[T]], %[[I]] {axis = 0 : i64} : (tensor<64x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
// CHECK: tc.gather %[[D]], %[[J]] {axis = 1 : i64} : (tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<3x6x5xf32>
// CHECK: tc.gather %[[D]], %[[S]] {axis = 2 : i64} : (tensor<3x4x5xf32>, tensor<i64>) -> tensor<3x4xf32>
// CHECK: tc.gather %[[D]], %[[I]] {axis = 2 : i64} : (tensor<3x4x5xf32>, tensor<2x16xi64>) -> tensor<3x4x2x16xf32>
// CHECK: tc.gather %[[I]], %[[S]] {axis = 0 : i64} : (tensor<2x16xi64>, tensor<i64>) -> tensor<16xi64>
func.func @gather(%t: tensor<64x32xf32>, %i: tensor<2x16xi64>, %d: tensor<3x4x5xf32>,
                  %j: tensor<6xi32>, %s: tensor<i64>) {
  // data.shape[:axis] + indices.shape + data.shape[axis+1:].
  // Embedding: [] + [2,16] + [32].
  %0 = tc.gather %t, %i {axis = 0 : i64} : (tensor<64x32xf32>, tensor<2x16xi64>) -> tensor<2x16x32xf32>
  // [3] + [6] + [5].
  %1 = tc.gather %d, %j {axis = 1 : i64} : (tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<3x6x5xf32>
  // A scalar index removes the axis: [3,4] + [] + [].
  %2 = tc.gather %d, %s {axis = 2 : i64} : (tensor<3x4x5xf32>, tensor<i64>) -> tensor<3x4xf32>
  // [3,4] + [2,16] + [].
  %3 = tc.gather %d, %i {axis = 2 : i64} : (tensor<3x4x5xf32>, tensor<2x16xi64>) -> tensor<3x4x2x16xf32>
  // [] + [] + [16].
  %4 = tc.gather %i, %s {axis = 0 : i64} : (tensor<2x16xi64>, tensor<i64>) -> tensor<16xi64>
  return
}

// CHECK-LABEL: func.func @expand
// CHECK-SAME: (%[[X:[^:]+]]: tensor<3x1xf32>, %[[V:[^:]+]]: tensor<4xf32>, %[[M:[^:]+]]: tensor<2x3xi64>, %[[S:[^:]+]]: tensor<f32>)
// CHECK: tc.expand %[[X]] {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
// CHECK: tc.expand %[[V]] {shape = array<i64: 2, 1>} : (tensor<4xf32>) -> tensor<2x4xf32>
// CHECK: tc.expand %[[M]] {shape = array<i64: 3>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK: tc.expand %[[S]] {shape = array<i64: 5, 2>} : (tensor<f32>) -> tensor<5x2xf32>
// CHECK: tc.expand %[[M]] {shape = array<i64>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK: tc.expand %[[X]] {shape = array<i64: 1, 1, 1>} : (tensor<3x1xf32>) -> tensor<1x3x1xf32>
func.func @expand(%x: tensor<3x1xf32>, %v: tensor<4xf32>, %m: tensor<2x3xi64>, %s: tensor<f32>) {
  // ONNX Expand is a two-way broadcast: [3,1] with [2,1,4] -> [2,3,4].
  %0 = tc.expand %x {shape = array<i64: 2, 1, 4>} : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  // [4] with [2,1] -> [2,4].
  %1 = tc.expand %v {shape = array<i64: 2, 1>} : (tensor<4xf32>) -> tensor<2x4xf32>
  // A shorter target keeps the input's shape: [2,3] with [3] -> [2,3].
  %2 = tc.expand %m {shape = array<i64: 3>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  %3 = tc.expand %s {shape = array<i64: 5, 2>} : (tensor<f32>) -> tensor<5x2xf32>
  %4 = tc.expand %m {shape = array<i64>} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  // Ones in the target never shrink the input: [3,1] with [1,1,1] -> [1,3,1].
  %5 = tc.expand %x {shape = array<i64: 1, 1, 1>} : (tensor<3x1xf32>) -> tensor<1x3x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @class_losses
// CHECK-SAME: (%[[L:[^:]+]]: tensor<8x10xf32>, %[[Y:[^:]+]]: tensor<8xi64>, %[[L4:[^:]+]]: tensor<2x5x3x4xf16>, %[[Y4:[^:]+]]: tensor<2x3x4xi32>)
// CHECK: tc.softmax_cross_entropy %[[L]], %[[Y]] : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: tc.softmax_cross_entropy %[[L]], %[[Y]] {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: tc.softmax_cross_entropy %[[L]], %[[Y]] {reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
// CHECK: tc.softmax_cross_entropy %[[L]], %[[Y]] {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: tc.softmax_cross_entropy %[[L4]], %[[Y4]] {ignore_index = 0 : i64, reduction = "none"} : (tensor<2x5x3x4xf16>, tensor<2x3x4xi32>) -> tensor<2x3x4xf16>
// CHECK: tc.nll_loss %[[L]], %[[Y]] : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: tc.nll_loss %[[L]], %[[Y]] {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
// CHECK: tc.nll_loss %[[L]], %[[Y]] {ignore_index = 3 : i64, reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
// CHECK: tc.nll_loss %[[L4]], %[[Y4]] {ignore_index = -1 : i64} : (tensor<2x5x3x4xf16>, tensor<2x3x4xi32>) -> tensor<f16>
func.func @class_losses(%l: tensor<8x10xf32>, %y: tensor<8xi64>,
                        %l4: tensor<2x5x3x4xf16>, %y4: tensor<2x3x4xi32>) {
  // [N, C] against [N]: mean and sum are scalars, none is [N].
  %0 = tc.softmax_cross_entropy %l, %y {reduction = "mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %1 = tc.softmax_cross_entropy %l, %y {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %2 = tc.softmax_cross_entropy %l, %y {reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
  %3 = tc.softmax_cross_entropy %l, %y {ignore_index = -100 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  // [N, C, d1, d2] against [N, d1, d2]: none is [N, d1, d2] = [2, 3, 4].
  %4 = tc.softmax_cross_entropy %l4, %y4 {reduction = "none", ignore_index = 0 : i64}
      : (tensor<2x5x3x4xf16>, tensor<2x3x4xi32>) -> tensor<2x3x4xf16>
  %5 = tc.nll_loss %l, %y : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %6 = tc.nll_loss %l, %y {reduction = "sum"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  %7 = tc.nll_loss %l, %y {reduction = "none", ignore_index = 3 : i64} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<8xf32>
  %8 = tc.nll_loss %l4, %y4 {ignore_index = -1 : i64} : (tensor<2x5x3x4xf16>, tensor<2x3x4xi32>) -> tensor<f16>
  return
}

// CHECK-LABEL: func.func @mse_loss
// CHECK-SAME: (%[[P:[^:]+]]: tensor<8x1xf32>, %[[T:[^:]+]]: tensor<8x1xf32>, %[[Q:[^:]+]]: tensor<f64>)
// CHECK: tc.mse_loss %[[P]], %[[T]] : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
// CHECK: tc.mse_loss %[[P]], %[[T]] {reduction = "sum"} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
// CHECK: tc.mse_loss %[[P]], %[[T]] {reduction = "none"} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
// CHECK: tc.mse_loss %[[Q]], %[[Q]] {reduction = "none"} : (tensor<f64>, tensor<f64>) -> tensor<f64>
func.func @mse_loss(%p: tensor<8x1xf32>, %t: tensor<8x1xf32>, %q: tensor<f64>) {
  %0 = tc.mse_loss %p, %t {reduction = "mean"} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  %1 = tc.mse_loss %p, %t {reduction = "sum"} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<f32>
  // none keeps the element-wise shape.
  %2 = tc.mse_loss %p, %t {reduction = "none"} : (tensor<8x1xf32>, tensor<8x1xf32>) -> tensor<8x1xf32>
  %3 = tc.mse_loss %q, %q {reduction = "none"} : (tensor<f64>, tensor<f64>) -> tensor<f64>
  return
}
