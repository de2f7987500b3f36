// RUN: trainc-opt %s -split-input-file -verify-diagnostics
//
// tc.softmax and tc.log_softmax have no result type in their syntax, so the
// parser runs their shape function before the attributes are verified. The
// shape function therefore has to cope with an `axis` that is not a 64-bit
// integer attribute (unit, float, array, type, list, string or bool): each
// case is rejected with a diagnostic about 'axis' (the ODS message "attribute
// 'axis' failed to satisfy constraint: 64-bit signless integer attribute", or
// the shape function's "expects an integer 'axis'").

func.func @softmax_unit_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.softmax %x {axis} : tensor<8x10xf32>
  return
}

// -----

func.func @softmax_float_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.softmax %x {axis = 1.0 : f32} : tensor<8x10xf32>
  return
}

// -----

func.func @log_softmax_array_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.log_softmax %x {axis = array<i64: 1>} : tensor<8x10xf32>
  return
}

// -----

func.func @log_softmax_type_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.log_softmax %x {axis = f32} : tensor<8x10xf32>
  return
}

// -----

func.func @softmax_list_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.softmax %x {axis = [1]} : tensor<8x10xf32>
  return
}

// -----

func.func @softmax_string_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.softmax %x {axis = "abcdefgh"} : tensor<8x10xf32>
  return
}

// -----

func.func @softmax_bool_axis(%x: tensor<8x10xf32>) {
  // expected-error @+1 {{'axis'}}
  %0 = tc.softmax %x {axis = true} : tensor<8x10xf32>
  return
}
