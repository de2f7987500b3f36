// RUN: trainc-opt %s --trainc-plan --split-input-file | FileCheck %s

// A chain: %0 dies when %2 is made, so %2 reuses its bytes (2x64 f32 = 512 B).
// CHECK-LABEL: func.func @chain
// CHECK-SAME: tc.arena_bytes = 1024
// CHECK: tc.relu %arg0 {tc.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: tc.relu %{{.*}} {tc.offsets = array<i64: [[B:[0-9]+]]>}
// CHECK: tc.relu %{{.*}} {tc.offsets = array<i64: [[A]]>}
func.func @chain(%x: tensor<2x64xf32>) -> tensor<2x64xf32> {
  %0 = tc.relu %x : tensor<2x64xf32>
  %1 = tc.relu %0 : tensor<2x64xf32>
  %2 = tc.relu %1 : tensor<2x64xf32>
  return %2 : tensor<2x64xf32>
}

// -----

// A reshape is a view: it gets no buffer, and it keeps %0 alive until %3
// reads it, so nothing can reuse %0's bytes before then.
// CHECK-LABEL: func.func @view_extends_lifetime
// CHECK-SAME: tc.arena_bytes = 1536
// CHECK: tc.relu %arg0 {tc.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: tc.reshape {{.*}}tc.offsets = array<i64: -1>
// CHECK: tc.relu {{.*}}tc.offsets = array<i64: [[B:[0-9]+]]>
// CHECK: tc.relu {{.*}}tc.offsets = array<i64: [[C:[0-9]+]]>
// CHECK: tc.add
func.func @view_extends_lifetime(%x: tensor<2x64xf32>) -> tensor<128xf32> {
  %0 = tc.relu %x : tensor<2x64xf32>
  %v = tc.reshape %0 {shape = array<i64: 128>} : (tensor<2x64xf32>) -> tensor<128xf32>
  %1 = tc.relu %x : tensor<2x64xf32>
  %2 = tc.relu %1 : tensor<2x64xf32>
  %r = tc.reshape %2 {shape = array<i64: 128>} : (tensor<2x64xf32>) -> tensor<128xf32>
  %3 = tc.add %v, %r : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
  return %3 : tensor<128xf32>
}

// -----

// Inference batch_norm: the running statistics alias the mean and variance
// arguments; constants and arguments take no arena space.
// CHECK-LABEL: func.func @batch_norm_views
// CHECK-SAME: tc.arena_bytes = 256
// CHECK: tc.constant
// CHECK-NOT: tc.offsets
// CHECK: tc.batch_norm {{.*}}tc.offsets = array<i64: 0, -1, -1>
func.func @batch_norm_views(%x: tensor<1x4x2x2xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>)
    -> (tensor<1x4x2x2xf32>, tensor<4xf32>) {
  %g = tc.constant dense<1.0> : tensor<4xf32>
  %b = tc.constant dense<0.0> : tensor<4xf32>
  %y, %rm, %rv = tc.batch_norm %x, %g, %b, %m, %v
      : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
      -> (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y, %rm : tensor<1x4x2x2xf32>, tensor<4xf32>
}

// -----

// Nothing to plan: a function that only returns its argument needs no arena.
// CHECK-LABEL: func.func @nothing
// CHECK-SAME: tc.arena_bytes = 0
// CHECK-NOT: tc.offsets
func.func @nothing(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}

// -----

// Two results alive at once never overlap, whatever their sizes; offsets are
// 256-byte aligned (3 f32 = 12 bytes still takes a 256-byte slot).
// CHECK-LABEL: func.func @aligned
// CHECK-SAME: tc.arena_bytes = 512
// CHECK: tc.neg %arg0 {tc.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK-NOT: array<i64: [[A]]>
// CHECK: tc.neg %arg0 {tc.offsets = array<i64: {{[0-9]+}}>}
func.func @aligned(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0 = tc.neg %x : tensor<3xf32>
  %1 = tc.neg %x : tensor<3xf32>
  return %0, %1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// A training dropout computes its result (no view); an inference dropout is a
// view of its operand.
// CHECK-LABEL: func.func @dropouts
// CHECK: tc.dropout %arg0 {tc.offsets = array<i64: -1>}
// CHECK: tc.dropout %arg0, %arg1 {tc.offsets = array<i64: 0>, training = true}
func.func @dropouts(%x: tensor<2x64xf32>, %k: tensor<2xi64>) -> (tensor<2x64xf32>, tensor<2x64xf32>) {
  %0 = tc.dropout %x : tensor<2x64xf32>
  %1 = tc.dropout %x, %k {training = true} : tensor<2x64xf32>, tensor<2xi64>
  return %0, %1 : tensor<2x64xf32>, tensor<2x64xf32>
}

// -----

// A fused update whose results go straight back to the parameter and the
// state they replace is written in place: no buffers.
// CHECK-LABEL: func.func @update_in_place
// CHECK: tc.sgd_update {{.*}} {tc.offsets = array<i64: -1, -1>}
tc.param @w trainable : tensor<64xf32>
func.func @update_in_place(%w: tensor<64xf32> {tc.param = @w}, %g: tensor<64xf32> {tc.input = "g"},
                           %b: tensor<64xf32> {tc.state = "momentum.w", tc.state_role = #tc.state_role<momentum>}, %lr: tensor<f32> {tc.hyper = #tc.hyper<lr>},
                           %m: tensor<f32> {tc.hyper = #tc.hyper<momentum>}, %wd: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>})
    -> (tensor<64xf32> {tc.update = @w}, tensor<64xf32> {tc.state_update = "momentum.w"}) {
  %p, %nb = tc.sgd_update %w, %g, %b, %lr, %m, %wd
      : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>)
  return %p, %nb : tensor<64xf32>, tensor<64xf32>
}

// -----

// Not in place where the old value is still read after the update (here by
// a later op), or where the result goes to another slot: buffers.
// CHECK-LABEL: func.func @update_needs_buffers
// CHECK: tc.sgd_update {{.*}} {tc.offsets = array<i64: {{[0-9]+}}, {{[0-9]+}}>}
tc.param @w trainable : tensor<64xf32>
tc.param @u trainable : tensor<64xf32>
func.func @update_needs_buffers(%w: tensor<64xf32> {tc.param = @w}, %g: tensor<64xf32> {tc.input = "g"},
                                %b: tensor<64xf32> {tc.state = "momentum.w", tc.state_role = #tc.state_role<momentum>}, %lr: tensor<f32> {tc.hyper = #tc.hyper<lr>},
                                %m: tensor<f32> {tc.hyper = #tc.hyper<momentum>}, %wd: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>})
    -> (tensor<64xf32> {tc.update = @u}, tensor<64xf32> {tc.state_update = "momentum.w"}, tensor<64xf32>) {
  %p, %nb = tc.sgd_update %w, %g, %b, %lr, %m, %wd
      : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>)
  %late = tc.add %b, %w : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  return %p, %nb, %late : tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// A view of the parameter read after the update keeps the old value alive:
// not in place.
// CHECK-LABEL: func.func @update_view_read_later
// CHECK: tc.sgd_update {{.*}} {tc.offsets = array<i64: {{[0-9]+}}, -1>}
tc.param @w trainable : tensor<64xf32>
func.func @update_view_read_later(%w: tensor<64xf32> {tc.param = @w}, %g: tensor<64xf32> {tc.input = "g"},
                                  %b: tensor<64xf32> {tc.state = "momentum.w", tc.state_role = #tc.state_role<momentum>}, %lr: tensor<f32> {tc.hyper = #tc.hyper<lr>},
                                  %m: tensor<f32> {tc.hyper = #tc.hyper<momentum>}, %wd: tensor<f32> {tc.hyper = #tc.hyper<weight_decay>})
    -> (tensor<64xf32> {tc.update = @w}, tensor<64xf32> {tc.state_update = "momentum.w"}, tensor<8x8xf32>) {
  %view = tc.reshape %w {shape = array<i64: 8, 8>} : (tensor<64xf32>) -> tensor<8x8xf32>
  %p, %nb = tc.sgd_update %w, %g, %b, %lr, %m, %wd
      : (tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<64xf32>, tensor<64xf32>)
  %late = tc.relu %view : tensor<8x8xf32>
  return %p, %nb, %late : tensor<64xf32>, tensor<64xf32>, tensor<8x8xf32>
}

// -----

// A data-parallel bucket: the three results of tc.all_reduce lie side by
// side in one buffer (10 floats = 40 B, rounded up to 256; 64 floats = 256
// B; 3 floats), so the bucket is one collective over contiguous memory.
// Readers of any member keep the whole bucket alive: while %late is made,
// the bucket's 768 bytes and %late's 256 are live, with the three inputs
// before (1536 bytes in all).
// CHECK-LABEL: func.func @bucket
// CHECK-SAME: tc.arena_bytes = 1536
// CHECK: tc.all_reduce {{.*}}tc.offsets = array<i64: [[#BUCKET:]],
// CHECK-SAME: {{^}} [[#BUCKET+256]], [[#BUCKET+512]]>
func.func @bucket(%a: tensor<10xf32>, %b: tensor<64xf32>, %c: tensor<3xf32>, %s: tensor<f32>)
    -> (tensor<10xf32>, tensor<64xf32>, tensor<3xf32>) {
  %0 = tc.relu %a : tensor<10xf32>
  %1 = tc.relu %b : tensor<64xf32>
  %2 = tc.relu %c : tensor<3xf32>
  %r:3 = tc.all_reduce %0, %1, %2 scale %s {bucket = 0 : i64} : (tensor<10xf32>, tensor<64xf32>, tensor<3xf32>), tensor<f32> -> (tensor<10xf32>, tensor<64xf32>, tensor<3xf32>)
  %first = tc.relu %r#0 : tensor<10xf32>
  %late = tc.relu %b : tensor<64xf32>
  %sum = tc.add %late, %r#1 : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
  %3 = tc.relu %r#2 : tensor<3xf32>
  return %first, %sum, %3 : tensor<10xf32>, tensor<64xf32>, tensor<3xf32>
}

// -----

// A concat of rows: each piece is one contiguous run of the result, so the
// pieces are computed in the concat's own buffer (offsets 0 and 256 of it)
// and the concat, marked tc.in_place, copies nothing.
// CHECK-LABEL: func.func @concat_rows_in_place
// CHECK-SAME: tc.arena_bytes = 1024
// CHECK: tc.relu %arg0 {tc.offsets = array<i64: [[A:[0-9]+]]>}
// CHECK: tc.tanh %arg0 {tc.offsets = array<i64: [[B:[0-9]+]]>}
// CHECK: tc.concat {{.*}} {axis = 0 : i64, tc.in_place, tc.offsets = array<i64: [[A]]>}
func.func @concat_rows_in_place(%x: tensor<1x64xf32>) -> tensor<2x64xf32> {
  %0 = tc.relu %x : tensor<1x64xf32>
  %1 = tc.tanh %x : tensor<1x64xf32>
  %2 = tc.concat %0, %1 {axis = 0 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<2x64xf32>
  %3 = tc.sigmoid %2 : tensor<2x64xf32>
  return %3 : tensor<2x64xf32>
}

// -----

// Must not fire: a concat of columns (its pieces are not contiguous); a
// piece that is an argument (no op computes it); a piece that a second
// concat takes as well (only the first gets it in place; the second copies);
// a piece at an offset off the 256-byte alignment.
// CHECK-LABEL: func.func @concat_copies
// CHECK: tc.concat %{{.*}}, %{{.*}} {axis = 1 : i64, tc.offsets
// CHECK: tc.concat %arg0, %{{.*}} {axis = 0 : i64, tc.offsets
// CHECK: tc.concat {{.*}} {axis = 0 : i64, tc.in_place, tc.offsets
// CHECK: tc.concat {{.*}} {axis = 0 : i64, tc.offsets
// CHECK: tc.concat {{.*}} {axis = 0 : i64, tc.offsets
func.func @concat_copies(%x: tensor<1x64xf32>, %y: tensor<1x3xf32>, %z: tensor<2x32xf32>)
    -> (tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x3xf32>) {
  %0 = tc.relu %z : tensor<2x32xf32>
  %1 = tc.tanh %z : tensor<2x32xf32>
  %c = tc.concat %0, %1 {axis = 1 : i64} : (tensor<2x32xf32>, tensor<2x32xf32>) -> tensor<2x64xf32>
  %2 = tc.sigmoid %x : tensor<1x64xf32>
  %a = tc.concat %x, %2 {axis = 0 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<2x64xf32>
  %3 = tc.exp %x : tensor<1x64xf32>
  %4 = tc.neg %x : tensor<1x64xf32>
  %p = tc.concat %3, %4 {axis = 0 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<2x64xf32>
  %q = tc.concat %4, %3 {axis = 0 : i64} : (tensor<1x64xf32>, tensor<1x64xf32>) -> tensor<2x64xf32>
  %5 = tc.relu %y : tensor<1x3xf32>
  %6 = tc.tanh %y : tensor<1x3xf32>
  %u = tc.concat %5, %6 {axis = 0 : i64} : (tensor<1x3xf32>, tensor<1x3xf32>) -> tensor<2x3xf32>
  return %c, %a, %p, %q, %u : tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x64xf32>, tensor<2x3xf32>
}
