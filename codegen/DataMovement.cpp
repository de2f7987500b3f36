//===- DataMovement.cpp - transposes, slices, concatenation, indexing -----===//
//
// Generated kernels that move elements: a strided copy (transpose, slice,
// the slice gradient, expand, each input of a concat) walks the output's
// coordinates; the indexing ops (cumsum, tile, trilu, pad, scatter_nd,
// argmax/argmin, gather_elements) take their bodies from IndexKernels.cpp.
//
//===----------------------------------------------------------------------===//

#include "codegen/Escape.h"
#include "codegen/IndexKernels.h"
#include "codegen/ProgramEmitter.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace trainc;
using namespace trainc::codegen;

/// The inputs of a concat one multi-tensor kernel copies at most (its
/// pointer arrays stay under CUDA's 4 KiB of kernel parameters).
static constexpr size_t kConcatRun = 128;

/// Copies shorter than this many elements per contiguous run walk every
/// element's coordinates.
static constexpr int64_t kMinCopyRun = 16;

/// The first axis of the longest run of trailing axes that both sides of a
/// strided copy store densely (each side's stride there is the copied
/// shape's row-major one): the elements from that axis on are one
/// contiguous run on both sides. shape.size() when there is none.
static size_t contiguousRunAxis(ArrayRef<int64_t> shape, ArrayRef<int64_t> dense,
                                ArrayRef<int64_t> inStrides, ArrayRef<int64_t> outStrides) {
  size_t axis = shape.size();
  while (axis > 0 && (shape[axis - 1] == 1 || (inStrides[axis - 1] == dense[axis - 1] &&
                                               outStrides[axis - 1] == dense[axis - 1])))
    --axis;
  return axis;
}

/// Inputs of one shape of a concat: each is copied to its place in the
/// output, starting `first` elements in and `step` elements after the one
/// before, walking the input's coordinates with the output's strides.
void ProgramEmitter::emitConcatRun(tc::ConcatOp op, ArrayRef<Value> run, int64_t first,
                                   int64_t step, ArrayRef<int64_t> outStrides) {
  ArrayRef<int64_t> shape = shapeOf(run.front());
  std::string t = cType(run.front().getType());
  std::vector<int64_t> dense = rowMajorStrides(shape);
  const size_t runAxis = contiguousRunAxis(shape, dense, dense, outStrides);
  int64_t length = 1;
  for (int64_t extent : shape.drop_front(runAxis))
    length *= extent;
  std::string code;
  if (runAxis == 0) {
    // The whole input is one run of the output: a plain copy.
    code = "  out[i] = in[i];\n";
  } else if (length >= kMinCopyRun) {
    // Runs of `length` elements: the run's coordinates, one division.
    code = "  const int64_t row = i / " + std::to_string(length) + ", inner = i - row * " +
           std::to_string(length) + ";\n" +
           decomposeIndex(shape.take_front(runAxis), "row", "c", "  ");
    code += "  out[" + linearIndex(ArrayRef<int64_t>(outStrides).take_front(runAxis), 0, "c") +
            " + inner] = in[i];\n";
  } else {
    code = decomposeIndex(shape, "i", "c", "  ");
    code += "  out[" + linearIndex(outStrides, 0, "c") + "] = in[i];\n";
  }
  std::vector<int64_t> counts(run.size(), countOf(run.front()));
  std::vector<std::string> comment = {opComment(op), std::to_string(run.size()) +
                                                         " inputs of " + shapeText(shape)};
  std::string name = kernels.addMultiTensorKernel(
      "concat", comment, {{t, "in", false}, {t, "out", true}}, {}, counts, code);
  body += "  {\n    const " + t + " *const in[] = {";
  for (auto [k, v] : llvm::enumerate(run))
    body += (k ? ", " : "") + ptr(v);
  body += "};\n    " + t + " *const out[] = {";
  for (size_t k = 0; k < run.size(); ++k)
    body += (k ? ", " : "") + ptr(op.getResult()) + " + " +
            std::to_string(first + static_cast<int64_t>(k) * step);
  body += "};\n  ";
  call(name + "(ctx, in, out)");
  body += "  }\n";
}

LogicalResult ProgramEmitter::emitDataMovement(Operation *op) {
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](tc::TransposeOp o) {
        std::vector<int64_t> own = rowMajorStrides(shapeOf(o.getInput())), strides;
        for (int64_t p : o.getPerm())
          strides.push_back(own[p]);
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        return emitStridedCopy(o, "transpose", o.getInput(), out, strides,
                               0, rowMajorStrides(out), 0, ptr(o.getResult()));
      })
      .Case([&](tc::SliceOp o) {
        auto [strides, base] = sliceStrides(shapeOf(o.getInput()), o.getStarts(), o.getSteps());
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        return emitStridedCopy(o, "slice", o.getInput(), out, strides, base,
                               rowMajorStrides(out), 0, ptr(o.getResult()));
      })
      .Case([&](tc::SliceBackwardOp o) {
        // Zeros, then dy copied onto the sliced positions.
        auto [strides, base] = sliceStrides(o.getInputShape(), o.getStarts(), o.getSteps());
        call("ctx.fill(" + ptr(o.getResult()) + ", 0, " +
             std::to_string(countOf(o.getResult())) + " * sizeof(" +
             cType(o.getResult().getType()) + "))");
        ArrayRef<int64_t> dy = shapeOf(o.getResultGrad());
        return emitStridedCopy(o, "slice_backward", o.getResultGrad(), dy,
                               rowMajorStrides(dy), 0, strides, base, ptr(o.getResult()));
      })
      .Case([&](tc::ExpandOp o) {
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        return emitStridedCopy(o, "expand", o.getInput(), out,
                               broadcastStrides(shapeOf(o.getInput()), out), 0,
                               rowMajorStrides(out), 0, ptr(o.getResult()));
      })
      .Case([&](tc::ConcatOp o) {
        if (o->hasAttr(tc::kInPlaceAttrName)) {
          body += "  // its " + std::to_string(o.getInputs().size()) +
                  " inputs were computed in place\n";
          return success();
        }
        ArrayRef<int64_t> out = shapeOf(o.getResult());
        std::vector<int64_t> outStrides = rowMajorStrides(out);
        int64_t axis = o.getAxis(), at = 0;
        auto inputs = o.getInputs();
        for (size_t k = 0; k < inputs.size();) {
          // A run of inputs of one shape is one multi-tensor kernel.
          ArrayRef<int64_t> shape = shapeOf(inputs[k]);
          size_t end = k + 1;
          while (end < inputs.size() && shapeOf(inputs[end]) == shape &&
                 end - k < kConcatRun)
            ++end;
          if (end - k > 1) {
            SmallVector<Value> run(inputs.begin() + k, inputs.begin() + end);
            emitConcatRun(o, run, at * outStrides[axis], shape[axis] * outStrides[axis],
                          outStrides);
            at += static_cast<int64_t>(end - k) * shape[axis];
            k = end;
            continue;
          }
          if (failed(emitStridedCopy(o, "concat", inputs[k], shape, rowMajorStrides(shape), 0,
                                     outStrides, at * outStrides[axis], ptr(o.getResult()))))
            return failure();
          at += shape[axis];
          ++k;
        }
        return success();
      })
      .Case<tc::CumSumOp, tc::TileOp, tc::TriluOp, tc::PadOp, tc::PadBackwardOp,
            tc::ScatterNDOp, tc::ArgMaxOp, tc::ArgMinOp, tc::TopKOp, tc::GatherElementsOp,
            tc::GatherElementsBackwardOp, tc::ScatterElementsOp>(
          [&](Operation *o) { return emitIndexing(o); })
      .Default([&](Operation *o) {
        return o->emitError("codegen does not support ") << o->getName() << " yet";
      });
}

/// Cumulative sums, tiles, triangles and pads: generated kernels whose
/// bodies come from IndexKernels.cpp.
LogicalResult ProgramEmitter::emitIndexing(Operation *op) {
  Value in = op->getOperand(0), out = op->getResult(0);
  Type elem = cast<ShapedType>(in.getType()).getElementType();
  std::string t = cType(elem), what, code;
  int64_t count = countOf(out);
  if (auto scatter = dyn_cast<tc::ScatterNDOp>(op)) {
    // A copy of data, then one kernel element per slice element.
    std::vector<std::string> comment = {opComment(op)};
    std::string copy = kernels.addKernel("scatter_nd_copy", comment,
                                         {{t, "in", false}, {t, "out", true}}, count,
                                         "  out[i] = in[i];\n");
    call(copy + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
    ArrayRef<int64_t> idx = shapeOf(scatter.getIndices());
    int64_t q = idx.back(), tuples = q == 0 ? 1 : countOf(scatter.getIndices()) / q, slice = 1;
    if (q == 0)
      for (size_t d = 0; d + 1 < idx.size(); ++d)
        tuples *= idx[d];
    for (size_t d = q; d < shapeOf(in).size(); ++d)
      slice *= shapeOf(in)[d];
    std::string name = kernels.addKernel(
        "scatter_nd", comment,
        {{cType(scatter.getIndices().getType()), "idx", false}, {t, "upd", false},
         {t, "out", true}},
        slice,
        scatterNDBody(shapeOf(in), q, tuples, slice, scatter.getReduction(),
                      isa<FloatType>(elem)));
    call(name + "(ctx, " + ptr(scatter.getIndices()) + ", " + ptr(scatter.getUpdates()) + ", " +
         ptr(out) + ")");
    return success();
  }
  if (isa<tc::ArgMaxOp, tc::ArgMinOp>(op)) {
    bool max = isa<tc::ArgMaxOp>(op);
    int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
    bool last = cast<BoolAttr>(op->getAttr("select_last_index")).getValue();
    std::string name = kernels.addKernel(
        max ? "argmax" : "argmin", {opComment(op)}, {{t, "in", false}, {"int64_t", "out", true}},
        count, argReduceBody(shapeOf(in), axis, max, last, isa<FloatType>(elem)));
    call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
    return success();
  }
  if (auto scatter = dyn_cast<tc::ScatterElementsOp>(op)) {
    Value idx = scatter.getIndices();
    const int64_t axis = scatter.getAxis();
    std::string name = kernels.addKernel(
        "scatter_elements", {opComment(op)},
        {{t, "in", false}, {cType(idx.getType()), "idx", false}, {t, "upd", false},
         {t, "out", true}},
        count / shapeOf(out)[axis],
        scatterElementsBody(shapeOf(out), shapeOf(idx), axis, scatter.getReduction(),
                            isa<FloatType>(elem)));
    call(name + "(ctx, " + ptr(in) + ", " + ptr(idx) + ", " + ptr(scatter.getUpdates()) + ", " +
         ptr(out) + ")");
    return success();
  }
  if (auto topk = dyn_cast<tc::TopKOp>(op)) {
    const int64_t axis = topk.getAxis(), k = topk.getK();
    std::string name = kernels.addKernel(
        "top_k", {opComment(op)}, {{t, "in", false}, {"int64_t", "out", true}}, count / k,
        topKBody(shapeOf(in), axis, k, topk.getLargest(), isa<FloatType>(elem)));
    call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
    return success();
  }
  if (isa<tc::GatherElementsOp, tc::GatherElementsBackwardOp>(op)) {
    bool back = isa<tc::GatherElementsBackwardOp>(op);
    Value idx = op->getOperand(1);
    int64_t axis = cast<IntegerAttr>(op->getAttr("axis")).getInt();
    std::string name = kernels.addKernel(
        back ? "gather_elements_backward" : "gather_elements", {opComment(op)},
        {{t, "in", false}, {cType(idx.getType()), "idx", false}, {t, "out", true}}, count,
        back ? gatherElementsBackwardBody(shapeOf(out), shapeOf(idx), axis, t)
             : gatherElementsBody(shapeOf(in), shapeOf(idx), axis, t));
    call(name + "(ctx, " + ptr(in) + ", " + ptr(idx) + ", " + ptr(out) + ")");
    return success();
  }
  if (auto cumsum = dyn_cast<tc::CumSumOp>(op)) {
    what = "cumsum";
    code = cumsumBody(shapeOf(in), cumsum.getAxis(), cumsum.getExclusive(), cumsum.getReverse(),
                      t);
    count = cumsumLines(shapeOf(in), cumsum.getAxis());
  } else if (isa<tc::TileOp>(op)) {
    what = "tile";
    code = tileBody(shapeOf(in), shapeOf(out));
  } else if (auto trilu = dyn_cast<tc::TriluOp>(op)) {
    what = trilu.getUpper() ? "triu" : "tril";
    code = triluBody(shapeOf(in), trilu.getUpper(), trilu.getK(), t);
  } else if (auto pad = dyn_cast<tc::PadOp>(op)) {
    what = "pad_" + pad.getMode().str();
    double v = pad.getValue().convertToDouble();
    // A 16-bit float converts from float explicitly (a bare literal makes
    // `cond ? in[j] : 0.0` ambiguous for nvcc).
    std::string value = isa<FloatType>(elem) && elem.getIntOrFloatBitWidth() == 16
                            ? t + "(" + literal(v, true) + ")"
                        : isa<FloatType>(elem) ? literal(v, elem.isF32())
                        : elem.isInteger(1)  ? std::string(v != 0 ? "true" : "false")
                                             : t + "(" + intLiteral(static_cast<int64_t>(v)) + ")";
    code = padBody(shapeOf(in), shapeOf(out), pad.getPads(), pad.getMode(), value);
  } else {
    auto back = cast<tc::PadBackwardOp>(op);
    what = "pad_" + back.getMode().str() + "_backward";
    code = padBackwardBody(shapeOf(out), shapeOf(in), back.getPads(), back.getMode(), t);
  }
  std::vector<std::string> comment = {opComment(op)};
  std::string name = kernels.addKernel(what, comment, {{t, "in", false}, {t, "out", true}}, count,
                                       code);
  call(name + "(ctx, " + ptr(in) + ", " + ptr(out) + ")");
  return success();
}

LogicalResult ProgramEmitter::emitStridedCopy(Operation *op, StringRef what, Value in,
                                              ArrayRef<int64_t> shape,
                                              ArrayRef<int64_t> inStrides, int64_t inBase,
                                              ArrayRef<int64_t> outStrides, int64_t outBase,
                                              StringRef outPtr) {
  std::string t = cType(in.getType());
  std::vector<int64_t> dense = rowMajorStrides(shape);
  const size_t runAxis = contiguousRunAxis(shape, dense, inStrides, outStrides);
  int64_t run = 1;
  for (int64_t extent : shape.drop_front(runAxis))
    run *= extent;
  if (run >= kMinCopyRun) {
    // Rows of `run` contiguous elements on both sides (a channel slice or
    // a concat input of NCHW tensors: one run per image; a slice of whole
    // leading rows: one run): the coordinates
    // of the row, then a plain copy loop (the row loop hands the body its
    // element `inner`; the row's offsets do not change along it). Every
    // element's div and mod made such a copy run at a few GB/s.
    ArrayRef<int64_t> outer = shape.take_front(runAxis);
    int64_t rows = 1;
    for (int64_t extent : outer)
      rows *= extent;
    std::string code =
        outer.empty() ? std::string("  (void)i; // one row: `inner` is the element\n")
                      : "  const int64_t row = (i - inner) / " + std::to_string(run) + ";\n" +
                            decomposeIndex(outer, "row", "c", "  ");
    code += "  out[" + linearIndex(outStrides.take_front(runAxis), outBase, "c") +
            " + inner] = in[" + linearIndex(inStrides.take_front(runAxis), inBase, "c") +
            " + inner];\n";
    std::vector<std::string> comment = {opComment(op)};
    std::string name =
        kernels.addKernel(what, comment, {{t, "in", false}, {t, "out", true}},
                          run * rows, code, false, false, run);
    call(name + "(ctx, " + ptr(in) + ", " + outPtr.str() + ")");
    return success();
  }
  // A side that is walked densely is indexed by `i` itself.
  bool denseOut = outBase == 0 && ArrayRef<int64_t>(dense) == outStrides;
  bool denseIn = inBase == 0 && ArrayRef<int64_t>(dense) == inStrides;
  SmallVector<bool> used(shape.size(), false);
  for (size_t d = 0; d < shape.size(); ++d)
    used[d] = (!denseIn && inStrides[d] != 0) || (!denseOut && outStrides[d] != 0);
  std::string code = decomposeIndex(shape, "i", "c", "  ", used);
  code += "  out[" + (denseOut ? std::string("i") : linearIndex(outStrides, outBase, "c")) +
          "] = in[" + (denseIn ? std::string("i") : linearIndex(inStrides, inBase, "c")) +
          "];\n";
  std::vector<std::string> comment = {opComment(op)};
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  std::string name = kernels.addKernel(what, comment, {{t, "in", false}, {t, "out", true}},
                                       count, code);
  call(name + "(ctx, " + ptr(in) + ", " + outPtr.str() + ")");
  return success();
}

