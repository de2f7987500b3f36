//===- TcIndexingOps.td - tc ops that index along axes -----*- tablegen -*-===//
//
// Included by TcOps.td (which defines Tc_Op and Tc_BroadcastOp): the ops of
// ONNX CumSum, Mod, Tile, Trilu, Pad, ScatterND, ArgMax/ArgMin and
// GatherElements. Their shape functions and
// verifiers are in TcOpsIndexing.cpp, their gradient rules in Gradients.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_IR_TCINDEXINGOPS_TD
#define TRAINC_IR_TCINDEXINGOPS_TD

//===----------------------------------------------------------------------===//
// Cumulative sums, modulo, tiling, triangles, padding and scatter (shape
// functions in TcOpsIndexing.cpp)
//===----------------------------------------------------------------------===//

def Tc_CumSumOp : Tc_Op<"cumsum", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "cumulative sum along one axis (ONNX CumSum)";
  let description = [{
    `result[..., j, ...]` is the sum of `input[..., i, ...]` for `i <= j`
    (`i < j` with `exclusive`); with `reverse` the sum runs from the end
    (`i >= j`, or `i > j`). `axis` is non-negative. Each line along the axis
    is summed in order from its first element, so the result does not depend
    on the target or the thread count. The gradient of a float cumsum is the
    cumsum of the result gradient in the other direction.

    ```mlir
    %ids = tc.cumsum %mask {axis = 1 : i64} : tensor<2x16xi64>
    %r = tc.cumsum %x {axis = 0 : i64, exclusive = true, reverse = true} : tensor<5xf32>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$input, I64Attr:$axis,
      DefaultValuedAttr<BoolAttr, "false">:$exclusive,
      DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Tc_NumericTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tc_ModOp : Tc_BroadcastOp<"mod", Tc_NumericTensor, 0, "remainder (ONNX Mod)",
                              [DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let description = [{
    With `fmod = false` (integers only) the remainder has the sign of the
    divisor, as Python's `%` and `torch.remainder`; with `fmod = true` it has
    the sign of the dividend, as C's `fmod` and `torch.fmod`. Float operands
    require `fmod = true` (ONNX). An integer remainder by 0 is 0 (numpy), as
    is `INT_MIN mod -1`. Operands broadcast as in numpy. The gradient of a
    float fmod is `dy` for the dividend and `-trunc(a / b) * dy` for the
    divisor.

    ```mlir
    %r = tc.mod %a, %b : (tensor<6xi64>, tensor<6xi64>) -> tensor<6xi64>
    %f = tc.mod %x, %y {fmod = true} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$lhs, Tc_NumericTensor:$rhs,
      DefaultValuedAttr<BoolAttr, "false">:$fmod);
  let hasVerifier = 1;
}

def Tc_TileOp : Tc_Op<"tile", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "repeat the tensor `repeats[d]` times along each axis d (ONNX Tile)";
  let description = [{
    Result dimension d is `input.shape[d] * repeats[d]`, and result element
    `c` is input element `c mod input.shape` (numpy.tile, torch's
    `x.repeat`). Repeats are non-negative, one per axis. The gradient sums
    the result gradient over the tiles.

    ```mlir
    %y = tc.tile %x {repeats = array<i64: 2, 1, 3>} : (tensor<2x3x4xf32>) -> tensor<4x3x12xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, DenseI64ArrayAttr:$repeats);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_TriluOp : Tc_Op<"trilu", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "keep the upper or lower triangle of the last two axes (ONNX Trilu)";
  let description = [{
    Element (..., r, c) is kept when `c - r >= k` (`upper`, torch.triu) or
    `c - r <= k` (lower, torch.tril) and set to 0 otherwise; the input has
    rank 2 or more. The gradient applies the same mask to the result
    gradient.

    ```mlir
    %u = tc.trilu %x {upper = true, k = 1 : i64} : tensor<2x4x5xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input,
      DefaultValuedAttr<BoolAttr, "true">:$upper,
      DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tc_PadOp : Tc_Op<"pad", [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "pad or crop every axis (ONNX Pad: constant, reflect, edge, wrap)";
  let description = [{
    `pads` holds the begin pads of every axis, then the end pads (ONNX
    order); result dimension d is `input.shape[d] + pads[d] + pads[rank + d]`.
    In mode `constant` a negative pad crops, and new elements are `value`
    (converted to the element type). In mode `reflect` (torch's
    `F.pad(mode='reflect')`) the pads mirror the axis without repeating its
    edge and must be below its size; in mode `edge` (`replicate`) they repeat
    the edge element and the axis must not be empty; in mode `wrap`
    (numpy's, torch's `circular`) the axis repeats, as many times as the pads
    need, and must not be empty. Reflect, edge and wrap pads are not
    negative.

    The gradient of a constant pad is the pad of the result gradient with
    the negated pads (a crop where the forward padded, zeros where it
    cropped); reflect, edge and wrap pads scatter-add it back
    (`tc.pad_backward`).

    ```mlir
    %y = tc.pad %x {pads = array<i64: 0, 0, 1, 2, 0, 0, 1, -1>, value = 0.5 : f64}
        : (tensor<2x3x4x4xf32>) -> tensor<2x3x6x5xf32>
    %r = tc.pad %x {pads = array<i64: 0, 0, 2, 2, 0, 0, 2, 2>, mode = "reflect"}
        : (tensor<2x3x4x4xf32>) -> tensor<2x3x8x8xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$input, DenseI64ArrayAttr:$pads,
      DefaultValuedStrAttr<StrAttr, "constant">:$mode,
      DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tc_PadBackwardOp : Tc_Op<"pad_backward", [Pure]> {
  let summary = "gradient of a reflect, edge or wrap tc.pad: scatter-add into the input";
  let description = [{
    Element j of the result (of shape `input_shape`) is the sum of the
    elements of `result_grad` that the forward pad (`pads`, `mode`) copied
    from input element j, added in increasing order of their position.

    ```mlir
    %dx = tc.pad_backward %dy {input_shape = array<i64: 2, 3, 4, 4>, mode = "edge",
                               pads = array<i64: 0, 0, 1, 1, 0, 0, 1, 1>}
        : (tensor<2x3x6x6xf32>) -> tensor<2x3x4x4xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$result_grad, DenseI64ArrayAttr:$input_shape,
      DenseI64ArrayAttr:$pads, StrAttr:$mode);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "$result_grad attr-dict `:` functional-type(operands, results)";
}

def Tc_ScatterNDOp : Tc_Op<"scatter_nd", [Pure]> {
  let summary = "`data` with slices written or combined at index tuples (ONNX ScatterND)";
  let description = [{
    `indices` is [..., q] (q <= rank of `data`): each tuple picks the slice
    `data[i0, ..., iq-1]`, which becomes the matching slice of `updates`
    (shape indices.shape[:-1] + data.shape[q:]), or is combined with it by
    `reduction` `add`, `mul`, `max` or `min` (not for i1). Negative indices
    count from the end. Tuples apply in order, so a repeated tuple keeps the
    last update (`none`) or accumulates in order; a tuple outside `data` is
    skipped (ONNX calls it an error, which a kernel cannot report). No
    gradient rule.

    ```mlir
    %r = tc.scatter_nd %data, %idx, %upd {reduction = "add"}
        : (tensor<4x4x4xf32>, tensor<2x1xi64>, tensor<2x4x4xf32>) -> tensor<4x4x4xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$data, Tc_IndexTensor:$indices, Tc_Tensor:$updates,
      DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

class Tc_ArgReduceOp<string mnemonic, string which, string torch>
    : Tc_Op<mnemonic, [Pure]> {
  let summary = "index of the " # which # " along one axis (ONNX Arg" # which # ")";
  let description = [{
    Element j of the int64 result is the position along `axis` (non-negative)
    of the }] # which # [{ of the input line through j: the first such position, or the
    last with `select_last_index`. NaN counts as the }] # which # [{ (as `}] # torch # [{`):
    a line holding NaN gives the position of its first (or last) NaN. With
    `keepdims` the axis stays with size 1, else it is dropped. The axis must
    not be empty. No gradient (the result is an integer).

    ```mlir
    %e = tc.}] # mnemonic # [{ %ids {axis = 1 : i64, keepdims = false} : (tensor<2x7xi32>) -> tensor<2xi64>
    %k = tc.}] # mnemonic # [{ %x {axis = 0 : i64, select_last_index = true} : (tensor<3x4xf32>) -> tensor<1x4xi64>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$input, I64Attr:$axis,
      DefaultValuedAttr<BoolAttr, "true">:$keepdims,
      DefaultValuedAttr<BoolAttr, "false">:$select_last_index);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_ArgMaxOp : Tc_ArgReduceOp<"argmax", "Max", "torch.argmax">;
def Tc_ArgMinOp : Tc_ArgReduceOp<"argmin", "Min", "torch.argmin">;


def Tc_TopKOp : Tc_Op<"top_k", [Pure]> {
  let summary = "positions of the k largest (or smallest) elements along one axis (ONNX TopK)";
  let description = [{
    The int64 result has the input's shape with `k` along `axis`: position j
    holds the index of the line's j-th element in order, largest first
    (`largest`) or smallest first; equal values in index order, NaN larger than
    every number (torch.topk). The values are a tc.gather_elements of the
    input at these positions, whose gradient scatters back to them. No
    gradient (the result is an integer).

    ```mlir
    %i = tc.top_k %x {axis = 1 : i64, k = 2 : i64} : (tensor<4x9xf32>) -> tensor<4x2xi64>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$input, I64Attr:$axis, I64Attr:$k,
      DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs StaticShapeTensorOf<[I64]>:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Tc_ScatterElementsOp : Tc_Op<"scatter_elements",
    [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "write update elements into data along one axis by an index tensor (ONNX ScatterElements)";
  let description = [{
    The result is `data` with, for every element c of `indices` (in order),
    the element at c with coordinate `axis` replaced by `indices[c]` set to
    `updates[c]` (`reduction` "none"; the last write wins) or combined with
    it ("add", "mul", "max", "min"), as `torch.scatter` / `scatter_reduce`.
    `indices` and `updates` have the same shape, of data's rank, each axis but
    `axis` no longer than data's. Negative indices count from the end; one
    outside the axis writes nothing (ONNX calls it an error, which a kernel
    cannot report). One kernel element per data line applies that line's
    updates in order, so every run gives the same result. Gradients: for
    "none", data's is the result gradient with the written positions zeroed
    and the updates' a tc.gather_elements of it; for "add", data's is the
    result gradient itself; "mul", "max" and "min" have none.

    ```mlir
    %r = tc.scatter_elements %data, %idx, %upd {axis = 1 : i64, reduction = "add"}
        : (tensor<2x8xf32>, tensor<2x3xi64>, tensor<2x3xf32>) -> tensor<2x8xf32>
    ```
  }];
  let arguments = (ins Tc_NumericTensor:$data, Tc_IndexTensor:$indices,
      Tc_NumericTensor:$updates, I64Attr:$axis,
      DefaultValuedStrAttr<StrAttr, "none">:$reduction);
  let results = (outs Tc_NumericTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_GatherElementsOp : Tc_Op<"gather_elements",
    [Pure, DeclareOpInterfaceMethods<Tc_GradientOpInterface>]> {
  let summary = "pick data elements along one axis by an index tensor (ONNX GatherElements)";
  let description = [{
    The result has the shape of `indices` (of the rank of `data`, each axis
    but `axis` no longer than data's): result element c is `data` at c with
    coordinate `axis` replaced by `indices[c]` (`torch.gather`). Negative
    indices count from the end; an index outside the axis reads 0 (ONNX
    calls it an error, which a kernel cannot report). `axis` is non-negative.
    The gradient scatter-adds the result gradient back into zeros of the
    data shape (`tc.gather_elements_backward`).

    ```mlir
    %r = tc.gather_elements %scores, %idx {axis = 2 : i64}
        : (tensor<2x4x8xf32>, tensor<2x4x4xi64>) -> tensor<2x4x4xf32>
    ```
  }];
  let arguments = (ins Tc_Tensor:$data, Tc_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs Tc_Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

def Tc_GatherElementsBackwardOp : Tc_Op<"gather_elements_backward", [Pure]> {
  let summary = "gradient of tc.gather_elements: a scatter-add along the axis";
  let description = [{
    Element j of the result (of shape `data_shape`) is the sum of the
    elements c of `result_grad` whose index `indices[c]` (negative counting
    from the end) picked j, that is those with c equal to j off `axis`,
    added in increasing order of c along the axis (deterministic, as
    ScatterElements with reduction add into zeros).

    ```mlir
    %dx = tc.gather_elements_backward %dy, %idx {axis = 2 : i64, data_shape = array<i64: 2, 4, 8>}
        : (tensor<2x4x4xf32>, tensor<2x4x4xi64>) -> tensor<2x4x8xf32>
    ```
  }];
  let arguments = (ins Tc_FloatTensor:$result_grad, Tc_IndexTensor:$indices, I64Attr:$axis,
      DenseI64ArrayAttr:$data_shape);
  let results = (outs Tc_FloatTensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

#endif // TRAINC_IR_TCINDEXINGOPS_TD
