// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// What the verifier refuses about the loss scaler's ops: tc.nonfinite_probe
// reads one or more f32 tensors; an update with skip_nonfinite needs the
// grad_scale it tests.

func.func @probe_f16(%g: tensor<4xf16>) {
  // expected-error @+2 {{probes f32 tensors, got 'tensor<4xf16>'}}
  // expected-error @+1 {{'tc.nonfinite_probe' op failed to infer returned types}}
  %0 = tc.nonfinite_probe %g : (tensor<4xf16>) -> tensor<f32>
  return
}

// -----

func.func @probe_nothing() {
  // expected-error @+2 {{expects at least one tensor to probe}}
  // expected-error @+1 {{'tc.nonfinite_probe' op failed to infer returned types}}
  %0 = tc.nonfinite_probe : () -> tensor<f32>
  return
}

// -----

func.func @skip_without_scale(%p: tensor<3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %h: tensor<f32>) {
  // expected-error @+2 {{skip_nonfinite needs a grad_scale operand}}
  // expected-error @+1 {{'tc.sgd_update' op failed to infer returned types}}
  %0:2 = tc.sgd_update %p, %g, %b, %h, %h, %h {skip_nonfinite} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// Accepted: a probe of two gradients, and an update that skips on it.
func.func @valid(%p: tensor<3xf32>, %g: tensor<3xf32>, %b: tensor<3xf32>, %h: tensor<f32>, %w: tensor<2x2xf32>) -> tensor<3xf32> {
  %found = tc.nonfinite_probe %g, %w : (tensor<3xf32>, tensor<2x2xf32>) -> tensor<f32>
  %s = tc.add %h, %found : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %0:2 = tc.sgd_update %p, %g, %b, %h, %h, %h, %s {skip_nonfinite} : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0 : tensor<3xf32>
}
