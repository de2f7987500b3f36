// RUN: trainc-opt %s --trainc-mixed-precision --split-input-file | FileCheck %s
// RUN: trainc-opt %s --trainc-mixed-precision=precision=fp32 --split-input-file | FileCheck %s --check-prefix=FP32
// RUN: trainc-opt %s --trainc-mixed-precision=precision=fp16 --split-input-file | FileCheck %s --check-prefix=FP16

// A linear layer: x and W are cast to bf16, the bias stays f32 (the gemm's
// out_type is f32) and one cast rounds the biased sum; relu computes in
// bf16; the loss reads f32; the declared f32 result is kept.
// CHECK-LABEL: func.func @loss
// CHECK-DAG: %[[W:.*]] = tc.cast %arg3 {to = bf16} : (tensor<8x6xf32>) -> tensor<8x6xbf16>
// CHECK-DAG: %[[X:.*]] = tc.cast %arg0 {to = bf16} : (tensor<4x6xf32>) -> tensor<4x6xbf16>
// CHECK: %[[G:.*]] = tc.gemm %[[X]], %[[W]], %arg4 {out_type = f32, trans_b = true} : (tensor<4x6xbf16>, tensor<8x6xbf16>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: %[[R:.*]] = tc.cast %[[G]] {to = bf16} : (tensor<4x8xf32>) -> tensor<4x8xbf16>
// CHECK: %[[A:.*]] = tc.relu %[[R]] : tensor<4x8xbf16>
// CHECK: %[[L:.*]] = tc.cast %[[A]] {to = f32}
// CHECK: tc.softmax_cross_entropy %[[L]], %arg1
// CHECK: return %{{.*}}, %[[L]] : tensor<f32>, tensor<4x8xf32>
// FP32-LABEL: func.func @loss
// FP32-NOT: bf16
// FP32-NOT: tc.cast
// FP32: return
// FP16: tc.gemm {{.*}} : (tensor<4x6xf16>, tensor<8x6xf16>, tensor<8xf32>) -> tensor<4x8xf32>
tc.param @w trainable : tensor<8x6xf32>
tc.param @b trainable : tensor<8xf32>
func.func @loss(%x: tensor<4x6xf32> {tc.input = "x"}, %label: tensor<4xi64> {tc.label = "label"},
                %sw: tensor<4xf32> {tc.sample_weights}, %w: tensor<8x6xf32> {tc.param = @w},
                %b: tensor<8xf32> {tc.param = @b})
    -> (tensor<f32> {tc.output = "loss"}, tensor<4x8xf32> {tc.output = "logits"}) {
  %0 = tc.gemm %x, %w, %b {trans_b = true} : (tensor<4x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tc.relu %0 : tensor<4x8xf32>
  %2 = tc.softmax_cross_entropy %1, %label {reduction = "mean"} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %2, %1 : tensor<f32>, tensor<4x8xf32>
}

// -----

// Pointwise ops compute in the widest type of their operands that are not
// parameters or constants: a matmul's bf16 product plus an f32 bias
// parameter stays bf16 (the bias is cast, a splat constant is rebuilt in
// bf16), plus an f32 activation (the residual) is f32. exp, a reduction and
// layer norm read f32; reshape and transpose keep bf16; every tensor is
// cast once, however many ops read it.
// CHECK-LABEL: func.func @loss
// CHECK-DAG: %[[HALF:.*]] = tc.constant dense<5.000000e-01> : tensor<bf16>
// CHECK-DAG: %[[B:.*]] = tc.cast %arg3 {to = bf16} : (tensor<8xf32>) -> tensor<8xbf16>
// CHECK: %[[M:.*]] = tc.matmul {{.*}} -> tensor<4x8xbf16>
// CHECK: %[[S:.*]] = tc.add %[[M]], %[[B]] : (tensor<4x8xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16>
// CHECK: %[[H:.*]] = tc.mul %[[S]], %[[HALF]] : (tensor<4x8xbf16>, tensor<bf16>) -> tensor<4x8xbf16>
// CHECK: %[[H32:.*]] = tc.cast %[[H]] {to = f32}
// CHECK: %[[T:.*]] = tc.transpose %[[H]] {{.*}} -> tensor<8x4xbf16>
// CHECK: %[[T32:.*]] = tc.cast %[[T]] {to = f32}
// CHECK: tc.exp %[[T32]] : tensor<8x4xf32>
// CHECK: %[[RES:.*]] = tc.add %[[H32]], %arg0 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: tc.layer_norm %[[RES]]
// CHECK-NOT: tc.cast %arg3
tc.param @w trainable : tensor<8x8xf32>
tc.param @b trainable : tensor<8xf32>
tc.param @g trainable : tensor<8xf32>
func.func @loss(%x: tensor<4x8xf32> {tc.input = "x"}, %label: tensor<4xi64> {tc.label = "label"},
                %w: tensor<8x8xf32> {tc.param = @w}, %b: tensor<8xf32> {tc.param = @b},
                %g: tensor<8xf32> {tc.param = @g})
    -> (tensor<f32> {tc.output = "loss"}) {
  %half = tc.constant dense<5.000000e-01> : tensor<f32>
  %0 = tc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = tc.add %0, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %2 = tc.mul %1, %half : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = tc.transpose %2 {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %4 = tc.exp %3 : tensor<8x4xf32>
  %5 = tc.add %2, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = tc.layer_norm %5, %g {axis = 1 : i64, epsilon = 1.000000e-05 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %7 = tc.reduce_sum %4 {axes = array<i64>, keepdims = false} : (tensor<8x4xf32>) -> tensor<f32>
  %8 = tc.reduce_sum %6 {axes = array<i64>, keepdims = false} : (tensor<4x8xf32>) -> tensor<f32>
  %9 = tc.add %7, %8 : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %9 : tensor<f32>
}

// -----

// A convolution reads its input, weight and bias in bf16 (cuDNN convolves
// one type); batch norm keeps the bf16 input and output with f32 scale,
// bias and statistics; max pooling keeps bf16; global average pooling's
// kernel is f32, so it reads f32.
// CHECK-LABEL: func.func @loss
// CHECK: %[[Y:.*]] = tc.conv {{.*}} : (tensor<2x3x8x8xbf16>, tensor<4x3x3x3xbf16>, tensor<4xbf16>) -> tensor<2x4x8x8xbf16>
// CHECK: %[[N:.*]], %{{.*}}, %{{.*}} = tc.batch_norm %[[Y]], %arg3, %arg4, %arg5, %arg6 {training = true} : (tensor<2x4x8x8xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x8x8xbf16>, tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[P:.*]] = tc.max_pool %[[N]] {{.*}} : (tensor<2x4x8x8xbf16>) -> tensor<2x4x4x4xbf16>
// CHECK: %[[C:.*]] = tc.cast %[[P]] {to = f32} : (tensor<2x4x4x4xbf16>) -> tensor<2x4x4x4xf32>
// CHECK: tc.global_avg_pool %[[C]]
tc.param @w trainable : tensor<4x3x3x3xf32>
tc.param @b trainable : tensor<4xf32>
tc.param @g trainable : tensor<4xf32>
tc.param @beta trainable : tensor<4xf32>
tc.param @m : tensor<4xf32>
tc.param @v : tensor<4xf32>
func.func @loss(%x: tensor<2x3x8x8xf32> {tc.input = "x"}, %w: tensor<4x3x3x3xf32> {tc.param = @w},
                %b: tensor<4xf32> {tc.param = @b}, %g: tensor<4xf32> {tc.param = @g},
                %beta: tensor<4xf32> {tc.param = @beta}, %m: tensor<4xf32> {tc.param = @m},
                %v: tensor<4xf32> {tc.param = @v}) -> (tensor<f32> {tc.output = "loss"}) {
  %0 = tc.conv %x, %w, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32>
  %n, %rm, %rv = tc.batch_norm %0, %g, %beta, %m, %v {training = true}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %1 = tc.max_pool %n {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %2 = tc.global_avg_pool %1 : (tensor<2x4x4x4xf32>) -> tensor<2x4x1x1xf32>
  %3 = tc.reduce_sum %2 {axes = array<i64>, keepdims = false} : (tensor<2x4x1x1xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// The pass works on @loss only: the prediction function stays f32.
// CHECK-LABEL: func.func @forward
// CHECK-NOT: bf16
// CHECK: return
tc.param @w trainable : tensor<8x6xf32>
func.func @forward(%x: tensor<4x6xf32> {tc.input = "x"}, %w: tensor<8x6xf32> {tc.param = @w})
    -> (tensor<4x8xf32> {tc.output = "y"}) {
  %0 = tc.gemm %x, %w {trans_b = true} : (tensor<4x6xf32>, tensor<8x6xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
