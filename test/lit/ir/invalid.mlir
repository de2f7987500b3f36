// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// One case per verifier and shape-function error path of the tc dialect
// (ir/TcOps.cpp) and per ODS constraint worth guarding (ir/TcOps.td).
//
// A shape function that fails during verification reports its own message,
// then the InferTypeOpInterface verifier adds "failed to infer returned
// types". Ops whose custom syntax has no result type (unary ops, softmax,
// constant) infer it while parsing: there the shape error is a parse error
// and comes alone.

//===----------------------------------------------------------------------===//
// tc.param
//===----------------------------------------------------------------------===//

// expected-error @+1 {{'tc.param' op initial value has type 'tensor<3xf32>' but the parameter is 'tensor<4xf32>'}}
tc.param @w trainable : tensor<4xf32> = dense<0.0> : tensor<3xf32>

// -----

// Same shape, other element type.
// expected-error @+1 {{'tc.param' op initial value has type 'tensor<4xi32>' but the parameter is 'tensor<4xf32>'}}
tc.param @w : tensor<4xf32> = dense<0> : tensor<4xi32>

// -----

// expected-error @+1 {{'tc.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
tc.param @w : tensor<?x4xf32>

// -----

// expected-error @+1 {{'tc.param' op attribute 'type' failed to satisfy constraint: type attribute of statically shaped tensor}}
tc.param @w : tensor<4xi8>

// -----

func.func @param_in_function() {
  // expected-error @+1 {{'tc.param' op expects parent op 'builtin.module'}}
  tc.param @w : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// tc.constant
//===----------------------------------------------------------------------===//

// -----

func.func @constant_not_tensor() {
  // expected-error @+1 {{expects a ranked tensor value}}
  %0 = tc.constant dense<1.0> : vector<4xf32>
  return
}

// -----

func.func @constant_bad_element() {
  // expected-error @+1 {{'tc.constant' op result #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer values, but got 'tensor<4xi8>'}}
  %0 = tc.constant dense<1> : tensor<4xi8>
  return
}

//===----------------------------------------------------------------------===//
// Pointwise unary ops
//===----------------------------------------------------------------------===//

// -----

func.func @relu_integer(%x: tensor<4xi64>) {
  // expected-error @+1 {{'tc.relu' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<4xi64>'}}
  %0 = tc.relu %x : tensor<4xi64>
  return
}

// -----

func.func @neg_bool(%x: tensor<4xi1>) {
  // expected-error @+1 {{'tc.neg' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer values, but got 'tensor<4xi1>'}}
  %0 = tc.neg %x : tensor<4xi1>
  return
}

// -----

func.func @not_float(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.not' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tc.not %x : tensor<4xf32>
  return
}

// -----

func.func @exp_dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{'tc.exp' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<?xf32>'}}
  %0 = tc.exp %x : tensor<?xf32>
  return
}

// -----

func.func @gelu_bad_approximate(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.gelu' op approximate must be 'none' or 'tanh', got 'fast'}}
  %0 = tc.gelu %x {approximate = "fast"} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_one(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.dropout' op ratio must be in [0, 1), got 1.000000e+00}}
  %0 = tc.dropout %x {ratio = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_above_one(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.dropout' op ratio must be in [0, 1), got 1.500000e+00}}
  %0 = tc.dropout %x {ratio = 1.5 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_negative(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.dropout' op ratio must be in [0, 1), got -5.000000e-01}}
  %0 = tc.dropout %x {ratio = -0.5 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_ratio_nan(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.dropout' op ratio must be in [0, 1), got nan}}
  %0 = tc.dropout %x {ratio = 0x7FC00000 : f32} : tensor<4xf32>
  return
}

// -----

func.func @dropout_training_without_key(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.dropout' op in training needs a key operand [seed, step]}}
  %0 = tc.dropout %x {training = true} : tensor<4xf32>
  return
}

// -----

func.func @dropout_key_outside_training(%x: tensor<4xf32>, %k: tensor<2xi64>) {
  // expected-error @+1 {{'tc.dropout' op outside training takes no key operand}}
  %0 = tc.dropout %x, %k : tensor<4xf32>, tensor<2xi64>
  return
}

// -----

func.func @dropout_key_shape(%x: tensor<4xf32>, %k: tensor<3xi64>) {
  // expected-error @+1 {{'tc.dropout' op key must be tensor<2xi64> [seed, step], got 'tensor<3xi64>'}}
  %0 = tc.dropout %x, %k {training = true} : tensor<4xf32>, tensor<3xi64>
  return
}

// -----

func.func @dropout_stream_range(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.dropout' op stream must be in [0, 2^32), got}}
  %0 = tc.dropout %x {stream = -1 : i64} : tensor<4xf32>
  return
}

// -----

func.func @leaky_relu_bad_alpha(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.leaky_relu' op attribute 'alpha' failed to satisfy constraint: 32-bit float attribute}}
  %0 = tc.leaky_relu %x {alpha = 1 : i64} : tensor<4xf32>
  return
}

//===----------------------------------------------------------------------===//
// Broadcasting binary ops
//===----------------------------------------------------------------------===//

// -----

func.func @add_no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{shapes 2x3 and 4 do not broadcast}}
  // expected-error @+1 {{'tc.add' op failed to infer returned types}}
  %0 = tc.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @mul_no_broadcast_inner(%a: tensor<2x3x4xf32>, %b: tensor<5x1xf32>) {
  // expected-error @+2 {{shapes 2x3x4 and 5x1 do not broadcast}}
  // expected-error @+1 {{'tc.mul' op failed to infer returned types}}
  %0 = tc.mul %a, %b : (tensor<2x3x4xf32>, tensor<5x1xf32>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @sub_element_mismatch(%a: tensor<3xf32>, %b: tensor<3xf16>) {
  // expected-error @+2 {{operands have different element types 'f32' and 'f16'}}
  // expected-error @+1 {{'tc.sub' op failed to infer returned types}}
  %0 = tc.sub %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return
}

// -----

// The declared result type disagrees with the inferred one.
func.func @add_wrong_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'tc.add' op inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'tc.add' op failed to infer returned types}}
  %0 = tc.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x4xf32>
  return
}

// -----

// Broadcasting does not drop axes: [1,3] + [3] is [1,3], not [3].
func.func @add_wrong_result_rank(%a: tensor<1x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{'tc.add' op inferred type(s) 'tensor<1x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'tc.add' op failed to infer returned types}}
  %0 = tc.add %a, %b : (tensor<1x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @div_wrong_result_element(%a: tensor<3xi64>, %b: tensor<3xi64>) {
  // expected-error @+2 {{'tc.div' op inferred type(s) 'tensor<3xi64>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  // expected-error @+1 {{'tc.div' op failed to infer returned types}}
  %0 = tc.div %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xf32>
  return
}

// -----

func.func @pow_integer(%a: tensor<3xi64>, %b: tensor<3xi64>) {
  // expected-error @+1 {{'tc.pow' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<3xi64>'}}
  %0 = tc.pow %a, %b : (tensor<3xi64>, tensor<3xi64>) -> tensor<3xi64>
  return
}

// -----

func.func @and_float(%a: tensor<3xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'tc.and' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<3xf32>'}}
  %0 = tc.and %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

// Comparisons return i1.
func.func @less_not_i1(%a: tensor<4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tc.less' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tc.less %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @equal_not_i1(%a: tensor<4xi64>, %b: tensor<4xi64>) {
  // expected-error @+1 {{'tc.equal' op result #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xi64>'}}
  %0 = tc.equal %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @greater_no_broadcast(%a: tensor<4xf32>, %b: tensor<5xf32>) {
  // expected-error @+2 {{shapes 4 and 5 do not broadcast}}
  // expected-error @+1 {{'tc.greater' op failed to infer returned types}}
  %0 = tc.greater %a, %b : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xi1>
  return
}

// -----

func.func @less_equal_element_mismatch(%a: tensor<4xi32>, %b: tensor<4xi64>) {
  // expected-error @+2 {{operands have different element types 'i32' and 'i64'}}
  // expected-error @+1 {{'tc.less_equal' op failed to infer returned types}}
  %0 = tc.less_equal %a, %b : (tensor<4xi32>, tensor<4xi64>) -> tensor<4xi1>
  return
}

//===----------------------------------------------------------------------===//
// tc.where and tc.cast
//===----------------------------------------------------------------------===//

// -----

func.func @where_values_no_broadcast(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<3xf32>) {
  // expected-error @+2 {{shapes 4 and 3 do not broadcast}}
  // expected-error @+1 {{'tc.where' op failed to infer returned types}}
  %0 = tc.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_no_broadcast(%c: tensor<3xi1>, %x: tensor<2x4xf32>, %y: tensor<f32>) {
  // expected-error @+2 {{condition shape 3 does not broadcast with the values}}
  // expected-error @+1 {{'tc.where' op failed to infer returned types}}
  %0 = tc.where %c, %x, %y : (tensor<3xi1>, tensor<2x4xf32>, tensor<f32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @where_values_element_mismatch(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) {
  // expected-error @+2 {{operands have different element types 'f32' and 'f64'}}
  // expected-error @+1 {{'tc.where' op failed to infer returned types}}
  %0 = tc.where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return
}

// -----

func.func @where_condition_not_bool(%c: tensor<4xf32>, %x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+1 {{'tc.where' op operand #0 must be statically shaped tensor of 1-bit signless integer values, but got 'tensor<4xf32>'}}
  %0 = tc.where %c, %x, %y : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// The condition's own axes are part of the result: [3,1] with [4] is [3,4].
func.func @where_wrong_result(%c: tensor<3x1xi1>, %x: tensor<4xf32>, %y: tensor<4xf32>) {
  // expected-error @+2 {{'tc.where' op inferred type(s) 'tensor<3x4xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  // expected-error @+1 {{'tc.where' op failed to infer returned types}}
  %0 = tc.where %c, %x, %y : (tensor<3x1xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @cast_result_disagrees_with_to(%x: tensor<4xf32>) {
  // expected-error @+2 {{'tc.cast' op inferred type(s) 'tensor<4xf16>' are incompatible with return type(s) of operation 'tensor<4xi32>'}}
  // expected-error @+1 {{'tc.cast' op failed to infer returned types}}
  %0 = tc.cast %x {to = f16} : (tensor<4xf32>) -> tensor<4xi32>
  return
}

// -----

func.func @cast_bad_to(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tc.cast' op attribute 'to' failed to satisfy constraint: type attribute of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer or 1-bit signless integer}}
  %0 = tc.cast %x {to = i8} : (tensor<4xf32>) -> tensor<4xi8>
  return
}

//===----------------------------------------------------------------------===//
// tc.matmul
//===----------------------------------------------------------------------===//

// -----

func.func @matmul_contraction(%a: tensor<4x5xf32>, %b: tensor<6x7xf32>) {
  // expected-error @+2 {{contraction dimensions differ: 4x5 times 6x7}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b : (tensor<4x5xf32>, tensor<6x7xf32>) -> tensor<4x7xf32>
  return
}

// -----

// A 1-D rhs is a column: its length must match the lhs's last axis.
func.func @matmul_contraction_vector(%a: tensor<4x5xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{contraction dimensions differ: 4x5 times 4}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b : (tensor<4x5xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @matmul_batch(%a: tensor<2x4x5xf32>, %b: tensor<3x5x6xf32>) {
  // expected-error @+2 {{batch dimensions do not broadcast: 2x4x5 times 3x5x6}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b : (tensor<2x4x5xf32>, tensor<3x5x6xf32>) -> tensor<2x4x6xf32>
  return
}

// -----

func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{matmul operands must have rank >= 1}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @matmul_element_mismatch(%a: tensor<4x5xf32>, %b: tensor<5x6xf16>) {
  // expected-error @+2 {{the right operand has element type 'f16' but the left operand has 'f32'}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b : (tensor<4x5xf32>, tensor<5x6xf16>) -> tensor<4x6xf32>
  return
}

// -----

// Promoted 1-D axes are removed again: [5] x [5,6] is [6], not [1,6].
func.func @matmul_keeps_promoted_axis(%a: tensor<5xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{'tc.matmul' op inferred type(s) 'tensor<6xf32>' are incompatible with return type(s) of operation 'tensor<1x6xf32>'}}
  // expected-error @+1 {{'tc.matmul' op failed to infer returned types}}
  %0 = tc.matmul %a, %b : (tensor<5xf32>, tensor<5x6xf32>) -> tensor<1x6xf32>
  return
}

//===----------------------------------------------------------------------===//
// tc.gemm
//===----------------------------------------------------------------------===//

// -----

func.func @gemm_not_matrix(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{A and B must be matrices, got 2x3x4 and 4x5}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_vector(%a: tensor<3x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+2 {{A and B must be matrices, got 3x4 and 4}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @gemm_k_mismatch(%a: tensor<3x4xf32>, %b: tensor<5x6xf32>) {
  // expected-error @+2 {{contraction dimensions differ: op(A) is 3x4, op(B) is 5x6}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b : (tensor<3x4xf32>, tensor<5x6xf32>) -> tensor<3x6xf32>
  return
}

// -----

// Without trans_b, a [N, K] weight does not contract.
func.func @gemm_k_mismatch_missing_trans_b(%x: tensor<8x784xf32>, %w: tensor<128x784xf32>) {
  // expected-error @+2 {{contraction dimensions differ: op(A) is 8x784, op(B) is 128x784}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %x, %w : (tensor<8x784xf32>, tensor<128x784xf32>) -> tensor<8x128xf32>
  return
}

// -----

func.func @gemm_k_mismatch_trans_a(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+2 {{contraction dimensions differ: op(A) is 4x3, op(B) is 4x5}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b {trans_a = true} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

func.func @gemm_c_not_broadcastable(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5x3xf32>) {
  // expected-error @+2 {{C of shape 5x3 does not broadcast to 3x5}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<3x5xf32>
  return
}

// -----

// C broadcasts one way only: it must not grow the [M, N] result.
func.func @gemm_c_grows_result(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<2x3x5xf32>) {
  // expected-error @+2 {{C of shape 2x3x5 does not broadcast to 3x5}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<2x3x5xf32>) -> tensor<3x5xf32>
  return
}

// -----

// The bias of a [N, K] x [K, M] gemm has M entries, not N.
func.func @gemm_c_wrong_length(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<3xf32>) {
  // expected-error @+2 {{C of shape 3 does not broadcast to 3x5}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<3xf32>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_b_element(%a: tensor<3x4xf32>, %b: tensor<4x5xf16>) {
  // expected-error @+2 {{B has element type 'f16' but A has 'f32'}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b : (tensor<3x4xf32>, tensor<4x5xf16>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_c_element(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<5xf64>) {
  // expected-error @+2 {{C has element type 'f64' but the result has 'f32'}}
  // expected-error @+1 {{'tc.gemm' op failed to infer returned types}}
  %0 = tc.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<5xf64>) -> tensor<3x5xf32>
  return
}

// -----

func.func @gemm_integer(%a: tensor<3x4xi64>, %b: tensor<4x5xi64>) {
  // expected-error @+1 {{'tc.gemm' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float values, but got 'tensor<3x4xi64>'}}
  %0 = tc.gemm %a, %b : (tensor<3x4xi64>, tensor<4x5xi64>) -> tensor<3x5xi64>
  return
}

//===----------------------------------------------------------------------===//
// tc.conv
//===----------------------------------------------------------------------===//

// -----

func.func @conv_channel_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) {
  // expected-error @+2 {{weight 4x2x3x3 does not match 3 input channels in 1 group(s)}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// 6 channels in 3 groups: the weight must have 6 / 3 = 2 input channels.
func.func @conv_group_weight_channels(%x: tensor<1x6x8x8xf32>, %w: tensor<6x6x3x3xf32>) {
  // expected-error @+2 {{weight 6x6x3x3 does not match 6 input channels in 3 group(s)}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64}
      : (tensor<1x6x8x8xf32>, tensor<6x6x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

// The channels do not divide into the groups.
func.func @conv_group_channels_indivisible(%x: tensor<1x6x8x8xf32>, %w: tensor<4x1x3x3xf32>) {
  // expected-error @+2 {{weight 4x1x3x3 does not match 6 input channels in 4 group(s)}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64}
      : (tensor<1x6x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// The filters do not divide into the groups.
func.func @conv_group_filters_indivisible(%x: tensor<1x4x8x8xf32>, %w: tensor<6x1x3x3xf32>) {
  // expected-error @+2 {{weight 6x1x3x3 does not match 4 input channels in 4 group(s)}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 4 : i64}
      : (tensor<1x4x8x8xf32>, tensor<6x1x3x3xf32>) -> tensor<1x6x6x6xf32>
  return
}

// -----

func.func @conv_group_zero(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{weight 4x4x3x3 does not match 4 input channels in 0 group(s)}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 0 : i64}
      : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_length(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{bias must have shape 4, got 3}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_rank(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<1x4xf32>) {
  // expected-error @+2 {{bias must have shape 4, got 1x4}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<1x4xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_bias_element(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{the bias has element type 'f16' but the input has 'f32'}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_weight_element(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xbf16>) {
  // expected-error @+2 {{the weight has element type 'bf16' but the input has 'f32'}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xbf16>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_rank_mismatch(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3xf32>) {
  // expected-error @+2 {{expects input [N, C, spatial...] and weight [M, C/group, kernel...] of one rank >= 3, got 1x3x8x8 and 4x3x3}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_rank_too_small(%x: tensor<3x8xf32>, %w: tensor<4x3xf32>) {
  // expected-error @+2 {{expects input [N, C, spatial...] and weight [M, C/group, kernel...] of one rank >= 3, got 3x8 and 4x3}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64>, pads = array<i64>, dilations = array<i64>}
      : (tensor<3x8xf32>, tensor<4x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @conv_strides_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for an input of rank 4, got 2, 1, 2 and 4}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// Two pads (begin of each axis) instead of four (begin and end of each axis).
func.func @conv_pads_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for an input of rank 4, got 2, 2, 2 and 2}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  return
}

// -----

func.func @conv_dilations_count(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for an input of rank 4, got 2, 2, 3 and 4}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_missing_strides(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+1 {{'tc.conv' op requires attribute 'strides'}}
  %0 = tc.conv %x, %w {pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

// A 5x5 kernel over 3 input rows, without padding.
func.func @conv_window_too_large(%x: tensor<1x1x3x8xf32>, %w: tensor<1x1x5x5xf32>) {
  // expected-error @+2 {{window of size 5 (dilation 1) does not fit spatial axis 2 of size 3 with its padding}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x3x8xf32>, tensor<1x1x5x5xf32>) -> tensor<1x1x1x4xf32>
  return
}

// -----

// Dilation 3 stretches a 3-wide kernel to 7 > 6 columns.
func.func @conv_dilated_window_too_large(%x: tensor<1x1x8x6xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{window of size 3 (dilation 3) does not fit spatial axis 3 of size 6 with its padding}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 3>}
      : (tensor<1x1x8x6xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x6x1xf32>
  return
}

// -----

func.func @conv_negative_pads(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{pads must not be negative}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, -1, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x6xf32>
  return
}

// -----

func.func @conv_zero_stride(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{kernel sizes, strides and dilations must be positive}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_zero_dilation(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{kernel sizes, strides and dilations must be positive}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 0, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  return
}

// -----

func.func @conv_empty_kernel(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x0x3xf32>) {
  // expected-error @+2 {{kernel sizes, strides and dilations must be positive}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x0x3xf32>) -> tensor<1x4x9x6xf32>
  return
}

// -----

// (8 + 2 - 3) / 2 + 1 = 4, not 5 (the division rounds down).
func.func @conv_wrong_result(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{'tc.conv' op inferred type(s) 'tensor<1x4x4x4xf32>' are incompatible with return type(s) of operation 'tensor<1x4x5x5xf32>'}}
  // expected-error @+1 {{'tc.conv' op failed to infer returned types}}
  %0 = tc.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x5x5xf32>
  return
}

//===----------------------------------------------------------------------===//
// tc.batch_norm and tc.layer_norm
//===----------------------------------------------------------------------===//

// -----

func.func @batch_norm_scale_length(%x: tensor<2x4x8x8xf32>, %s: tensor<3xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{scale must have shape 4 (the channel count)}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %s, %c, %c, %c
      : (tensor<2x4x8x8xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_bias_length(%x: tensor<2x4x8x8xf32>, %b: tensor<8xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{bias must have shape 4 (the channel count)}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %c, %b, %c, %c
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// The statistics are per channel (axis 1), not per spatial position.
func.func @batch_norm_mean_rank(%x: tensor<2x4x8x8xf32>, %m: tensor<4x1x1xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{mean must have shape 4 (the channel count)}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %c, %c, %m, %c
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x1x1xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4x1x1xf32>, tensor<4xf32>)
  return
}

// -----

// Channels are axis 1, not the last axis (NCHW).
func.func @batch_norm_var_channels_last(%x: tensor<2x4x8x16xf32>, %v: tensor<16xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{var must have shape 4 (the channel count)}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %c, %c, %c, %v
      : (tensor<2x4x8x16xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<16xf32>)
      -> (tensor<2x4x8x16xf32>, tensor<4xf32>, tensor<16xf32>)
  return
}

// -----

func.func @batch_norm_stat_element(%x: tensor<2x4xf32>, %m: tensor<4xf16>, %c: tensor<4xf32>) {
  // expected-error @+2 {{mean has element type 'f16' but the input has 'f32'}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %c, %c, %m, %c
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<4xf32>)
      -> (tensor<2x4xf32>, tensor<4xf16>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_rank_one(%x: tensor<4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{expects an input of rank >= 2}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %c, %c, %c, %c
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @batch_norm_wrong_running_type(%x: tensor<2x4xf32>, %c: tensor<4xf32>) {
  // expected-error @+2 {{'tc.batch_norm' op inferred type(s) 'tensor<2x4xf32>', 'tensor<4xf32>', 'tensor<4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>', 'tensor<4xf32>', 'tensor<1x4xf32>'}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y:3 = tc.batch_norm %x, %c, %c, %c, %c
      : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4xf32>, tensor<4xf32>, tensor<1x4xf32>)
  return
}

// -----

func.func @layer_norm_scale_shape(%x: tensor<2x16x32xf32>, %g: tensor<16xf32>) {
  // expected-error @+2 {{scale and bias must have shape 32, got 16}}
  // expected-error @+1 {{'tc.layer_norm' op failed to infer returned types}}
  %0 = tc.layer_norm %x, %g {axis = 2 : i64} : (tensor<2x16x32xf32>, tensor<16xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

// With axis 1 the normalized shape is [16, 32]: a [32] scale does not do.
func.func @layer_norm_scale_rank(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+2 {{scale and bias must have shape 16x32, got 32}}
  // expected-error @+1 {{'tc.layer_norm' op failed to infer returned types}}
  %0 = tc.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>, %b: tensor<1x32xf32>) {
  // expected-error @+2 {{scale and bias must have shape 32, got 1x32}}
  // expected-error @+1 {{'tc.layer_norm' op failed to infer returned types}}
  %0 = tc.layer_norm %x, %g, %b {axis = 2 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>, tensor<1x32xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

func.func @layer_norm_axis_too_large(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+2 {{axis 3 is out of range for rank 3}}
  // expected-error @+1 {{'tc.layer_norm' op failed to infer returned types}}
  %0 = tc.layer_norm %x, %g {axis = 3 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

// Negative axes are normalized by the importer; the op takes none.
func.func @layer_norm_axis_negative(%x: tensor<2x16x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+2 {{axis -1 is out of range for rank 3}}
  // expected-error @+1 {{'tc.layer_norm' op failed to infer returned types}}
  %0 = tc.layer_norm %x, %g {axis = -1 : i64} : (tensor<2x16x32xf32>, tensor<32xf32>) -> tensor<2x16x32xf32>
  return
}

// -----

func.func @layer_norm_scale_element(%x: tensor<2x32xf32>, %g: tensor<32xf16>) {
  // expected-error @+2 {{scale/bias has element type 'f16' but the input has 'f32'}}
  // expected-error @+1 {{'tc.layer_norm' op failed to infer returned types}}
  %0 = tc.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x32xf32>, tensor<32xf16>) -> tensor<2x32xf32>
  return
}

// -----

func.func @layer_norm_missing_axis(%x: tensor<2x32xf32>, %g: tensor<32xf32>) {
  // expected-error @+1 {{'tc.layer_norm' op requires attribute 'axis'}}
  %0 = tc.layer_norm %x, %g : (tensor<2x32xf32>, tensor<32xf32>) -> tensor<2x32xf32>
  return
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

// -----

func.func @max_pool_kernel_count(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for an input of rank 4, got 1, 2, 2 and 4}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool_pads_count(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for an input of rank 4, got 2, 2, 2 and 3}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool_negative_pads(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{pads must not be negative}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: -1, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @max_pool_zero_kernel(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{kernel sizes, strides and dilations must be positive}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 0, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// Dilation 2 stretches a 3-wide window to 5 > 2 + 1 + 1.
func.func @max_pool_window_too_large(%x: tensor<1x1x2x8xf32>) {
  // expected-error @+2 {{window of size 3 (dilation 2) does not fit spatial axis 2 of size 2 with its padding}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 2, 1>}
      : (tensor<1x1x2x8xf32>) -> tensor<1x1x1x6xf32>
  return
}

// -----

func.func @max_pool_rank_two(%x: tensor<8x8xf32>) {
  // expected-error @+2 {{expects an input [N, C, spatial...]}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64>, strides = array<i64>, pads = array<i64>, dilations = array<i64>}
      : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @max_pool_missing_dilations(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tc.max_pool' op requires attribute 'dilations'}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// floor((6 - 3) / 2) + 1 = 2 without ceil_mode; 3 needs ceil_mode.
func.func @max_pool_floor_result(%x: tensor<1x1x6x6xf32>) {
  // expected-error @+2 {{'tc.max_pool' op inferred type(s) 'tensor<1x1x2x2xf32>' are incompatible with return type(s) of operation 'tensor<1x1x3x3xf32>'}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

// ceil_mode drops a last window that starts in the end padding: 5 rows,
// k = 2, s = 2, pads 1 + 1 give ceil(5 / 2) + 1 = 4 windows, but the 4th
// starts at row 6 >= 5 + 1, so there are 3.
func.func @max_pool_ceil_drops_last_window(%x: tensor<1x1x5x5xf32>) {
  // expected-error @+2 {{'tc.max_pool' op inferred type(s) 'tensor<1x1x3x3xf32>' are incompatible with return type(s) of operation 'tensor<1x1x4x4xf32>'}}
  // expected-error @+1 {{'tc.max_pool' op failed to infer returned types}}
  %0 = tc.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true}
      : (tensor<1x1x5x5xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @avg_pool_strides_count(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{expects 2 kernel sizes, strides and dilations and 4 pads for an input of rank 4, got 2, 3, 2 and 4}}
  // expected-error @+1 {{'tc.avg_pool' op failed to infer returned types}}
  %0 = tc.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2, 2>, pads = array<i64: 0, 0, 0, 0>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @avg_pool_negative_pads(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{pads must not be negative}}
  // expected-error @+1 {{'tc.avg_pool' op failed to infer returned types}}
  %0 = tc.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, -2>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x3xf32>
  return
}

// -----

func.func @avg_pool_zero_stride(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+2 {{kernel sizes, strides and dilations must be positive}}
  // expected-error @+1 {{'tc.avg_pool' op failed to infer returned types}}
  %0 = tc.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 0, 2>, pads = array<i64: 0, 0, 0, 0>}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @avg_pool_window_too_large(%x: tensor<1x1x8x3xf32>) {
  // expected-error @+2 {{window of size 4 (dilation 1) does not fit spatial axis 3 of size 3 with its padding}}
  // expected-error @+1 {{'tc.avg_pool' op failed to infer returned types}}
  %0 = tc.avg_pool %x {kernel_shape = array<i64: 4, 4>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>}
      : (tensor<1x1x8x3xf32>) -> tensor<1x1x5x1xf32>
  return
}

// -----

func.func @avg_pool_rank_two(%x: tensor<8x8xf32>) {
  // expected-error @+2 {{expects an input [N, C, spatial...]}}
  // expected-error @+1 {{'tc.avg_pool' op failed to infer returned types}}
  %0 = tc.avg_pool %x {kernel_shape = array<i64>, strides = array<i64>, pads = array<i64>}
      : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

func.func @avg_pool_bad_ceil_mode(%x: tensor<1x1x8x8xf32>) {
  // expected-error @+1 {{'tc.avg_pool' op attribute 'ceil_mode' failed to satisfy constraint: bool attribute}}
  %0 = tc.avg_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 1 : i64}
      : (tensor<1x1x8x8xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

func.func @global_avg_pool_rank_two(%x: tensor<2x512xf32>) {
  // expected-error @+2 {{expects an input [N, C, spatial...]}}
  // expected-error @+1 {{'tc.global_avg_pool' op failed to infer returned types}}
  %0 = tc.global_avg_pool %x : (tensor<2x512xf32>) -> tensor<2x512xf32>
  return
}

// -----

// The spatial axes are kept as 1, not removed.
func.func @global_avg_pool_drops_axes(%x: tensor<2x512x7x7xf32>) {
  // expected-error @+2 {{'tc.global_avg_pool' op inferred type(s) 'tensor<2x512x1x1xf32>' are incompatible with return type(s) of operation 'tensor<2x512xf32>'}}
  // expected-error @+1 {{'tc.global_avg_pool' op failed to infer returned types}}
  %0 = tc.global_avg_pool %x : (tensor<2x512x7x7xf32>) -> tensor<2x512xf32>
  return
}

//===----------------------------------------------------------------------===//
// Softmax and reductions
//===----------------------------------------------------------------------===//

// -----

// softmax infers its result type while parsing, so the error comes alone.
func.func @softmax_axis_too_large(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tc.softmax %x {axis = 2 : i64} : tensor<8x10xf32>
  return
}

// -----

func.func @log_softmax_axis_negative(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = tc.log_softmax %x {axis = -1 : i64} : tensor<8x10xf32>
  return
}

// -----

func.func @softmax_missing_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{expects an integer 'axis'}}
  %0 = tc.softmax %x : tensor<8x10xf32>
  return
}

// -----

func.func @softmax_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{axis 0 is out of range for rank 0}}
  %0 = tc.softmax %x {axis = 0 : i64} : tensor<f32>
  return
}

// -----

// The custom syntax parses a ranked tensor type, so an unranked operand is
// rejected by the parser before the shape function's "expects a ranked
// operand" can be reached; in the functional-type syntax the ODS operand
// constraint rejects it (next case).
func.func @softmax_unranked(%x: tensor<*xf32>) {
  // expected-error @+1 {{custom op 'tc.softmax' invalid kind of type specified}}
  %0 = tc.softmax %x {axis = 0 : i64} : tensor<*xf32>
  return
}

// -----

func.func @add_unranked(%a: tensor<*xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tc.add' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer values, but got 'tensor<*xf32>'}}
  %0 = tc.add %a, %b : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @reduce_axis_too_large(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{axis 3 is out of range for rank 3}}
  // expected-error @+1 {{'tc.reduce_sum' op failed to infer returned types}}
  %0 = tc.reduce_sum %x {axes = array<i64: 3>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return
}

// -----

func.func @reduce_axis_negative(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{axis -1 is out of range for rank 3}}
  // expected-error @+1 {{'tc.reduce_mean' op failed to infer returned types}}
  %0 = tc.reduce_mean %x {axes = array<i64: -1>} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  return
}

// -----

func.func @reduce_axes_decreasing(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{axes must be strictly increasing}}
  // expected-error @+1 {{'tc.reduce_max' op failed to infer returned types}}
  %0 = tc.reduce_max %x {axes = array<i64: 2, 0>, keepdims = false} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @reduce_axes_repeated(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{axes must be strictly increasing}}
  // expected-error @+1 {{'tc.reduce_sum' op failed to infer returned types}}
  %0 = tc.reduce_sum %x {axes = array<i64: 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return
}

// -----

// keepdims defaults to true: the reduced axis stays as 1.
func.func @reduce_default_keepdims(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'tc.reduce_sum' op inferred type(s) 'tensor<2x1x4xf32>' are incompatible with return type(s) of operation 'tensor<2x4xf32>'}}
  // expected-error @+1 {{'tc.reduce_sum' op failed to infer returned types}}
  %0 = tc.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @reduce_bool(%x: tensor<2x3xi1>) {
  // expected-error @+1 {{'tc.reduce_sum' op operand #0 must be statically shaped tensor of 32-bit float or 16-bit float or bfloat16 type or 64-bit float or 64-bit signless integer or 32-bit signless integer values, but got 'tensor<2x3xi1>'}}
  %0 = tc.reduce_sum %x {axes = array<i64: 1>} : (tensor<2x3xi1>) -> tensor<2x1xi1>
  return
}

//===----------------------------------------------------------------------===//
// Shape and data movement
//===----------------------------------------------------------------------===//

// -----

func.func @reshape_element_count(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{cannot reshape 2x3 into 4x2}}
  // expected-error @+1 {{'tc.reshape' op failed to infer returned types}}
  %0 = tc.reshape %x {shape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return
}

// -----

// ONNX's -1 placeholder is resolved by the importer; the op takes none.
func.func @reshape_placeholder(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{cannot reshape 2x3 into -1x2}}
  // expected-error @+1 {{'tc.reshape' op failed to infer returned types}}
  %0 = tc.reshape %x {shape = array<i64: -1, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @reshape_result_disagrees(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tc.reshape' op inferred type(s) 'tensor<3x2xf32>' are incompatible with return type(s) of operation 'tensor<6xf32>'}}
  // expected-error @+1 {{'tc.reshape' op failed to infer returned types}}
  %0 = tc.reshape %x {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return
}

// -----

func.func @transpose_repeated(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm is not a permutation of 0..2}}
  // expected-error @+1 {{'tc.transpose' op failed to infer returned types}}
  %0 = tc.transpose %x {perm = array<i64: 0, 1, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x3xf32>
  return
}

// -----

func.func @transpose_out_of_range(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm is not a permutation of 0..2}}
  // expected-error @+1 {{'tc.transpose' op failed to infer returned types}}
  %0 = tc.transpose %x {perm = array<i64: 0, 3, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  return
}

// -----

func.func @transpose_wrong_length(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{perm has 2 entries for rank 3}}
  // expected-error @+1 {{'tc.transpose' op failed to infer returned types}}
  %0 = tc.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

// Result axis i is input axis perm[i]: perm [2, 0, 1] gives [4, 2, 3], and
// [3, 4, 2] would be the inverse permutation.
func.func @transpose_inverse_perm(%x: tensor<2x3x4xf32>) {
  // expected-error @+2 {{'tc.transpose' op inferred type(s) 'tensor<4x2x3xf32>' are incompatible with return type(s) of operation 'tensor<3x4x2xf32>'}}
  // expected-error @+1 {{'tc.transpose' op failed to infer returned types}}
  %0 = tc.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
  return
}

// -----

func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error @+2 {{inputs 2x3 and 3x3 differ outside axis 1}}
  // expected-error @+1 {{'tc.concat' op failed to infer returned types}}
  %0 = tc.concat %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_axis_too_large(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'tc.concat' op failed to infer returned types}}
  %0 = tc.concat %a, %b {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_axis_negative(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  // expected-error @+2 {{axis -1 is out of range for rank 2}}
  // expected-error @+1 {{'tc.concat' op failed to infer returned types}}
  %0 = tc.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @concat_rank_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x3x1xf32>) {
  // expected-error @+2 {{inputs must all have rank 2}}
  // expected-error @+1 {{'tc.concat' op failed to infer returned types}}
  %0 = tc.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3x1xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_element_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) {
  // expected-error @+2 {{an input has element type 'i64' but the first input has 'f32'}}
  // expected-error @+1 {{'tc.concat' op failed to infer returned types}}
  %0 = tc.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<4x3xf32>
  return
}

// -----

func.func @concat_no_inputs() {
  // expected-error @+2 {{expects at least one input}}
  // expected-error @+1 {{'tc.concat' op failed to infer returned types}}
  %0 = tc.concat {axis = 0 : i64} : () -> tensor<1xf32>
  return
}

// -----

func.func @slice_end_not_clamped(%x: tensor<4xf32>) {
  // expected-error @+2 {{bounds [0, 5) of axis 0 are not clamped to its size 4}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 0>, ends = array<i64: 5>, steps = array<i64: 1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// A negative start must have been normalized by the importer.
func.func @slice_negative_start(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{bounds [-2, 4) of axis 1 are not clamped to its size 4}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 0, -2>, ends = array<i64: 2, 4>, steps = array<i64: 1, 1>} : (tensor<2x4xf32>) -> tensor<2x2xf32>
  return
}

// -----

// With a negative step the end may be -1 but the start may not reach 4.
func.func @slice_negative_step_not_clamped(%x: tensor<4xf32>) {
  // expected-error @+2 {{bounds [4, -1) of axis 0 are not clamped to its size 4}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 4>, ends = array<i64: -1>, steps = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @slice_zero_step(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{step of axis 1 is zero}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_wrong_length(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{expects one start, end and step per axis (2)}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 0>, ends = array<i64: 2>, steps = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

func.func @slice_steps_length(%x: tensor<2x4xf32>) {
  // expected-error @+2 {{expects one start, end and step per axis (2)}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 0, 0>, ends = array<i64: 2, 4>, steps = array<i64: 1>} : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return
}

// -----

// [0:4:3] takes elements 0 and 3: 2, not 1.
func.func @slice_wrong_result(%x: tensor<4xf32>) {
  // expected-error @+2 {{'tc.slice' op inferred type(s) 'tensor<2xf32>' are incompatible with return type(s) of operation 'tensor<1xf32>'}}
  // expected-error @+1 {{'tc.slice' op failed to infer returned types}}
  %0 = tc.slice %x {starts = array<i64: 0>, ends = array<i64: 4>, steps = array<i64: 3>} : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

func.func @gather_axis_too_large(%d: tensor<64x32xf32>, %i: tensor<8xi64>) {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{'tc.gather' op failed to infer returned types}}
  %0 = tc.gather %d, %i {axis = 2 : i64} : (tensor<64x32xf32>, tensor<8xi64>) -> tensor<64x32xf32>
  return
}

// -----

func.func @gather_axis_negative(%d: tensor<64x32xf32>, %i: tensor<8xi64>) {
  // expected-error @+2 {{axis -1 is out of range for rank 2}}
  // expected-error @+1 {{'tc.gather' op failed to infer returned types}}
  %0 = tc.gather %d, %i {axis = -1 : i64} : (tensor<64x32xf32>, tensor<8xi64>) -> tensor<64x8xf32>
  return
}

// -----

func.func @gather_scalar_data(%d: tensor<f32>, %i: tensor<i64>) {
  // expected-error @+2 {{axis 0 is out of range for rank 0}}
  // expected-error @+1 {{'tc.gather' op failed to infer returned types}}
  %0 = tc.gather %d, %i {axis = 0 : i64} : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @gather_float_indices(%d: tensor<64x32xf32>, %i: tensor<8xf32>) {
  // expected-error @+1 {{'tc.gather' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = tc.gather %d, %i {axis = 0 : i64} : (tensor<64x32xf32>, tensor<8xf32>) -> tensor<8x32xf32>
  return
}

// -----

func.func @expand_not_broadcastable(%x: tensor<3x2xf32>) {
  // expected-error @+2 {{cannot expand 3x2 to 4}}
  // expected-error @+1 {{'tc.expand' op failed to infer returned types}}
  %0 = tc.expand %x {shape = array<i64: 4>} : (tensor<3x2xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @expand_negative_dim(%x: tensor<3x1xf32>) {
  // expected-error @+2 {{shape has a negative dimension}}
  // expected-error @+1 {{'tc.expand' op failed to infer returned types}}
  %0 = tc.expand %x {shape = array<i64: -1, 4>} : (tensor<3x1xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Expand never shrinks: [3, 4] with [1, 1] stays [3, 4].
func.func @expand_shrinks(%x: tensor<3x4xf32>) {
  // expected-error @+2 {{'tc.expand' op inferred type(s) 'tensor<3x4xf32>' are incompatible with return type(s) of operation 'tensor<1x1xf32>'}}
  // expected-error @+1 {{'tc.expand' op failed to infer returned types}}
  %0 = tc.expand %x {shape = array<i64: 1, 1>} : (tensor<3x4xf32>) -> tensor<1x1xf32>
  return
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

// -----

func.func @sce_label_shape(%l: tensor<8x10xf32>, %y: tensor<4xi64>) {
  // expected-error @+2 {{labels must have shape 8 for scores of shape 8x10, got 4}}
  // expected-error @+1 {{'tc.softmax_cross_entropy' op failed to infer returned types}}
  %0 = tc.softmax_cross_entropy %l, %y : (tensor<8x10xf32>, tensor<4xi64>) -> tensor<f32>
  return
}

// -----

// One-hot labels are not class indices.
func.func @sce_one_hot_labels(%l: tensor<8x10xf32>, %y: tensor<8x10xi64>) {
  // expected-error @+2 {{labels must have shape 8 for scores of shape 8x10, got 8x10}}
  // expected-error @+1 {{'tc.softmax_cross_entropy' op failed to infer returned types}}
  %0 = tc.softmax_cross_entropy %l, %y : (tensor<8x10xf32>, tensor<8x10xi64>) -> tensor<f32>
  return
}

// -----

func.func @sce_spatial_label_shape(%l: tensor<2x5x3x4xf32>, %y: tensor<2x5x4xi64>) {
  // expected-error @+2 {{labels must have shape 2x3x4 for scores of shape 2x5x3x4, got 2x5x4}}
  // expected-error @+1 {{'tc.softmax_cross_entropy' op failed to infer returned types}}
  %0 = tc.softmax_cross_entropy %l, %y {reduction = "none"} : (tensor<2x5x3x4xf32>, tensor<2x5x4xi64>) -> tensor<2x3x4xf32>
  return
}

// -----

func.func @sce_bad_reduction(%l: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+2 {{reduction must be 'mean', 'sum' or 'none', got 'avg'}}
  // expected-error @+1 {{'tc.softmax_cross_entropy' op failed to infer returned types}}
  %0 = tc.softmax_cross_entropy %l, %y {reduction = "avg"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @sce_scores_rank_one(%l: tensor<10xf32>, %y: tensor<i64>) {
  // expected-error @+2 {{scores must be [N, C, d...], got rank 1}}
  // expected-error @+1 {{'tc.softmax_cross_entropy' op failed to infer returned types}}
  %0 = tc.softmax_cross_entropy %l, %y : (tensor<10xf32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @sce_float_labels(%l: tensor<8x10xf32>, %y: tensor<8xf32>) {
  // expected-error @+1 {{'tc.softmax_cross_entropy' op operand #1 must be statically shaped tensor of 64-bit signless integer or 32-bit signless integer values, but got 'tensor<8xf32>'}}
  %0 = tc.softmax_cross_entropy %l, %y : (tensor<8x10xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

// reduction "none" keeps the per-sample losses.
func.func @sce_none_is_not_scalar(%l: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+2 {{'tc.softmax_cross_entropy' op inferred type(s) 'tensor<8xf32>' are incompatible with return type(s) of operation 'tensor<f32>'}}
  // expected-error @+1 {{'tc.softmax_cross_entropy' op failed to infer returned types}}
  %0 = tc.softmax_cross_entropy %l, %y {reduction = "none"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @sce_bad_ignore_index(%l: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+1 {{'tc.softmax_cross_entropy' op attribute 'ignore_index' failed to satisfy constraint: 64-bit signless integer attribute}}
  %0 = tc.softmax_cross_entropy %l, %y {ignore_index = 1.0 : f32} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_label_shape(%l: tensor<8x10xf32>, %y: tensor<10xi64>) {
  // expected-error @+2 {{labels must have shape 8 for scores of shape 8x10, got 10}}
  // expected-error @+1 {{'tc.nll_loss' op failed to infer returned types}}
  %0 = tc.nll_loss %l, %y : (tensor<8x10xf32>, tensor<10xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_bad_reduction(%l: tensor<8x10xf32>, %y: tensor<8xi64>) {
  // expected-error @+2 {{reduction must be 'mean', 'sum' or 'none', got 'Mean'}}
  // expected-error @+1 {{'tc.nll_loss' op failed to infer returned types}}
  %0 = tc.nll_loss %l, %y {reduction = "Mean"} : (tensor<8x10xf32>, tensor<8xi64>) -> tensor<f32>
  return
}

// -----

func.func @nll_scores_scalar(%l: tensor<f32>, %y: tensor<i64>) {
  // expected-error @+2 {{scores must be [N, C, d...], got rank 0}}
  // expected-error @+1 {{'tc.nll_loss' op failed to infer returned types}}
  %0 = tc.nll_loss %l, %y : (tensor<f32>, tensor<i64>) -> tensor<f32>
  return
}

// -----

func.func @mse_shape_mismatch(%p: tensor<8x1xf32>, %t: tensor<8xf32>) {
  // expected-error @+2 {{prediction 'tensor<8x1xf32>' and target 'tensor<8xf32>' must have one type}}
  // expected-error @+1 {{'tc.mse_loss' op failed to infer returned types}}
  %0 = tc.mse_loss %p, %t : (tensor<8x1xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_element_mismatch(%p: tensor<8xf32>, %t: tensor<8xf16>) {
  // expected-error @+2 {{prediction 'tensor<8xf32>' and target 'tensor<8xf16>' must have one type}}
  // expected-error @+1 {{'tc.mse_loss' op failed to infer returned types}}
  %0 = tc.mse_loss %p, %t : (tensor<8xf32>, tensor<8xf16>) -> tensor<f32>
  return
}

// -----

func.func @mse_bad_reduction(%p: tensor<8xf32>, %t: tensor<8xf32>) {
  // expected-error @+2 {{reduction must be 'mean', 'sum' or 'none', got 'max'}}
  // expected-error @+1 {{'tc.mse_loss' op failed to infer returned types}}
  %0 = tc.mse_loss %p, %t {reduction = "max"} : (tensor<8xf32>, tensor<8xf32>) -> tensor<f32>
  return
}

// -----

func.func @mse_mean_is_scalar(%p: tensor<8xf32>, %t: tensor<8xf32>) {
  // expected-error @+2 {{'tc.mse_loss' op inferred type(s) 'tensor<f32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{'tc.mse_loss' op failed to infer returned types}}
  %0 = tc.mse_loss %p, %t : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}
