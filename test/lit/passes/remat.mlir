// RUN: trainc-opt %s --trainc-remat --split-input-file --mlir-print-local-scope --mlir-print-debuginfo | FileCheck %s

// The GELU's output is kept for fc2's weight gradient and its input for the
// GELU's gradient: keeping the input alone is enough, the output is
// recomputed just before the weight gradient reads it. The forward's GELU
// stays (fc2 reads it).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tc.remat = {peak_after = {{[0-9]+}} : i64, peak_before = {{[0-9]+}} : i64, recomputed_contractions = 0 : i64, recomputed_ops = 1 : i64, saved_after = 1024 : i64, saved_before = 2048 : i64}
// CHECK: %[[H:.*]] = tc.matmul %arg0, %arg1 {{.*}}loc("fc1")
// CHECK-NEXT: %[[G:.*]] = tc.gelu %[[H]] : tensor<8x32xf32> loc("act")
// CHECK-NEXT: tc.matmul %[[G]], %arg2 {{.*}}loc("fc2")
// CHECK-NEXT: %[[G2:.*]] = tc.gelu %[[H]] {tc.recomputed = 0 : i64} : tensor<8x32xf32> loc("recompute of act"(fused<#tc.phase<recompute>>
// CHECK-NEXT: tc.matmul %[[G2]], %arg3 {trans_a = true} {{.*}}loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
// CHECK-NEXT: tc.matmul %arg3, %arg2
// CHECK-NEXT: tc.mul %{{.*}}, %[[H]] {{.*}}loc("backward of act"(fused<#tc.phase<backward>>["act"]))
func.func @train_step(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x4xf32>, %dy: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>) {
  %h = tc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("fc1")
  %g = tc.gelu %h : tensor<8x32xf32> loc("act")
  %y = tc.matmul %g, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc("fc2")
  %dw2 = tc.matmul %g, %dy {trans_a = true} : (tensor<8x32xf32>, tensor<8x4xf32>) -> tensor<32x4xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
  %dg = tc.matmul %dy, %w2 {trans_b = true} : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
  %dh = tc.mul %dg, %h : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of act"(fused<#tc.phase<backward>>["act"]))
  return %y, %dw2, %dh : tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>
}

// -----

// A chain (relu, then training dropout with the step's key) whose output
// only the backward reads: recomputed from the matmul's output, which the
// ReLU's gradient keeps anyway, each op once, before its first reader. The
// dropout keeps its key and stream: the same mask. The forward's copies
// are erased.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: recomputed_ops = 2 : i64
// CHECK: %[[H:.*]] = tc.matmul %arg0, %arg1
// CHECK-NEXT: %[[L:.*]] = tc.reduce_sum %[[H]]
// CHECK-NEXT: %[[DH:.*]] = tc.mul %arg3, %[[H]] {{.*}}loc("backward of act"(fused<#tc.phase<backward>>["act"]))
// CHECK-NEXT: %[[R:.*]] = tc.relu %[[H]] {tc.recomputed = 0 : i64} {{.*}}loc("recompute of act"(fused<#tc.phase<recompute>>
// CHECK-NEXT: %[[D:.*]] = tc.dropout %[[R]], %arg2 {ratio = 1.000000e-01 : f32, stream = 7 : i64, tc.recomputed = 0 : i64, training = true} {{.*}}loc("recompute of drop"(fused<#tc.phase<recompute>>
// CHECK-NEXT: tc.mul %[[D]], %arg3 {{.*}}loc("backward of drop"(fused<#tc.phase<backward>>["drop"]))
// CHECK-NEXT: tc.add %[[D]], %[[DH]]
// CHECK-NOT: tc.relu
func.func @train_step(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %key: tensor<2xi64>, %dy: tensor<8x32xf32>)
    -> (tensor<f32>, tensor<8x32xf32>, tensor<8x32xf32>) {
  %h = tc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("fc1")
  %r = tc.relu %h : tensor<8x32xf32> loc("act")
  %d = tc.dropout %r, %key {ratio = 0.1 : f32, stream = 7 : i64, training = true} : tensor<8x32xf32>, tensor<2xi64> loc("drop")
  %l = tc.reduce_sum %h {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x32xf32>) -> tensor<f32> loc("loss")
  %dh = tc.mul %dy, %h : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of act"(fused<#tc.phase<backward>>["act"]))
  %a = tc.mul %d, %dy : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of drop"(fused<#tc.phase<backward>>["drop"]))
  %b = tc.add %d, %dh : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of drop"(fused<#tc.phase<backward>>["drop"]))
  return %l, %a, %b : tensor<f32>, tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Must not fire: the ReLU's output is what both of its backward readers
// need; recomputing it would keep the matmul's output instead, as large and
// further from the backward.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: recomputed_ops = 0 : i64
// CHECK-NOT: tc.recomputed
func.func @train_step(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x4xf32>, %dy: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>) {
  %h = tc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("fc1")
  %r = tc.relu %h : tensor<8x32xf32> loc("act")
  %y = tc.matmul %r, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc("fc2")
  %dw2 = tc.matmul %r, %dy {trans_a = true} : (tensor<8x32xf32>, tensor<8x4xf32>) -> tensor<32x4xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
  %dg = tc.matmul %dy, %w2 {trans_b = true} : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
  %dh = tc.mul %dg, %r : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of act"(fused<#tc.phase<backward>>["act"]))
  return %y, %dw2, %dh : tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>
}

// -----

// Must not fire: without a budget a GEMM is never recomputed, and a value
// the step returns is kept by the return anyway.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: recomputed_ops = 0 : i64
// CHECK-NOT: tc.recomputed
func.func @train_step(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %dy: tensor<8x32xf32>)
    -> (tensor<8x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>) {
  %h = tc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("fc1")
  %o = tc.relu %h : tensor<8x32xf32> loc("out")
  %dw = tc.matmul %x, %dy {trans_a = true} : (tensor<8x16xf32>, tensor<8x32xf32>) -> tensor<16x32xf32> loc("backward of fc1"(fused<#tc.phase<backward>>["fc1"]))
  %t = tc.mul %dy, %h : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of out"(fused<#tc.phase<backward>>["out"]))
  %u = tc.mul %t, %o : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of out"(fused<#tc.phase<backward>>["out"]))
  return %o, %dw, %u : tensor<8x32xf32>, tensor<16x32xf32>, tensor<8x32xf32>
}

// -----

// Must not fire: a function with no backward.
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: tc.remat
// CHECK-NOT: tc.recomputed
func.func @train_step(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %r = tc.relu %x : tensor<8x32xf32> loc("act")
  %s = tc.sigmoid %r : tensor<8x32xf32> loc("act2")
  return %s : tensor<8x32xf32>
}

// -----

// A recomputed pointwise chain read both by a pointwise op of the backward
// (fusion merges the chain into it: nothing stored) and by a library op
// (which needs it stored) is cloned once for each kind of reader: the
// stored clone is only what the GEMM reads.
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: recomputed_ops = 4 : i64
// CHECK: %[[H:.*]] = tc.matmul %arg0, %arg1
// CHECK: %[[T1:.*]] = tc.tanh %[[H]] {tc.recomputed = 0 : i64}
// CHECK-NEXT: %[[S1:.*]] = tc.sigmoid %[[T1]] {tc.recomputed = 0 : i64}
// CHECK-NEXT: tc.mul %[[S1]], %arg2 {{.*}}loc("backward of act"(fused<#tc.phase<backward>>["act"]))
// CHECK-NEXT: %[[T2:.*]] = tc.tanh %[[H]] {tc.recomputed = 1 : i64}
// CHECK-NEXT: %[[S2:.*]] = tc.sigmoid %[[T2]] {tc.recomputed = 1 : i64}
// CHECK-NEXT: tc.matmul %[[S2]], %arg2 {trans_a = true} {{.*}}loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
func.func @train_step(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %dy: tensor<8x32xf32>)
    -> (tensor<f32>, tensor<8x32xf32>, tensor<32x32xf32>, tensor<8x32xf32>) {
  %h = tc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("fc1")
  %t = tc.tanh %h : tensor<8x32xf32> loc("act0")
  %s = tc.sigmoid %t : tensor<8x32xf32> loc("act")
  %l = tc.reduce_sum %s {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x32xf32>) -> tensor<f32> loc("loss")
  %a = tc.mul %s, %dy : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of act"(fused<#tc.phase<backward>>["act"]))
  %dw = tc.matmul %s, %dy {trans_a = true} : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<32x32xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["fc2"]))
  %dh = tc.mul %dy, %h : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of fc1"(fused<#tc.phase<backward>>["fc1"]))
  return %l, %a, %dw, %dh : tensor<f32>, tensor<8x32xf32>, tensor<32x32xf32>, tensor<8x32xf32>
}

// -----

// A parameter's low-precision copy, made at the top of the step, moves to
// just before its first reader (it was live from the step's start); the
// backward reads a copy of its own, recomputed from the parameter.
// CHECK-LABEL: func.func @train_step
// CHECK: %[[R:.*]] = tc.relu %arg0
// CHECK-NEXT: %[[C:.*]] = tc.cast %arg1 {to = bf16} {{.*}}loc("w copy")
// CHECK-NEXT: tc.matmul %[[R]], %[[C]]
// CHECK: %[[C2:.*]] = tc.cast %arg1 {tc.recomputed = 0 : i64, to = bf16} {{.*}}loc("recompute of w copy"(fused<#tc.phase<recompute>>
// CHECK-NEXT: tc.matmul %arg2, %[[C2]] : {{.*}}loc("backward of fc"(fused<#tc.phase<backward>>["fc"]))
func.func @train_step(%x: tensor<8x16xbf16>, %w: tensor<32x16xf32>, %dy: tensor<8x32xbf16>)
    -> (tensor<8x32xbf16>, tensor<8x16xbf16>) {
  %c = tc.cast %w {to = bf16} : (tensor<32x16xf32>) -> tensor<32x16xbf16> loc("w copy")
  %r = tc.relu %x : tensor<8x16xbf16> loc("act")
  %y = tc.matmul %r, %c {trans_b = true} : (tensor<8x16xbf16>, tensor<32x16xbf16>) -> tensor<8x32xbf16> loc("fc")
  %dx = tc.matmul %dy, %c : (tensor<8x32xbf16>, tensor<32x16xbf16>) -> tensor<8x16xbf16> loc("backward of fc"(fused<#tc.phase<backward>>["fc"]))
  return %y, %dx : tensor<8x32xbf16>, tensor<8x16xbf16>
}

// -----

// Names mark nothing: the first case with its forward nodes named as if they
// were the backward's or remat's, unmarked, is rematerialized the same way
// (a name that fired would put the backward's start at the first op, and
// nothing would be recomputed).
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: recomputed_ops = 1 : i64, saved_after = 1024 : i64, saved_before = 2048 : i64
// CHECK: %[[H:.*]] = tc.matmul %arg0, %arg1 {{.*}}loc("backward of fc1")
// CHECK-NEXT: %[[G:.*]] = tc.gelu %[[H]] : tensor<8x32xf32> loc("recompute of act")
// CHECK-NEXT: tc.matmul %[[G]], %arg2 {{.*}}loc("backward of fc2")
// CHECK-NEXT: %[[G2:.*]] = tc.gelu %[[H]] {tc.recomputed = 0 : i64} : tensor<8x32xf32> loc("recompute of recompute of act"(fused<#tc.phase<recompute>>
// CHECK-NEXT: tc.matmul %[[G2]], %arg3 {trans_a = true}
func.func @train_step(%x: tensor<8x16xf32>, %w1: tensor<16x32xf32>, %w2: tensor<32x4xf32>, %dy: tensor<8x4xf32>)
    -> (tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>) {
  %h = tc.matmul %x, %w1 : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("backward of fc1")
  %g = tc.gelu %h : tensor<8x32xf32> loc("recompute of act")
  %y = tc.matmul %g, %w2 : (tensor<8x32xf32>, tensor<32x4xf32>) -> tensor<8x4xf32> loc("backward of fc2")
  %dw2 = tc.matmul %g, %dy {trans_a = true} : (tensor<8x32xf32>, tensor<8x4xf32>) -> tensor<32x4xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["backward of fc2"]))
  %dg = tc.matmul %dy, %w2 {trans_b = true} : (tensor<8x4xf32>, tensor<32x4xf32>) -> tensor<8x32xf32> loc("backward of fc2"(fused<#tc.phase<backward>>["backward of fc2"]))
  %dh = tc.mul %dg, %h : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32> loc("backward of act"(fused<#tc.phase<backward>>["recompute of act"]))
  return %y, %dw2, %dh : tensor<8x4xf32>, tensor<32x4xf32>, tensor<8x32xf32>
}
