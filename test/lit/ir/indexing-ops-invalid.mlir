// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// One case per verifier and shape-function error of tc.cumsum, tc.mod,
// tc.tile, tc.trilu, tc.pad, tc.pad_backward and tc.scatter_nd
// (ir/TcOpsIndexing.cpp).
// cumsum and trilu infer their result type while parsing, so their errors
// come alone.

func.func @cumsum_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tc.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  return
}

// -----

func.func @cumsum_no_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{expects an integer 'axis'}}
  %0 = tc.cumsum %x : tensor<2x3xf32>
  return
}

// -----

func.func @cumsum_bool(%x: tensor<3xi1>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = tc.cumsum %x {axis = 0 : i64} : tensor<3xi1>
  return
}

// -----

func.func @mod_float_without_fmod(%x: tensor<3xf32>) {
  // expected-error @+1 {{'tc.mod' op a float remainder needs fmod = true (ONNX Mod)}}
  %0 = tc.mod %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return
}

// -----

func.func @mod_no_broadcast(%x: tensor<3xi64>, %y: tensor<4xi64>) {
  // expected-error @+2 {{do not broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.mod %x, %y : (tensor<3xi64>, tensor<4xi64>) -> tensor<4xi64>
  return
}

// -----

func.func @tile_repeats_count(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{expects 2 repeats for rank 2, got 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.tile %x {repeats = array<i64: 2>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @tile_negative(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{repeat -1 of axis 1 is negative}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.tile %x {repeats = array<i64: 1, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return
}

// -----

// [2, 3] tiled (2, 2) is [4, 6], not [4, 3].
func.func @tile_wrong_result(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{'tc.tile' op inferred type(s) 'tensor<4x6xf32>' are incompatible with return type(s) of operation 'tensor<4x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.tile %x {repeats = array<i64: 2, 2>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// -----

func.func @trilu_rank1(%x: tensor<5xf32>) {
  // expected-error @+1 {{expects an operand of rank 2 or more, got rank 1}}
  %0 = tc.trilu %x : tensor<5xf32>
  return
}

// -----

func.func @pad_count(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{expects 4 pads for rank 2, got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad %x {pads = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x4xf32>
  return
}

// -----

// Cropping 2 + 2 from an axis of 3.
func.func @pad_crop_too_much(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{pads -2 and -2 of axis 1 (size 3) give a negative or huge size}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad %x {pads = array<i64: 0, -2, 0, -2>} : (tensor<2x3xf32>) -> tensor<2x0xf32>
  return
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{mode must be 'constant', 'reflect', 'edge' or 'wrap', got 'circular'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad %x {pads = array<i64: 0, 1, 0, 1>, mode = "circular"} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  return
}

// -----

func.func @pad_reflect_too_wide(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{reflect pads must be smaller than the axis (axis 1 of size 3 has pads 3 and 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad %x {pads = array<i64: 0, 3, 0, 0>, mode = "reflect"} : (tensor<2x3xf32>) -> tensor<2x6xf32>
  return
}

// -----

func.func @pad_edge_crop(%x: tensor<2x3xf32>) {
  // expected-error @+2 {{mode 'edge' pads cannot crop (axis 1 has pads -1 and 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad %x {pads = array<i64: 0, -1, 0, 0>, mode = "edge"} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return
}

// -----

func.func @pad_edge_empty(%x: tensor<2x0xf32>) {
  // expected-error @+2 {{mode 'edge' pads need a non-empty axis (axis 1)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad %x {pads = array<i64: 0, 1, 0, 0>, mode = "edge"} : (tensor<2x0xf32>) -> tensor<2x1xf32>
  return
}

// -----

func.func @pad_int_value(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'tc.pad' op pad value 2.500000e+00 is not an integer of 'i32'}}
  %0 = tc.pad %x {pads = array<i64: 0, 1, 0, 1>, value = 2.5 : f64} : (tensor<2x3xi32>) -> tensor<2x5xi32>
  return
}

// -----

func.func @pad_int_value_range(%x: tensor<2x3xi32>) {
  // expected-error @+1 {{'tc.pad' op pad value 3.000000e+09 is not an integer of 'i32'}}
  %0 = tc.pad %x {pads = array<i64: 0, 1, 0, 1>, value = 3.0e9 : f64} : (tensor<2x3xi32>) -> tensor<2x5xi32>
  return
}

// -----

func.func @pad_backward_constant(%dy: tensor<2x5xf32>) {
  // expected-error @+2 {{expects mode 'reflect', 'edge' or 'wrap' (a constant pad's gradient is a tc.pad)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad_backward %dy {input_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>,
                            mode = "constant"} : (tensor<2x5xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @pad_backward_shape(%dy: tensor<2x4xf32>) {
  // expected-error @+2 {{the result gradient has shape 2x4 but the pad gives 2x5}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.pad_backward %dy {input_shape = array<i64: 2, 3>, pads = array<i64: 0, 1, 0, 1>,
                            mode = "edge"} : (tensor<2x4xf32>) -> tensor<2x3xf32>
  return
}

// -----

func.func @scatter_nd_updates_shape(%d: tensor<4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) {
  // expected-error @+2 {{updates have shape 2x3, expected 2x4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.scatter_nd %d, %i, %u : (tensor<4x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @scatter_nd_tuple_too_long(%d: tensor<4xf32>, %i: tensor<2x2xi64>, %u: tensor<2xf32>) {
  // expected-error @+2 {{index tuples of length 2 for data of rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.scatter_nd %d, %i, %u : (tensor<4xf32>, tensor<2x2xi64>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @scatter_nd_bool_add(%d: tensor<4xi1>, %i: tensor<2x1xi64>, %u: tensor<2xi1>) {
  // expected-error @+2 {{reduction 'add' is not defined on i1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.scatter_nd %d, %i, %u {reduction = "add"} : (tensor<4xi1>, tensor<2x1xi64>, tensor<2xi1>) -> tensor<4xi1>
  return
}

// -----

func.func @scatter_nd_reduction(%d: tensor<4xf32>, %i: tensor<2x1xi64>, %u: tensor<2xf32>) {
  // expected-error @+2 {{reduction must be none, add, mul, max or min, got 'mean'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tc.scatter_nd %d, %i, %u {reduction = "mean"} : (tensor<4xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<4xf32>
  return
}
