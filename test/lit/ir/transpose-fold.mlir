// RUN: trainc-opt %s --canonicalize -split-input-file | FileCheck %s
// RUN: trainc-opt %s -split-input-file | trainc-opt -split-input-file | FileCheck %s --check-prefix=ROUND

// Folds of tc.transpose (ir/TcFolds.cpp) and the canonicalization that turns
// a transpose of the last two axes feeding tc.matmul / tc.gemm into the
// operand's trans_a / trans_b flag; and the cases where nothing may fold.

// The flags print only when set and survive a round trip.
// ROUND-LABEL: func.func @flags_roundtrip
// ROUND: tc.matmul %arg0, %arg1 : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// ROUND: tc.matmul %arg1, %arg0 {trans_a = true, trans_b = true} : (tensor<3x4xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
func.func @flags_roundtrip(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<4x2xf32>) {
  %0 = tc.matmul %a, %b : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %1 = tc.matmul %b, %a {trans_a = true, trans_b = true} : (tensor<3x4xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0, %1 : tensor<2x4xf32>, tensor<4x2xf32>
}

// -----

// CHECK-LABEL: func.func @identity
// CHECK-NOT: tc.transpose
// CHECK: return %arg0
func.func @identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = tc.transpose %x {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Two transposes compose into one: result axis i is input axis inner[outer[i]].
// CHECK-LABEL: func.func @compose
// CHECK-NEXT: %[[T:.*]] = tc.transpose %arg0 {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @compose(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  %0 = tc.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = tc.transpose %0 {perm = array<i64: 1, 0, 2>} : (tensor<3x4x2xf32>) -> tensor<4x3x2xf32>
  return %1 : tensor<4x3x2xf32>
}

// -----

// A transpose and its inverse cancel.
// CHECK-LABEL: func.func @compose_to_identity
// CHECK-NOT: tc.transpose
// CHECK: return %arg0
func.func @compose_to_identity(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = tc.transpose %x {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  %1 = tc.transpose %0 {perm = array<i64: 2, 0, 1>} : (tensor<3x4x2xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @splat
// CHECK-NEXT: %[[C:.*]] = tc.constant dense<1.500000e+00> : tensor<4x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @splat() -> tensor<4x3xf32> {
  %c = tc.constant dense<1.5> : tensor<3x4xf32>
  %0 = tc.transpose %c {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A constant that is not a splat stays transposed.
// CHECK-LABEL: func.func @not_splat
// CHECK: tc.transpose
func.func @not_splat() -> tensor<2x2xf32> {
  %c = tc.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %0 = tc.transpose %c {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// The weight transpose before a MatMul becomes trans_b; a 2-D operand of a
// batched product keeps its broadcasting.
// CHECK-LABEL: func.func @matmul_rhs
// CHECK-NEXT: %[[Y:.*]] = tc.matmul %arg0, %arg1 {trans_b = true} : (tensor<2x16x32xf32>, tensor<64x32xf32>) -> tensor<2x16x64xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_rhs(%a: tensor<2x16x32xf32>, %w: tensor<64x32xf32>) -> tensor<2x16x64xf32> {
  %t = tc.transpose %w {perm = array<i64: 1, 0>} : (tensor<64x32xf32>) -> tensor<32x64xf32>
  %y = tc.matmul %a, %t : (tensor<2x16x32xf32>, tensor<32x64xf32>) -> tensor<2x16x64xf32>
  return %y : tensor<2x16x64xf32>
}

// -----

// Batched lhs: the last two axes swap, the batch axes stay.
// CHECK-LABEL: func.func @matmul_lhs_batched
// CHECK-NEXT: %[[Y:.*]] = tc.matmul %arg0, %arg1 {trans_a = true} : (tensor<2x3x8x5xf32>, tensor<2x3x8x7xf32>) -> tensor<2x3x5x7xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_lhs_batched(%a: tensor<2x3x8x5xf32>, %b: tensor<2x3x8x7xf32>) -> tensor<2x3x5x7xf32> {
  %t = tc.transpose %a {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x3x8x5xf32>) -> tensor<2x3x5x8xf32>
  %y = tc.matmul %t, %b : (tensor<2x3x5x8xf32>, tensor<2x3x8x7xf32>) -> tensor<2x3x5x7xf32>
  return %y : tensor<2x3x5x7xf32>
}

// -----

// A transpose into an operand that is already transposed clears the flag
// (a false flag is not printed).
// CHECK-LABEL: func.func @matmul_flip_back
// CHECK-NEXT: %[[Y:.*]] = tc.matmul %arg0, %arg1 {trans_b = true} : (tensor<3x4xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
// CHECK-NEXT: return %[[Y]]
func.func @matmul_flip_back(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>) -> tensor<3x5xf32> {
  %t = tc.transpose %a {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %y = tc.matmul %t, %b {trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>) -> tensor<3x5xf32>
  return %y : tensor<3x5xf32>
}

// -----

// A transpose with another user still feeds the flag, and stays for that user.
// CHECK-LABEL: func.func @matmul_other_user
// CHECK-NEXT: %[[T:.*]] = tc.transpose %arg1 {perm = array<i64: 1, 0>}
// CHECK-NEXT: %[[Y:.*]] = tc.matmul %arg0, %arg1 {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: return %[[Y]], %[[T]]
func.func @matmul_other_user(%a: tensor<2x4xf32>, %w: tensor<3x4xf32>) -> (tensor<2x3xf32>, tensor<4x3xf32>) {
  %t = tc.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %y = tc.matmul %a, %t : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %y, %t : tensor<2x3xf32>, tensor<4x3xf32>
}

// -----

// A transpose of other axes than the last two does not fold into the product.
// CHECK-LABEL: func.func @matmul_other_axes
// CHECK-NEXT: %[[T:.*]] = tc.transpose %arg0 {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT: tc.matmul %[[T]], %arg1 : (tensor<3x2x4xf32>, tensor<4x5xf32>)
func.func @matmul_other_axes(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x2x5xf32> {
  %t = tc.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %y = tc.matmul %t, %b : (tensor<3x2x4xf32>, tensor<4x5xf32>) -> tensor<3x2x5xf32>
  return %y : tensor<3x2x5xf32>
}

// -----

// A 3-D permutation that swaps the matrix axes but also moves the batch axis
// (2, 1, 0 here: result [k, m, batch]) does not fold either.
// CHECK-LABEL: func.func @matmul_moves_batch
// CHECK-NEXT: %[[T:.*]] = tc.transpose %arg1 {perm = array<i64: 2, 1, 0>}
// CHECK-NEXT: tc.matmul %arg0, %[[T]] : (tensor<4x2x3xf32>, tensor<4x3x5xf32>)
func.func @matmul_moves_batch(%a: tensor<4x2x3xf32>, %b: tensor<5x3x4xf32>) -> tensor<4x2x5xf32> {
  %t = tc.transpose %b {perm = array<i64: 2, 1, 0>} : (tensor<5x3x4xf32>) -> tensor<4x3x5xf32>
  %y = tc.matmul %a, %t : (tensor<4x2x3xf32>, tensor<4x3x5xf32>) -> tensor<4x2x5xf32>
  return %y : tensor<4x2x5xf32>
}

// -----

// Gemm: a transposed A and B become its flags (a set trans_b flips back);
// the bias and alpha stay.
// CHECK-LABEL: func.func @gemm
// CHECK-NEXT: %[[Y:.*]] = tc.gemm %arg0, %arg1, %arg2 {alpha = 5.000000e-01 : f32, trans_a = true} : (tensor<4x8xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: return %[[Y]]
func.func @gemm(%a: tensor<4x8xf32>, %b: tensor<4x3xf32>, %c: tensor<3xf32>) -> tensor<8x3xf32> {
  %ta = tc.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %tb = tc.transpose %b {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = tc.gemm %ta, %tb, %c {alpha = 0.5 : f32, trans_b = true} : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// Transpose of a transpose, then into the product: both folds together.
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[Y:.*]] = tc.matmul %arg0, %arg1 {trans_b = true}
// CHECK-NEXT: return %[[Y]]
func.func @chain(%a: tensor<2x5x4xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x5x3xf32> {
  %0 = tc.transpose %b {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = tc.transpose %0 {perm = array<i64: 1, 2, 0>} : (tensor<3x2x4xf32>) -> tensor<2x4x3xf32>
  %y = tc.matmul %a, %1 : (tensor<2x5x4xf32>, tensor<2x4x3xf32>) -> tensor<2x5x3xf32>
  return %y : tensor<2x5x3xf32>
}
