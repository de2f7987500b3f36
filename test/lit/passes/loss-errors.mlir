// RUN: trainc-opt %s --split-input-file --trainc-loss --verify-diagnostics
// RUN: not trainc-opt %s --split-input-file --trainc-loss="loss=hinge" 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: --loss must be cross-entropy, mse, bce or output, got 'hinge'

// Cross entropy needs a class axis.
// expected-error @+1 {{--loss=cross-entropy needs logits [N, C, ...], got 'tensor<4xf32>'}}
func.func @forward(%x: tensor<4xf32> {tc.input = "x"}) -> (tensor<4xf32> {tc.output = "y"}) {
  return %x : tensor<4xf32>
}

// -----

// A loss needs an output with a batch axis.
// expected-error @+1 {{--loss=cross-entropy needs an f32 output with a batch axis, got 'tensor<f32>'}}
func.func @forward(%x: tensor<f32> {tc.input = "x"}) -> (tensor<f32> {tc.output = "y"}) {
  return %x : tensor<f32>
}

// -----

// The step's own inputs are files named after them: a model input may not
// take the label's name (--label renames it) ...
// expected-error @+1 {{the model has an input named 'label', the name of the label input; choose another with --label=NAME}}
func.func @forward(%x: tensor<4x3xf32> {tc.input = "label"}) -> (tensor<4x3xf32> {tc.output = "y"}) {
  return %x : tensor<4x3xf32>
}

// -----

// ... nor a name the step reserves.
// expected-error @+1 {{the model has an input named 'sample_weights', which the training step reserves for its own input}}
func.func @forward(%x: tensor<4x3xf32> {tc.input = "sample_weights"}) -> (tensor<4x3xf32> {tc.output = "y"}) {
  return %x : tensor<4x3xf32>
}
