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
