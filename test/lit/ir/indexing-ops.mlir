// RUN: trainc-opt %s | FileCheck %s
// RUN: trainc-opt %s | trainc-opt | FileCheck %s

// Round trip of tc.cumsum, tc.mod, tc.tile, tc.trilu, tc.pad,
// tc.pad_backward and tc.scatter_nd. The result types were computed by hand (comments); the
// verifier checks each against the op's shape function.

// CHECK-LABEL: func.func @cumsum
// CHECK: tc.cumsum %{{.*}} {axis = 1 : i64} : tensor<2x16xi64>
// CHECK: tc.cumsum %{{.*}} {axis = 0 : i64, exclusive = true, reverse = true} : tensor<5xf32>
func.func @cumsum(%m: tensor<2x16xi64>, %x: tensor<5xf32>) -> (tensor<2x16xi64>, tensor<5xf32>) {
  %0 = tc.cumsum %m {axis = 1 : i64} : tensor<2x16xi64>
  %1 = tc.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : tensor<5xf32>
  return %0, %1 : tensor<2x16xi64>, tensor<5xf32>
}

// Mod broadcasts: [2, 3] and [3] give [2, 3].
// CHECK-LABEL: func.func @mod
// CHECK: tc.mod %{{.*}}, %{{.*}} : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
// CHECK: tc.mod %{{.*}}, %{{.*}} {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
func.func @mod(%a: tensor<6xi64>, %b: tensor<6xi64>, %x: tensor<2x3xf32>, %y: tensor<3xf32>)
    -> (tensor<6xi64>, tensor<2x3xf32>) {
  %0 = tc.mod %a, %b : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
  %1 = tc.mod %x, %y {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0, %1 : tensor<6xi64>, tensor<2x3xf32>
}

// Tile [2, 3, 4] by (2, 1, 3): [4, 3, 12].
// CHECK-LABEL: func.func @tile
// CHECK: tc.tile %{{.*}} {repeats = array<i64: 2, 1, 3>} : (tensor<2x3x4xf32>) -> tensor<4x3x12xf32>
func.func @tile(%x: tensor<2x3x4xf32>) -> tensor<4x3x12xf32> {
  %0 = tc.tile %x {repeats = array<i64: 2, 1, 3>} : (tensor<2x3x4xf32>) -> tensor<4x3x12xf32>
  return %0 : tensor<4x3x12xf32>
}

// CHECK-LABEL: func.func @trilu
// CHECK: tc.trilu %{{.*}} {k = 1 : i64} : tensor<2x4x5xf32>
// CHECK: tc.trilu %{{.*}} {k = -1 : i64, upper = false} : tensor<4x4xi1>
func.func @trilu(%x: tensor<2x4x5xf32>, %m: tensor<4x4xi1>) -> (tensor<2x4x5xf32>, tensor<4x4xi1>) {
  %0 = tc.trilu %x {upper = true, k = 1 : i64} : tensor<2x4x5xf32>
  %1 = tc.trilu %m {upper = false, k = -1 : i64} : tensor<4x4xi1>
  return %0, %1 : tensor<2x4x5xf32>, tensor<4x4xi1>
}

// Pad [2, 3, 4, 4] by begin (0, 0, 1, 2) and end (0, 0, 1, -1): axis 2 is
// 4 + 1 + 1 = 6, axis 3 is 4 + 2 - 1 = 5. Reflect 2 on both sides of axes 2
// and 3: 8 x 8. Edge 1 on both sides of axes 2 and 3: 6 x 6, and its
// gradient back to 4 x 4.
// CHECK-LABEL: func.func @pad
// CHECK: tc.pad %{{.*}} {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, -1>, value = 5.000000e-01 : f64} : (tensor<2x3x4x4xf32>) -> tensor<2x3x6x5xf32>
// CHECK: tc.pad %{{.*}} {mode = "reflect", pads = array<i64: 0, 0, 2, 2, 0, 0, 2, 2>} : (tensor<2x3x4x4xf32>) -> tensor<2x3x8x8xf32>
// CHECK: tc.pad %{{.*}} {mode = "edge", pads = array<i64: 1, 1, 1, 1>} : (tensor<4x4xi64>) -> tensor<6x6xi64>
// CHECK: tc.pad_backward %{{.*}} {input_shape = array<i64: 2, 3, 4, 4>, mode = "edge", pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>} : (tensor<2x3x6x6xf32>) -> tensor<2x3x4x4xf32>
// Wrap 5 before and 3 after an axis of 4: 12, more than once around.
// CHECK: tc.pad %{{.*}} {mode = "wrap", pads = array<i64: 0, 5, 0, 3>} : (tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK: tc.pad_backward %{{.*}} {input_shape = array<i64: 2, 4>, mode = "wrap", pads = array<i64: 0, 5, 0, 3>} : (tensor<2x12xf32>) -> tensor<2x4xf32>
func.func @pad(%x: tensor<2x3x4x4xf32>, %i: tensor<4x4xi64>, %dy: tensor<2x3x6x6xf32>)
    -> (tensor<2x3x6x5xf32>, tensor<2x3x8x8xf32>, tensor<6x6xi64>, tensor<2x3x4x4xf32>) {
  %0 = tc.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, -1>, value = 0.5 : f64}
      : (tensor<2x3x4x4xf32>) -> tensor<2x3x6x5xf32>
  %1 = tc.pad %x {pads = array<i64: 0, 0, 2, 2, 0, 0, 2, 2>, mode = "reflect"}
      : (tensor<2x3x4x4xf32>) -> tensor<2x3x8x8xf32>
  %2 = tc.pad %i {pads = array<i64: 1, 1, 1, 1>, mode = "edge"} : (tensor<4x4xi64>) -> tensor<6x6xi64>
  %3 = tc.pad_backward %dy {input_shape = array<i64: 2, 3, 4, 4>, mode = "edge",
                            pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>}
      : (tensor<2x3x6x6xf32>) -> tensor<2x3x4x4xf32>
  return %0, %1, %2, %3 : tensor<2x3x6x5xf32>, tensor<2x3x8x8xf32>, tensor<6x6xi64>, tensor<2x3x4x4xf32>
}

func.func @pad_wrap(%w: tensor<2x4xf32>) -> (tensor<2x12xf32>, tensor<2x4xf32>) {
  %0 = tc.pad %w {pads = array<i64: 0, 5, 0, 3>, mode = "wrap"} : (tensor<2x4xf32>) -> tensor<2x12xf32>
  %1 = tc.pad_backward %0 {input_shape = array<i64: 2, 4>, mode = "wrap", pads = array<i64: 0, 5, 0, 3>}
      : (tensor<2x12xf32>) -> tensor<2x4xf32>
  return %0, %1 : tensor<2x12xf32>, tensor<2x4xf32>
}

// ScatterND of [4, 4, 4] with 2 tuples of length 1: updates are [2, 4, 4].
// CHECK-LABEL: func.func @scatter_nd
// CHECK: tc.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} {reduction = "add"} : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
// CHECK: tc.scatter_nd %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x2xi1>, tensor<2x2xi32>, tensor<2xi1>) -> tensor<3x2xi1>
func.func @scatter_nd(%d: tensor<4x4x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4x4xf32>,
                      %m: tensor<3x2xi1>, %j: tensor<2x2xi32>, %v: tensor<2xi1>)
    -> (tensor<4x4x4xf32>, tensor<3x2xi1>) {
  %0 = tc.scatter_nd %d, %i, %u {reduction = "add"}
      : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
  %1 = tc.scatter_nd %m, %j, %v : (tensor<3x2xi1>, tensor<2x2xi32>, tensor<2xi1>) -> tensor<3x2xi1>
  return %0, %1 : tensor<4x4x4xf32>, tensor<3x2xi1>
}
