// RUN: trainc-opt %s --canonicalize -split-input-file | FileCheck %s

// Folds of tc.cast (ir/TcFolds.cpp): casts that change nothing go, a cast to
// f32 of a low-precision product becomes its out_type; and the casts that
// round, which must stay.

// A cast to the input's own type, and a round trip through an exact
// widening (what autodiff leaves between bf16 ops), fold to the input.
// CHECK-LABEL: func.func @exact
// CHECK-NEXT: return %arg0, %arg0
func.func @exact(%x: tensor<4xbf16>) -> (tensor<4xbf16>, tensor<4xbf16>) {
  %0 = tc.cast %x {to = bf16} : (tensor<4xbf16>) -> tensor<4xbf16>
  %1 = tc.cast %x {to = f32} : (tensor<4xbf16>) -> tensor<4xf32>
  %2 = tc.cast %1 {to = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
  return %0, %2 : tensor<4xbf16>, tensor<4xbf16>
}

// -----

// Through an exact widening to a third type: the source is cast directly.
// CHECK-LABEL: func.func @skip_widening
// CHECK-NEXT: %[[C:.*]] = tc.cast %arg0 {to = f16} : (tensor<4xbf16>) -> tensor<4xf16>
// CHECK-NEXT: return %[[C]]
func.func @skip_widening(%x: tensor<4xbf16>) -> tensor<4xf16> {
  %0 = tc.cast %x {to = f32} : (tensor<4xbf16>) -> tensor<4xf32>
  %1 = tc.cast %0 {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
  return %1 : tensor<4xf16>
}

// -----

// Must not fold: f32 -> bf16 -> f32 rounds, and so do bf16 -> f16 and
// f32 -> i64 -> f32.
// CHECK-LABEL: func.func @rounding
// CHECK: tc.cast %arg0 {to = bf16}
// CHECK: tc.cast %{{.*}} {to = f32}
// CHECK: tc.cast %arg1 {to = f16}
// CHECK: tc.cast %{{.*}} {to = bf16}
// CHECK: tc.cast %arg0 {to = i64}
// CHECK: tc.cast %{{.*}} {to = f32}
func.func @rounding(%x: tensor<4xf32>, %y: tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>) {
  %0 = tc.cast %x {to = bf16} : (tensor<4xf32>) -> tensor<4xbf16>
  %1 = tc.cast %0 {to = f32} : (tensor<4xbf16>) -> tensor<4xf32>
  %2 = tc.cast %y {to = f16} : (tensor<4xbf16>) -> tensor<4xf16>
  %3 = tc.cast %2 {to = bf16} : (tensor<4xf16>) -> tensor<4xbf16>
  %4 = tc.cast %x {to = i64} : (tensor<4xf32>) -> tensor<4xi64>
  %5 = tc.cast %4 {to = f32} : (tensor<4xi64>) -> tensor<4xf32>
  return %1, %3, %5 : tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>
}

// -----

// A bf16 product that is only widened keeps its f32 sum: out_type = f32.
// CHECK-LABEL: func.func @into_product
// CHECK-NEXT: %[[M:.*]] = tc.matmul %arg0, %arg1 {out_type = f32, trans_a = true} : (tensor<3x2xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
// CHECK-NEXT: %[[G:.*]] = tc.gemm %arg0, %arg1 {out_type = f32, trans_a = true} : (tensor<3x2xbf16>, tensor<3x4xbf16>) -> tensor<2x4xf32>
// CHECK-NEXT: return %[[M]], %[[G]]
func.func @into_product(%a: tensor<3x2xbf16>, %b: tensor<3x4xbf16>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %0 = tc.matmul %a, %b {trans_a = true} : (tensor<3x2xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  %1 = tc.cast %0 {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %2 = tc.gemm %a, %b {trans_a = true} : (tensor<3x2xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  %3 = tc.cast %2 {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  return %1, %3 : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// The widened product stays where the product was, not where the cast is (a
// weight gradient's cast comes at the end of the backward).
// CHECK-LABEL: func.func @product_in_place
// CHECK-NEXT: %[[M:.*]] = tc.matmul %arg0, %arg1 {out_type = f32, trans_a = true}
// CHECK-NEXT: %[[R:.*]] = tc.relu %arg2
// CHECK-NEXT: return %[[M]], %[[R]]
func.func @product_in_place(%a: tensor<3x2xbf16>, %b: tensor<3x4xbf16>, %x: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>) {
  %0 = tc.matmul %a, %b {trans_a = true} : (tensor<3x2xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  %1 = tc.relu %x : tensor<4xf32>
  %2 = tc.cast %0 {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  return %2, %1 : tensor<2x4xf32>, tensor<4xf32>
}

// -----

// Must not fire: the bf16 product has another reader, or the gemm's C is
// bf16 (it would have to be f32 too).
// CHECK-LABEL: func.func @product_kept
// CHECK: %[[M:.*]] = tc.matmul %arg0, %arg1 : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
// CHECK: tc.cast %[[M]] {to = f32}
// CHECK: %[[G:.*]] = tc.gemm %arg0, %arg1, %arg2 : (tensor<2x3xbf16>, tensor<3x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>
// CHECK: tc.cast %[[G]] {to = f32}
func.func @product_kept(%a: tensor<2x3xbf16>, %b: tensor<3x4xbf16>, %c: tensor<4xbf16>)
    -> (tensor<2x4xf32>, tensor<2x4xbf16>, tensor<2x4xf32>) {
  %0 = tc.matmul %a, %b : (tensor<2x3xbf16>, tensor<3x4xbf16>) -> tensor<2x4xbf16>
  %1 = tc.cast %0 {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  %2 = tc.gemm %a, %b, %c : (tensor<2x3xbf16>, tensor<3x4xbf16>, tensor<4xbf16>) -> tensor<2x4xbf16>
  %3 = tc.cast %2 {to = f32} : (tensor<2x4xbf16>) -> tensor<2x4xf32>
  return %1, %0, %3 : tensor<2x4xf32>, tensor<2x4xbf16>, tensor<2x4xf32>
}
