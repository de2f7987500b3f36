// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// What the verifier refuses about a tc.fused group headed by a matmul (a
// GEMM and its epilogue): the product is computed in a yielded f32 result,
// so it cannot be yielded itself, a group without an f32 result has nowhere
// to compute it, and it must have the group's iteration shape.

func.func @product_yielded(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>) -> tensor<8x64xf32> {
  %0:2 = tc.fused "matmul_relu" (%x, %w) : (tensor<8x32xf32>, tensor<32x64xf32>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>):
    // expected-error @+1 {{heading a tc.fused group is not one of its results}}
    %p = tc.matmul %a, %b : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %r = tc.relu %p : tensor<8x64xf32>
    tc.yield %r, %p : tensor<8x64xf32>, tensor<8x64xf32>
  }
  return %0#0 : tensor<8x64xf32>
}

// -----

func.func @no_f32_result(%x: tensor<8x32xf32>, %w: tensor<32x64xf32>, %y: tensor<8x64xf32>) -> tensor<8x64xi1> {
  %0 = tc.fused "matmul_greater" (%x, %w, %y) : (tensor<8x32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1> {
  ^bb0(%a: tensor<8x32xf32>, %b: tensor<32x64xf32>, %c: tensor<8x64xf32>):
    // expected-error @+1 {{heads a tc.fused group without an f32 result to compute in}}
    %p = tc.matmul %a, %b : (tensor<8x32xf32>, tensor<32x64xf32>) -> tensor<8x64xf32>
    %g = tc.greater %p, %c : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xi1>
    tc.yield %g : tensor<8x64xi1>
  }
  return %0 : tensor<8x64xi1>
}

// -----

func.func @broadcast_product(%r: tensor<1x32xf32>, %w: tensor<32x64xf32>, %y: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %0 = tc.fused "matmul_add" (%r, %w, %y) : (tensor<1x32xf32>, tensor<32x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<1x32xf32>, %b: tensor<32x64xf32>, %c: tensor<8x64xf32>):
    // expected-error @+1 {{heading a tc.fused group computes 'tensor<1x64xf32>', not the group's iteration shape}}
    %p = tc.matmul %a, %b : (tensor<1x32xf32>, tensor<32x64xf32>) -> tensor<1x64xf32>
    %s = tc.add %c, %p : (tensor<8x64xf32>, tensor<1x64xf32>) -> tensor<8x64xf32>
    tc.yield %s : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}

// -----

func.func @matmul_not_first(%x: tensor<8x64xf32>, %w: tensor<64x64xf32>) -> tensor<8x64xf32> {
  %0 = tc.fused "relu_matmul" (%x, %w) : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32> {
  ^bb0(%a: tensor<8x64xf32>, %b: tensor<64x64xf32>):
    %r = tc.relu %a : tensor<8x64xf32>
    // expected-error @+1 {{cannot be part of a tc.fused group (not pointwise, nor a slice of one of its inputs)}}
    %p = tc.matmul %r, %b : (tensor<8x64xf32>, tensor<64x64xf32>) -> tensor<8x64xf32>
    tc.yield %p : tensor<8x64xf32>
  }
  return %0 : tensor<8x64xf32>
}

// -----

// A slice in a group reads one of the group's inputs (the kernel reads its
// elements in place), not a value the group computes.
func.func @slice_of_computed(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %0 = tc.fused "relu_slice" (%x) : (tensor<8x32xf32>) -> tensor<8x32xf32> {
  ^bb0(%a: tensor<8x32xf32>):
    %r = tc.relu %a : tensor<8x32xf32>
    // expected-error @+1 {{cannot be part of a tc.fused group (not pointwise, nor a slice of one of its inputs)}}
    %s = tc.slice %r {starts = array<i64: 0, 0>, ends = array<i64: 8, 32>, steps = array<i64: 1, 1>} : (tensor<8x32xf32>) -> tensor<8x32xf32>
    tc.yield %s : tensor<8x32xf32>
  }
  return %0 : tensor<8x32xf32>
}

// -----

// A normalization head reads the value its prologue computes from memory:
// the group must yield it.
func.func @prologue_not_kept(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>) -> tensor<2x3x8xf32> {
  %0 = tc.fused "exp_layer_norm" (%x, %g) : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32> {
  ^bb0(%a: tensor<2x3x8xf32>, %b: tensor<8xf32>):
    %e = tc.exp %a : tensor<2x3x8xf32>
    // expected-error @+1 {{heading a tc.fused group reads a value its prologue computes from memory: the group must yield it}}
    %n = tc.layer_norm %e, %b {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<8xf32>) -> tensor<2x3x8xf32>
    tc.yield %n : tensor<2x3x8xf32>
  }
  return %0 : tensor<2x3x8xf32>
}

// -----

// Only the streamed operand (here the input) may come from the prologue.
func.func @scale_from_prologue(%x: tensor<2x3x8xf32>, %g: tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  %0:2 = tc.fused "layer_norm" (%x, %g) : (tensor<2x3x8xf32>, tensor<8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3x8xf32>) {
  ^bb0(%a: tensor<2x3x8xf32>, %b: tensor<8xf32>):
    %e = tc.exp %a : tensor<2x3x8xf32>
    // expected-error @+1 {{heading a tc.fused group reads its operands but the streamed one from the group's inputs}}
    %n = tc.layer_norm %a, %e {axis = 2 : i64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    tc.yield %n, %e : tensor<2x3x8xf32>, tensor<2x3x8xf32>
  }
  return %0#0, %0#1 : tensor<2x3x8xf32>, tensor<2x3x8xf32>
}

// -----

// A batch norm's statistics are results, not values its epilogue reads.
func.func @statistic_read(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0:3 = tc.fused "batch_norm_add" (%x, %g, %b, %m, %v) : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a0: tensor<2x4x3x3xf32>, %a1: tensor<4xf32>, %a2: tensor<4xf32>, %a3: tensor<4xf32>, %a4: tensor<4xf32>):
    // expected-error @+1 {{heading a tc.fused group: its result 1 is read inside the group (only its first is)}}
    %y, %rm, %rv = tc.batch_norm %a0, %a1, %a2, %a3, %a4 {training = true} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
    %s = tc.add %y, %rm : (tensor<2x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x3x3xf32>
    tc.yield %s, %rm, %rv : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
  }
  return %0#0, %0#1, %0#2 : tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The group's first result has its iteration shape, not a statistic's.
func.func @statistic_first(%x: tensor<2x4x3x3xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>) {
  // expected-error @+1 {{yields a normalization's statistics first}}
  %0:3 = tc.fused "batch_norm_relu" (%x, %g, %b, %m, %v) : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>) {
  ^bb0(%a0: tensor<2x4x3x3xf32>, %a1: tensor<4xf32>, %a2: tensor<4xf32>, %a3: tensor<4xf32>, %a4: tensor<4xf32>):
    %y, %rm, %rv = tc.batch_norm %a0, %a1, %a2, %a3, %a4 {training = true} : (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x3x3xf32>, tensor<4xf32>, tensor<4xf32>)
    %r = tc.relu %y : tensor<2x4x3x3xf32>
    tc.yield %rm, %r, %rv : tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>
  }
  return %0#0, %0#1, %0#2 : tensor<4xf32>, tensor<2x4x3x3xf32>, tensor<4xf32>
}
