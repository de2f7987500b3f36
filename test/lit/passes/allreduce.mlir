// RUN: trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-allreduce="bucket-bytes=4000" --canonicalize --cse | FileCheck %s
// RUN: trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-allreduce --canonicalize --cse | FileCheck %s --check-prefix=ONE
// RUN: trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-allreduce="bucket-bytes=8000 first-bucket-bytes=3380" --canonicalize --cse | FileCheck %s --check-prefix=FIRST
// RUN: trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff="freeze=^w1|^b1" --trainc-allreduce --canonicalize --cse | FileCheck %s --check-prefix=FROZEN
// RUN: trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-grad-accum="micro-batches=2" --trainc-allreduce --canonicalize --cse | FileCheck %s --check-prefix=ACCUM
// RUN: trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --canonicalize --cse | FileCheck %s --check-prefix=OFF
// RUN: not trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff="freeze=." --trainc-allreduce 2>&1 | FileCheck %s --check-prefix=NOGRAD
// RUN: not trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-allreduce="bucket-bytes=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-allreduce="first-bucket-bytes=0" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not trainc-opt %s --trainc-loss="loss=cross-entropy" --trainc-autodiff --trainc-optimizer --trainc-allreduce 2>&1 | FileCheck %s --check-prefix=ORDER

// Linear(20 -> 84) -> ReLU -> Linear(84 -> 10). The backward completes the
// gradients of w2 (3360 bytes) and b2 (40), then w1 (6720), then b1 (336).
// With 4000-byte buckets: [w2, b2], [w1] alone (larger than a bucket), [b1];
// each all-reduce comes right after the op that completes its last
// gradient (w1's before b1's sum is even computed), all scaled by the new
// hyperparameter, and the step returns the averages in its own order. The
// loss is not reduced.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[SCALE:arg[0-9]+]]: tensor<f32> {tc.hyper = #tc.hyper<data_parallel.scale>}
// CHECK-SAME: tc.data_parallel = 3 : i64
// CHECK: %[[LOSS:.*]] = tc.div
// CHECK: %[[DW2:.*]] = tc.gemm %{{.*}}, %{{.*}} {trans_a = true} : (tensor<4x10xf32>, tensor<4x84xf32>) -> tensor<10x84xf32>
// CHECK-NEXT: %[[DB2:.*]] = tc.reduce_sum {{.*}} -> tensor<10xf32>
// CHECK-NEXT: %[[B0:.*]]:2 = tc.all_reduce %[[DW2]], %[[DB2]] scale %[[SCALE]] {bucket = 0 : i64} : (tensor<10x84xf32>, tensor<10xf32>), tensor<f32> -> (tensor<10x84xf32>, tensor<10xf32>)
// CHECK: %[[DW1:.*]] = tc.gemm %{{.*}}, %arg0 {trans_a = true} : (tensor<4x84xf32>, tensor<4x20xf32>) -> tensor<84x20xf32>
// CHECK-NEXT: %[[B1:.*]] = tc.all_reduce %[[DW1]] scale %[[SCALE]] {bucket = 1 : i64}
// CHECK-NEXT: %[[DB1:.*]] = tc.reduce_sum {{.*}} -> tensor<84xf32>
// CHECK-NEXT: %[[B2:.*]] = tc.all_reduce %[[DB1]] scale %[[SCALE]] {bucket = 2 : i64}
// CHECK-NEXT: return %[[LOSS]], %[[B1]], %[[B2]], %[[B0]]#0, %[[B0]]#1, %{{[^ ]*}} :

// 25 MiB (the default): one bucket after the last gradient.
// ONE-LABEL: func.func @train_step(
// ONE-SAME: tc.data_parallel = 1 : i64
// ONE: %[[DB1:.*]] = tc.reduce_sum {{.*}} -> tensor<84xf32>
// ONE-NEXT: %[[B:.*]]:4 = tc.all_reduce %{{.*}}, %{{.*}}, %{{.*}}, %[[DB1]] scale %{{.*}} {bucket = 0 : i64} : (tensor<10x84xf32>, tensor<10xf32>, tensor<84x20xf32>, tensor<84xf32>)
// ONE-NEXT: return %{{.*}}, %[[B]]#2, %[[B]]#3, %[[B]]#0, %[[B]]#1, %{{[^ ]*}} :
// ONE-NOT: tc.all_reduce

// A smaller first bucket (PyTorch DDP's is 1 MiB): with buckets of 8000
// bytes and a first of 3380, w2's gradient (3360) is the first bucket alone,
// right after the op that makes it, and b2, w1 and b1 (7096) the second.
// FIRST-LABEL: func.func @train_step(
// FIRST-SAME: tc.data_parallel = 2 : i64
// FIRST: %[[DW2:.*]] = tc.gemm {{.*}} -> tensor<10x84xf32>
// FIRST-NEXT: tc.all_reduce %[[DW2]] scale %{{.*}} {bucket = 0 : i64}
// FIRST: tc.all_reduce %{{.*}}, %{{.*}}, %{{.*}} scale %{{.*}} {bucket = 1 : i64} : (tensor<10xf32>, tensor<84x20xf32>, tensor<84xf32>)

// Frozen parameters have no gradient and are in no bucket.
// FROZEN-LABEL: func.func @train_step(
// FROZEN: tc.all_reduce %{{.*}}, %{{.*}} scale %{{.*}} {bucket = 0 : i64} : (tensor<10x84xf32>, tensor<10xf32>), tensor<f32>
// FROZEN-NOT: tc.all_reduce

// Gradient accumulation: @train_step (the group's last micro-batch)
// averages the accumulated totals, which go to the optimizer and back to
// the accumulators; @accumulate_step does not communicate.
// ACCUM-LABEL: func.func @train_step(
// ACCUM: %[[T:.*]] = tc.accumulate_grad
// ACCUM: %[[R:.*]]:4 = tc.all_reduce %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} scale
// ACCUM: return %{{.*}}, %[[R]]#2, %[[R]]#3, %[[R]]#0, %[[R]]#1, %{{[^,]*}}, %[[R]]#2, %[[R]]#3, %[[R]]#0, %[[R]]#1 :
// ACCUM-LABEL: func.func @accumulate_step(
// ACCUM-NOT: tc.all_reduce
// ACCUM: return

// Without the phase (no --data-parallel) nothing communicates.
// OFF-NOT: tc.all_reduce
// OFF-NOT: data_parallel

// NOGRAD: error: data parallelism: @train_step returns no gradient (every parameter frozen?)
// BAD: error: the allreduce phase needs bucket sizes of at least 1 byte, got
// ORDER: error: the allreduce phase runs before the optimizer phase
tc.param @w1 trainable : tensor<84x20xf32>
tc.param @b1 trainable : tensor<84xf32>
tc.param @w2 trainable : tensor<10x84xf32>
tc.param @b2 trainable : tensor<10xf32>
func.func @forward(%x: tensor<4x20xf32> {tc.input = "x"}, %w1: tensor<84x20xf32> {tc.param = @w1},
                   %b1: tensor<84xf32> {tc.param = @b1}, %w2: tensor<10x84xf32> {tc.param = @w2},
                   %b2: tensor<10xf32> {tc.param = @b2})
    -> (tensor<4x10xf32> {tc.output = "y"}) {
  %h = tc.gemm %x, %w1, %b1 {trans_b = true} : (tensor<4x20xf32>, tensor<84x20xf32>, tensor<84xf32>) -> tensor<4x84xf32>
  %r = tc.relu %h : tensor<4x84xf32>
  %y = tc.gemm %r, %w2, %b2 {trans_b = true} : (tensor<4x84xf32>, tensor<10x84xf32>, tensor<10xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
