// RUN: trainc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{argument 0 refers to @missing, which is not a tc.param of this module}}
func.func @forward(%w: tensor<4xf32> {tc.param = @missing}) {
  return
}

// -----

tc.param @w trainable : tensor<4xf32>
// expected-error @+1 {{argument 0 has type 'tensor<3xf32>' but @w is 'tensor<4xf32>'}}
func.func @forward(%w: tensor<3xf32> {tc.param = @w}) {
  return
}

// -----

// expected-error @+1 {{'tc.param' must be a symbol reference to a tc.param}}
func.func @forward(%w: tensor<3xf32> {tc.param = "w"}) {
  return
}

// -----

// expected-error @+1 {{'tc.input' must name the model input with a string}}
func.func @forward(%x: tensor<3xf32> {tc.input = 1 : i64}) {
  return
}

// -----

// expected-error @+1 {{'tc.output' must name the model output with a string}}
func.func @forward(%x: tensor<3xf32>) -> (tensor<3xf32> {tc.output = 1 : i64}) {
  return %x : tensor<3xf32>
}

// -----

// A parameter whose initial value has another type.
// expected-error @+1 {{initial value has type 'tensor<3xf32>' but the parameter is 'tensor<4xf32>'}}
tc.param @w trainable : tensor<4xf32> = dense<1.0> : tensor<3xf32>
