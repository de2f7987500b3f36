// RUN: trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16 loss-scale=dynamic" --trainc-autodiff --trainc-optimizer="optimizer=adam" --canonicalize --cse | FileCheck %s --check-prefix=DYN
// RUN: trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16 loss-scale=1024" --trainc-autodiff --trainc-optimizer="optimizer=sgd clip-grad-norm=1.0" --canonicalize --cse | FileCheck %s --check-prefix=FIXED
// RUN: trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16" --trainc-autodiff --trainc-optimizer="optimizer=adam" | FileCheck %s --check-prefix=NONE
// RUN: not trainc-opt %s --split-input-file --trainc-mixed-precision="precision=bf16 loss-scale=dynamic" 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: not trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16 loss-scale=-2" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16 loss-scale=1e-50" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16 loss-scale=1e-40" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not trainc-opt %s --split-input-file --trainc-mixed-precision="precision=fp16 loss-scale=0x1p3" 2>&1 | FileCheck %s --check-prefix=BAD

// fp16 loss scaling, GradScaler's semantics on the device.
//
// Dynamic: the scale is optimizer state that starts at 65536 and seeds the
// backward (d (scale * loss) = scale; the cross-entropy mean divides it by
// the batch); the loss the step returns is not scaled.
// DYN: module attributes {tc.loss_scale = #tc.loss_scaling<dynamic>, tc.precision = #tc.precision<fp16>}
// DYN-LABEL: func.func @train_step(
// DYN-SAME: %[[S:arg[0-9]+]]: tensor<f32> {tc.state = "loss_scale", tc.state_init = 6.553600e+04 : f32, tc.state_role = #tc.state_role<loss_scale>}
// DYN-SAME: %[[T:arg[0-9]+]]: tensor<f32> {tc.state = "adam.step", tc.state_role = #tc.state_role<adam.step>}
// DYN-SAME: %[[LR:arg[0-9]+]]: tensor<f32> {tc.hyper = #tc.hyper<lr>}, %[[OMB1:arg[0-9]+]]: tensor<f32> {tc.hyper = #tc.hyper<one_minus_beta1>}, %[[OMB2:arg[0-9]+]]: tensor<f32> {tc.hyper = #tc.hyper<one_minus_beta2>}
// DYN-SAME: %[[K:arg[0-9]+]]: tensor<f32> {tc.state = "loss_scale.skipped_steps", tc.state_role = #tc.state_role<loss_scale.skipped_steps>}
// DYN-SAME: %[[C:arg[0-9]+]]: tensor<f32> {tc.state = "loss_scale.growth_tracker", tc.state_role = #tc.state_role<loss_scale.growth_tracker>}
// DYN-SAME: %[[I:arg[0-9]+]]: tensor<f32> {tc.hyper = #tc.hyper<scale_growth_interval>}
//   Adam's step constants come from the device's step count, not the host.
// DYN-NOT: step_size
// DYN-NOT: bias_correction2_sqrt
// DYN-SAME: {tc.optimizer = #tc.optimizer<adam>}
// DYN: %[[LOSS:.*]] = tc.softmax_cross_entropy
// DYN: %[[SEED:.*]] = tc.div %[[S]], %{{.*}}
//   The gradients are unscaled by 1 / scale; one probe reads every
//   gradient (0, or +inf on an inf or NaN element) and is added to the
//   factor, which the updates then find not finite.
//   A good step is one whose factor is finite (the updates' own test).
// DYN: %[[INV:.*]] = tc.reciprocal %[[S]]
// DYN: %[[PROBE:.*]] = tc.nonfinite_probe %[[GW:[^,]*]], %[[GB:[^ ]*]] : (tensor<8x6xf32>, tensor<8xf32>) -> tensor<f32>
// DYN: %[[FACTOR:.*]] = tc.add %[[INV]], %[[PROBE]]
// DYN: %[[ABS:.*]] = tc.abs %[[FACTOR]]
// DYN: %[[OK:.*]] = tc.less_equal %[[ABS]], %{{.*}}
//   Good steps only advance Adam's t; lr / (1 - beta1^t) and
//   sqrt(1 - beta2^t) in f64 from the trainer's 1 - beta1/2.
// DYN: %[[T1:.*]] = tc.add %[[T]], %{{.*}}
// DYN: %[[TN:.*]] = tc.where %[[OK]], %[[T1]], %[[T]]
// DYN: %[[T64:.*]] = tc.cast %[[TN]] {to = f64}
// DYN: tc.pow %{{.*}}, %[[T64]] : (tensor<f64>, tensor<f64>) -> tensor<f64>
// DYN: tc.cast %{{.*}} {to = f32} : (tensor<f64>) -> tensor<f32>
// DYN: tc.pow %{{.*}}, %[[T64]] : (tensor<f64>, tensor<f64>) -> tensor<f64>
// DYN: tc.sqrt %{{.*}} : tensor<f64>
//   A skipped step counts; the interval-th good step doubles the scale (if
//   the double is finite), a skipped one halves it and resets the count.
// DYN: %[[K1:.*]] = tc.add %[[K]], %{{.*}}
// DYN: %[[KN:.*]] = tc.where %[[OK]], %[[K]], %[[K1]]
// DYN: %[[C1:.*]] = tc.add %[[C]], %{{.*}}
// DYN: %[[DUE:.*]] = tc.greater_equal %[[C1]], %[[I]]
// DYN: %[[TWICE:.*]] = tc.mul %[[S]], %{{.*}}
// DYN: %[[GROWN:.*]] = tc.where %[[DUE]], %{{.*}}, %[[S]]
// DYN: %[[HALF:.*]] = tc.mul %[[S]], %{{.*}}
// DYN: %[[SN:.*]] = tc.where %[[OK]], %[[GROWN]], %[[HALF]]
// DYN: %[[CD:.*]] = tc.where %[[DUE]], %{{.*}}, %[[C1]]
// DYN: %[[CN:.*]] = tc.where %[[OK]], %[[CD]], %{{.*}}
// DYN: tc.adam_update {{.*}}, %[[FACTOR]] {skip_nonfinite}
// DYN: tc.adam_update {{.*}}, %[[FACTOR]] {skip_nonfinite}
// DYN: return %[[LOSS]], {{.*}}, %[[TN]], %[[KN]], %[[SN]], %[[CN]],
//
// A fixed scale: a constant seed, no scale or good-step state, the skipped
// steps still counted; the clipping measures the unscaled gradients (the
// scaled ones' norm times 1 / scale).
// FIXED: module attributes {tc.loss_scale = 1.024000e+03 : f32, tc.precision = #tc.precision<fp16>}
// FIXED-LABEL: func.func @train_step(
// FIXED-NOT: tc.state = "loss_scale"
// FIXED-NOT: growth_tracker
// FIXED-SAME: {tc.state = "loss_scale.skipped_steps", tc.state_role = #tc.state_role<loss_scale.skipped_steps>}
// FIXED: %[[C:.*]] = tc.constant dense<1.024000e+03>
// FIXED: tc.div %[[C]], %{{.*}}
// FIXED: %[[INV:.*]] = tc.reciprocal %[[C]]
// FIXED: tc.nonfinite_probe
// FIXED: %[[NORM:.*]] = tc.global_norm
// FIXED: tc.mul %[[NORM]], %[[INV]]
// FIXED: tc.min
// FIXED: %[[F:.*]] = tc.mul %[[INV]], %{{.*}}
// FIXED: %[[SCALE:.*]] = tc.add %[[F]], %{{.*}}
// FIXED: tc.sgd_update {{.*}}, %[[SCALE]] {skip_nonfinite}
//
// No loss scaling: the seed is 1, no scaler state; Adam's step count (and
// so its bias corrections) is on the device all the same, advanced on
// every step.
// NONE-NOT: tc.loss_scale =
// NONE-LABEL: func.func @train_step(
// NONE-NOT: tc.state = "loss_scale
// NONE-SAME: %[[T:arg[0-9]+]]: tensor<f32> {tc.state = "adam.step", tc.state_role = #tc.state_role<adam.step>}
// NONE: %[[T1:.*]] = tc.add %[[T]], %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// NONE-NOT: tc.where
// NONE-NOT: skip_nonfinite
//
// BF16: error: loss scaling is for fp16 (bf16 has f32's exponent range and needs none)
// BAD: error: --loss-scale must be dynamic, none or a positive number from 2^-126 to 3.4e38 (an f32 scale whose reciprocal f32 holds), got
tc.param @w trainable : tensor<8x6xf32>
tc.param @b trainable : tensor<8xf32>
func.func @loss(%x: tensor<4x6xf32> {tc.input = "x"}, %label: tensor<4xi64> {tc.label = "label"},
                %sw: tensor<4xf32> {tc.sample_weights}, %w: tensor<8x6xf32> {tc.param = @w},
                %b: tensor<8xf32> {tc.param = @b})
    -> (tensor<f32> {tc.output = "loss"}) {
  %0 = tc.gemm %x, %w, %b {trans_b = true} : (tensor<4x6xf32>, tensor<8x6xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tc.softmax_cross_entropy %0, %label {reduction = "mean"} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<f32>
  return %1 : tensor<f32>
}

