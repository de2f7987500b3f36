// RUN: trainc-opt %s --split-input-file --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-layout --canonicalize --cse | FileCheck %s

// A residual block with batch norm, max and global average pooling and a
// classifier: in @train_step every convolution, pooling and batch norm (and
// their gradients) is channels-last, and the only transposes left are at the
// boundary: the input images, the two conv weights (OIHW -> OHWI) and their
// gradients (back to OIHW). The relu gradients, the residual add and the
// global pool's gradient are computed channels-last, the conv bias gradient
// sums the channels-last dy over N, H, W, and the flatten is a reshape.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tc.transpose
// CHECK: %[[X:.*]] = tc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x8x8xf32>) -> tensor<2x8x8x3xf32>
// CHECK-NEXT: %[[W1:.*]] = tc.transpose %arg4 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NEXT: tc.conv %[[X]], %[[W1]] {channels_last = true, {{.*}}} : (tensor<2x8x8x3xf32>, tensor<4x3x3x3xf32>) -> tensor<2x8x8x4xf32>
// CHECK-NEXT: tc.batch_norm {{.*}} {channels_last = true, training = true} : (tensor<2x8x8x4xf32>,
// CHECK-NOT: tc.transpose
// CHECK: tc.max_pool {{.*}}channels_last = true{{.*}} : (tensor<2x8x8x4xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NEXT: %[[W2:.*]] = tc.transpose %arg9 {perm = array<i64: 0, 2, 3, 1>} : (tensor<4x4x3x3xf32>) -> tensor<4x3x3x4xf32>
// CHECK-NEXT: tc.conv {{.*}}, %[[W2]], %arg10 {channels_last = true,
// CHECK-NOT: tc.transpose
// CHECK: tc.global_avg_pool {{.*}} {channels_last = true} : (tensor<2x4x4x4xf32>) -> tensor<2x1x1x4xf32>
// CHECK-NEXT: tc.reshape {{.*}} {shape = array<i64: 2, 4>} : (tensor<2x1x1x4xf32>) -> tensor<2x4xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.reshape {{.*}} {shape = array<i64: 2, 1, 1, 4>} : (tensor<2x4xf32>) -> tensor<2x1x1x4xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.expand {{.*}} {shape = array<i64: 2, 4, 4, 4>} : (tensor<2x1x1x4xf32>) -> tensor<2x4x4x4xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.conv_backward_data {{.*}}, %[[W2]] {channels_last = true, {{.*}}input_shape = array<i64: 2, 4, 4, 4>
// CHECK-NEXT: %[[DW2:.*]] = tc.conv_backward_filter {{.*}} {channels_last = true, {{.*}}weight_shape = array<i64: 4, 3, 3, 4>}
// CHECK-NEXT: %[[DW2T:.*]] = tc.transpose %[[DW2]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<4x3x3x4xf32>) -> tensor<4x4x3x3xf32>
// CHECK-NEXT: %[[DB2:.*]] = tc.reduce_sum {{.*}} {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x4x4x4xf32>) -> tensor<4xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.max_pool_backward {{.*}}channels_last = true
// CHECK-NOT: tc.transpose
// CHECK: tc.batch_norm_backward {{.*}} {channels_last = true} : (tensor<2x8x8x4xf32>,
// CHECK-NEXT: %[[DW1:.*]] = tc.conv_backward_filter {{.*}} {channels_last = true,
// CHECK-NEXT: %[[DW1T:.*]] = tc.transpose %[[DW1]] {perm = array<i64: 0, 3, 1, 2>} : (tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NOT: tc.transpose
// CHECK: return {{.*}}%[[DW1T]]{{.*}}%[[DW2T]], %[[DB2]],
tc.param @c1.w trainable : tensor<4x3x3x3xf32>
tc.param @bn.s trainable : tensor<4xf32>
tc.param @bn.b trainable : tensor<4xf32>
tc.param @bn.m : tensor<4xf32>
tc.param @bn.v : tensor<4xf32>
tc.param @c2.w trainable : tensor<4x4x3x3xf32>
tc.param @c2.b trainable : tensor<4xf32>
tc.param @fc.w trainable : tensor<10x4xf32>
tc.param @fc.b trainable : tensor<10xf32>
func.func @forward(%x: tensor<2x3x8x8xf32> {tc.input = "x"}, %w1: tensor<4x3x3x3xf32> {tc.param = @c1.w},
                   %s: tensor<4xf32> {tc.param = @bn.s}, %b: tensor<4xf32> {tc.param = @bn.b},
                   %m: tensor<4xf32> {tc.param = @bn.m}, %v: tensor<4xf32> {tc.param = @bn.v},
                   %w2: tensor<4x4x3x3xf32> {tc.param = @c2.w}, %b2: tensor<4xf32> {tc.param = @c2.b},
                   %fw: tensor<10x4xf32> {tc.param = @fc.w}, %fb: tensor<10xf32> {tc.param = @fc.b})
    -> (tensor<2x10xf32> {tc.output = "y"}) {
  %c = tc.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %y, %rm, %rv = tc.batch_norm %c, %s, %b, %m, %v {momentum = 0.9 : f32}
      : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = tc.relu %y : tensor<2x4x8x8xf32>
  %p = tc.max_pool %r {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x8x8xf32>) -> tensor<2x4x4x4xf32>
  %c2 = tc.conv %p, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x4x4x4xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<2x4x4x4xf32>
  %a = tc.add %c2, %p : (tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %r2 = tc.relu %a : tensor<2x4x4x4xf32>
  %g = tc.global_avg_pool %r2 : (tensor<2x4x4x4xf32>) -> tensor<2x4x1x1xf32>
  %f = tc.reshape %g {shape = array<i64: 2, 4>} : (tensor<2x4x1x1xf32>) -> tensor<2x4xf32>
  %o = tc.gemm %f, %fw, %fb {trans_b = true} : (tensor<2x4xf32>, tensor<10x4xf32>, tensor<10xf32>) -> tensor<2x10xf32>
  return %o : tensor<2x10xf32>
}

// -----

// A DenseNet-style concat of the input with a conv's output, scaled by a
// [C, 1, 1] layer scale, into a 1x1 conv and a flatten: the concat joins the
// channels-last values on axis 3 (the conv's transposed input is reused),
// the layer scale is a [1, 1, 1, C] reshape, the 1x1 conv's weight a reshape,
// and in the backward the concat's gradient slices channels-last too. Left:
// the input, the 3x3 weight and its gradient, and the flatten (both ways).
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: tc.transpose
// CHECK: %[[X:.*]] = tc.transpose %arg0 {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT: tc.transpose %arg3 {perm = array<i64: 0, 2, 3, 1>}
// CHECK-NOT: tc.transpose
// CHECK: %[[J:.*]] = tc.concat %[[X]], %{{.*}} {axis = 3 : i64} : (tensor<2x8x8x3xf32>, tensor<2x8x8x4xf32>) -> tensor<2x8x8x7xf32>
// CHECK-NEXT: %[[S:.*]] = tc.reshape %arg4 {shape = array<i64: 1, 1, 1, 7>} : (tensor<7x1x1xf32>) -> tensor<1x1x1x7xf32>
// CHECK-NEXT: tc.mul %[[J]], %[[S]] : (tensor<2x8x8x7xf32>, tensor<1x1x1x7xf32>) -> tensor<2x8x8x7xf32>
// CHECK-NEXT: tc.reshape %arg5 {shape = array<i64: 2, 1, 1, 7>}
// CHECK-NEXT: tc.conv {{.*}}channels_last = true
// CHECK-NEXT: tc.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x8x8x2xf32>) -> tensor<2x2x8x8xf32>
// CHECK-NEXT: tc.reshape {{.*}} -> tensor<2x128xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.transpose {{.*}} {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x2x8x8xf32>) -> tensor<2x8x8x2xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.slice {{.*}} {ends = array<i64: 2, 8, 8, 7>, starts = array<i64: 0, 0, 0, 3>, steps = array<i64: 1, 1, 1, 1>} : (tensor<2x8x8x7xf32>) -> tensor<2x8x8x4xf32>
// CHECK-NOT: tc.transpose
// CHECK: tc.transpose {{.*}} {perm = array<i64: 0, 3, 1, 2>} : (tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NOT: tc.transpose
// CHECK: return
tc.param @c1.w trainable : tensor<4x3x3x3xf32>
tc.param @ls trainable : tensor<7x1x1xf32>
tc.param @c2.w trainable : tensor<2x7x1x1xf32>
func.func @forward(%x: tensor<2x3x8x8xf32> {tc.input = "x"}, %w1: tensor<4x3x3x3xf32> {tc.param = @c1.w},
                   %ls: tensor<7x1x1xf32> {tc.param = @ls}, %w2: tensor<2x7x1x1xf32> {tc.param = @c2.w})
    -> (tensor<2x128xf32> {tc.output = "y"}) {
  %c = tc.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32>
  %r = tc.relu %c : tensor<2x4x8x8xf32>
  %j = tc.concat %x, %r {axis = 1 : i64} : (tensor<2x3x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x7x8x8xf32>
  %s = tc.mul %j, %ls : (tensor<2x7x8x8xf32>, tensor<7x1x1xf32>) -> tensor<2x7x8x8xf32>
  %c2 = tc.conv %s, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>}
      : (tensor<2x7x8x8xf32>, tensor<2x7x1x1xf32>) -> tensor<2x2x8x8xf32>
  %f = tc.reshape %c2 {shape = array<i64: 2, 128>} : (tensor<2x2x8x8xf32>) -> tensor<2x128xf32>
  return %f : tensor<2x128xf32>
}

// -----

// Not fired: a model without convolutions keeps its 4-D batch norm and
// pooling channels-first.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: channels_last
// CHECK-NOT: tc.transpose
// CHECK: return
tc.param @bn.s trainable : tensor<3xf32>
tc.param @bn.b trainable : tensor<3xf32>
tc.param @bn.m : tensor<3xf32>
tc.param @bn.v : tensor<3xf32>
func.func @forward(%x: tensor<2x3x4x4xf32> {tc.input = "x"}, %s: tensor<3xf32> {tc.param = @bn.s},
                   %b: tensor<3xf32> {tc.param = @bn.b}, %m: tensor<3xf32> {tc.param = @bn.m},
                   %v: tensor<3xf32> {tc.param = @bn.v}) -> (tensor<2x3xf32> {tc.output = "y"}) {
  %y, %rm, %rv = tc.batch_norm %x, %s, %b, %m, %v {momentum = 0.9 : f32}
      : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
      -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>)
  %g = tc.global_avg_pool %y : (tensor<2x3x4x4xf32>) -> tensor<2x3x1x1xf32>
  %f = tc.reshape %g {shape = array<i64: 2, 3>} : (tensor<2x3x1x1xf32>) -> tensor<2x3xf32>
  return %f : tensor<2x3xf32>
}

// -----

// Not fired on a convolution padded unevenly (cuDNN pads symmetrically, and
// the CUDA runtime pads such convolutions into an NCHW copy): it and its
// gradients stay channels-first.
// CHECK-LABEL: func.func @train_step(
// CHECK-NOT: channels_last
// CHECK-NOT: tc.transpose
// CHECK: return
tc.param @c.w trainable : tensor<2x3x2x2xf32>
func.func @forward(%x: tensor<2x3x4x4xf32> {tc.input = "x"}, %w: tensor<2x3x2x2xf32> {tc.param = @c.w})
    -> (tensor<2x32xf32> {tc.output = "y"}) {
  %c = tc.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>}
      : (tensor<2x3x4x4xf32>, tensor<2x3x2x2xf32>) -> tensor<2x2x4x4xf32>
  %f = tc.reshape %c {shape = array<i64: 2, 32>} : (tensor<2x2x4x4xf32>) -> tensor<2x32xf32>
  return %f : tensor<2x32xf32>
}
