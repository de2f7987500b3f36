//===- IndexKernels.h - element functions of the indexing ops --*- C++ -*-===//
//
// The bodies of the generated kernels of tc.cumsum, tc.tile, tc.trilu,
// tc.pad and tc.pad_backward: plain shape arithmetic turned into C++ text
// that reads the element index as `i`, the operand as `in` and writes `out`
// (KernelWriter wraps them for both targets). No MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_CODEGEN_INDEXKERNELS_H
#define TRAINC_CODEGEN_INDEXKERNELS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace trainc::codegen {

/// The number of lines a cumsum over `axis` of `shape` runs along: one
/// kernel element per line.
int64_t cumsumLines(llvm::ArrayRef<int64_t> shape, int64_t axis);

/// One line of a cumsum per element `i`, summed in order from its first
/// element (its last with `reverse`) in the element type `type`.
std::string cumsumBody(llvm::ArrayRef<int64_t> shape, int64_t axis, bool exclusive,
                       bool reverse, llvm::StringRef type);

/// out[c] = in[c mod inShape] over the tiled shape `outShape`.
std::string tileBody(llvm::ArrayRef<int64_t> inShape, llvm::ArrayRef<int64_t> outShape);

/// in[i] where (col - row >= k) (upper) or (col - row <= k), else 0.
std::string triluBody(llvm::ArrayRef<int64_t> shape, bool upper, int64_t k,
                      llvm::StringRef type);

/// One element of the padded `outShape`: the input element it copies, or
/// `value` (a literal of the element type) outside a constant pad. `mode`
/// is "constant", "reflect", "edge" or "wrap".
std::string padBody(llvm::ArrayRef<int64_t> inShape, llvm::ArrayRef<int64_t> outShape,
                    llvm::ArrayRef<int64_t> pads, llvm::StringRef mode,
                    llvm::StringRef value);

/// One element of the input gradient of a reflect, edge or wrap pad: the sum of
/// the result-gradient elements (`in`, of `outShape`) copied from it, in
/// increasing order of their position.
std::string padBackwardBody(llvm::ArrayRef<int64_t> inShape, llvm::ArrayRef<int64_t> outShape,
                            llvm::ArrayRef<int64_t> pads, llvm::StringRef mode,
                            llvm::StringRef type);

/// One element `i` of a ScatterND slice (of `slice` elements) for every index
/// tuple in order: `out` (already a copy of data of `dataShape`) gets
/// `upd[t * slice + i]` written or combined (`reduction`) at the place that
/// tuple t of `idx` ([tuples, q]) picks; a tuple outside data is skipped.
std::string scatterNDBody(llvm::ArrayRef<int64_t> dataShape, int64_t q, int64_t tuples,
                          int64_t slice, llvm::StringRef reduction, bool isFloat);

/// One output element `i` of an arg max (`max`) or arg min over `axis` of
/// `shape`: the line's first (or, `last`, last) position of its extremum,
/// NaN counting as the extremum (`isFloat`), written as int64 to `out`.
/// TopK's positions: one kernel element per line along `axis`, writing the
/// line's `k` best positions in order (selection by k passes over the line:
/// each takes the best element after the previous pick in the order value,
/// then index; NaN is the largest value, as torch.topk).
std::string topKBody(llvm::ArrayRef<int64_t> shape, int64_t axis, int64_t k, bool largest,
                     bool isFloat);

/// One data line along `axis` of a scatter_elements: the line of `in` copied
/// to `out`, then the updates whose indices line matches it applied in
/// order (`reduction` none, add, mul, max or min; NaN wins max and min,
/// `isFloat`). An index outside the axis writes nothing.
std::string scatterElementsBody(llvm::ArrayRef<int64_t> dataShape,
                                llvm::ArrayRef<int64_t> idxShape, int64_t axis,
                                llvm::StringRef reduction, bool isFloat);

std::string argReduceBody(llvm::ArrayRef<int64_t> shape, int64_t axis, bool max, bool last,
                          bool isFloat);

/// One element `i` of a gather_elements over `axis`: `in` (of `dataShape`)
/// at the coordinates of i in `idxShape` with the axis one replaced by
/// `idx[i]` (negative from the end; outside the axis gives 0).
std::string gatherElementsBody(llvm::ArrayRef<int64_t> dataShape,
                               llvm::ArrayRef<int64_t> idxShape, int64_t axis,
                               llvm::StringRef type);

/// One element `i` of the data gradient of a gather_elements: the sum of the
/// result-gradient elements (`in`, of `idxShape`) whose index picked it, in
/// increasing order along the axis.
std::string gatherElementsBackwardBody(llvm::ArrayRef<int64_t> dataShape,
                                       llvm::ArrayRef<int64_t> idxShape, int64_t axis,
                                       llvm::StringRef type);

/// An int64_t literal that compiles for every value (INT64_MIN has no
/// literal of its own).
std::string intLiteral(int64_t v);

/// The expression of ONNX Mod of `a` by `b`: C fmod for floats (`f32`
/// picks fmodf); for integers the dividend's sign (`fmod`) or the divisor's,
/// and 0 for a divisor of 0 or -1 (numpy; INT_MIN % -1 would trap).
std::string modExpr(llvm::StringRef a, llvm::StringRef b, bool isFloat, bool f32, bool fmod,
                    llvm::StringRef type);

} // namespace trainc::codegen

#endif // TRAINC_CODEGEN_INDEXKERNELS_H
