// RUN: trainc-opt %s --trainc-remat=memory-budget=40000 --mlir-print-local-scope --mlir-print-debuginfo | FileCheck %s
// RUN: trainc-opt %s --trainc-remat --mlir-print-local-scope --mlir-print-debuginfo | FileCheck %s --check-prefix=AUTO
// RUN: trainc-opt %s --trainc-remat=memory-budget=20000 --verify-diagnostics

// The GEMM's output (16 KiB) is kept through a 32 KiB temporary of the
// backward: a peak of 48 KiB. Under a 40000-byte budget the GEMM is
// recomputed just before its backward reader, which brings the peak to the
// temporary's 32 KiB. Without a budget a GEMM is never recomputed. Under
// 20000 bytes nothing fits: the error names the smallest peak reached.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: peak_after = 32776 : i64, peak_before = 49160 : i64, recomputed_contractions = 1 : i64, recomputed_ops = 1 : i64
// CHECK: %[[H:.*]] = tc.matmul %arg0, %arg1 {{.*}}loc("fc")
// CHECK-NEXT: tc.reduce_sum %[[H]]
// CHECK-NEXT: tc.mul %arg2, %arg2
// CHECK-NEXT: tc.reduce_sum
// CHECK-NEXT: %[[H2:.*]] = tc.matmul %arg0, %arg1 {tc.recomputed = 0 : i64} {{.*}}loc("recompute of fc"(fused<#tc.phase<recompute>>
// CHECK-NEXT: tc.matmul %[[H2]], %arg3 {trans_a = true} {{.*}}loc("backward of fc"(fused<#tc.phase<backward>>["fc"]))
// AUTO: recomputed_ops = 0 : i64
// AUTO-NOT: tc.recomputed
// expected-error @+1 {{--memory-budget=20000 bytes cannot be met: the smallest peak of live bytes rematerialization reaches is 32776 bytes}}
func.func @train_step(%x: tensor<64x16xf32>, %w: tensor<16x64xf32>, %big: tensor<128x64xf32>, %dy: tensor<64x4xf32>)
    -> (tensor<f32>, tensor<f32>, tensor<64x4xf32>) {
  %h = tc.matmul %x, %w : (tensor<64x16xf32>, tensor<16x64xf32>) -> tensor<64x64xf32> loc("fc")
  %l = tc.reduce_sum %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<64x64xf32>) -> tensor<f32> loc("loss")
  %t = tc.mul %big, %big : (tensor<128x64xf32>, tensor<128x64xf32>) -> tensor<128x64xf32> loc("backward of loss"(fused<#tc.phase<backward>>["loss"]))
  %s = tc.reduce_sum %t {axes = array<i64: 0, 1>, keepdims = false} : (tensor<128x64xf32>) -> tensor<f32> loc("backward of loss"(fused<#tc.phase<backward>>["loss"]))
  %dw = tc.matmul %h, %dy {trans_a = true} : (tensor<64x64xf32>, tensor<64x4xf32>) -> tensor<64x4xf32> loc("backward of fc"(fused<#tc.phase<backward>>["fc"]))
  return %l, %s, %dw : tensor<f32>, tensor<f32>, tensor<64x4xf32>
}
