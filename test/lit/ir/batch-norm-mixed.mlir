// RUN: trainc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// A batch norm of a bf16 (or f16) input keeps its scale, bias, statistics
// and sample mask in f32 (mixed precision); its output has the input's type.
// CHECK-LABEL: func.func @bf16_input
// CHECK: tc.batch_norm {{.*}} : (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>) -> (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: tc.batch_norm_backward {{.*}} -> (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>)
func.func @bf16_input(%x: tensor<2x4x3x3xbf16>, %s: tensor<4xf32>, %mask: tensor<2xf32>) {
  %y, %m, %v = tc.batch_norm %x, %s, %s, %s, %s, %mask {training = true}
      : (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2xf32>)
      -> (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>)
  %dx, %ds, %db = tc.batch_norm_backward %x, %s, %y, %mask {epsilon = 1.0e-05 : f32}
      : (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<2x4x3x3xbf16>, tensor<2xf32>)
      -> (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @f16_statistics(%x: tensor<2x4x3x3xbf16>, %s: tensor<4xf16>) {
  // expected-error @+2 {{scale has element type 'f16' but the input has 'bf16' and scale 'f16'}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y, %m, %v = tc.batch_norm %x, %s, %s, %s, %s
      : (tensor<2x4x3x3xbf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>, tensor<4xf16>)
      -> (tensor<2x4x3x3xbf16>, tensor<4xf16>, tensor<4xf16>)
  return
}

// -----

func.func @statistics_of_two_types(%x: tensor<2x4x3x3xbf16>, %s: tensor<4xf32>, %t: tensor<4xbf16>) {
  // expected-error @+2 {{mean has element type 'bf16' but the input has 'bf16' and scale 'f32'}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y, %m, %v = tc.batch_norm %x, %s, %s, %t, %s
      : (tensor<2x4x3x3xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>)
      -> (tensor<2x4x3x3xbf16>, tensor<4xbf16>, tensor<4xf32>)
  return
}

// -----

func.func @f32_input_bf16_statistics(%x: tensor<2x4x3x3xf32>, %t: tensor<4xbf16>) {
  // expected-error @+2 {{scale has element type 'bf16' but the input has 'f32' and scale 'bf16'}}
  // expected-error @+1 {{'tc.batch_norm' op failed to infer returned types}}
  %y, %m, %v = tc.batch_norm %x, %t, %t, %t, %t
      : (tensor<2x4x3x3xf32>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>, tensor<4xbf16>)
      -> (tensor<2x4x3x3xf32>, tensor<4xbf16>, tensor<4xbf16>)
  return
}
