//===- IndexKernels.cpp - element functions of the indexing ops -----------===//

#include "codegen/IndexKernels.h"

#include "codegen/KernelWriter.h"

#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

using namespace trainc::codegen;

int64_t trainc::codegen::cumsumLines(llvm::ArrayRef<int64_t> shape, int64_t axis) {
  int64_t lines = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (static_cast<int64_t>(d) != axis)
      lines *= shape[d];
  return lines;
}

std::string trainc::codegen::cumsumBody(llvm::ArrayRef<int64_t> shape, int64_t axis,
                                        bool exclusive, bool reverse, llvm::StringRef type) {
  int64_t dim = shape[axis], inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  std::string s;
  llvm::raw_string_ostream os(s);
  // Element i is the line (outer i / inner, inner i % inner); its elements
  // lie `inner` apart. A line is one thread's sequential sum, so the result
  // is the same on every target and thread count.
  if (inner == 1)
    os << "  const int64_t base = i * " << dim << ";\n";
  else
    os << "  const int64_t base = (i / " << inner << ") * " << dim * inner << " + i % " << inner
       << ";\n";
  os
     << "  " << type << " acc = " << type << "(0);\n"
     << "  for (int64_t s = 0; s < " << dim << "; ++s) {\n"
     << "    const int64_t at = base + "
     << (reverse ? "(" + std::to_string(dim - 1) + " - s)" : std::string("s"))
     << (inner != 1 ? " * " + std::to_string(inner) : std::string()) << ";\n";
  if (exclusive)
    os << "    out[at] = acc;\n    acc += in[at];\n";
  else
    os << "    acc += in[at];\n    out[at] = acc;\n";
  os << "  }\n";
  return s;
}

std::string trainc::codegen::tileBody(llvm::ArrayRef<int64_t> inShape,
                                      llvm::ArrayRef<int64_t> outShape) {
  std::string s = decomposeIndex(outShape, "i", "c", "  ");
  std::vector<int64_t> strides = rowMajorStrides(inShape);
  std::string index;
  for (size_t d = 0; d < inShape.size(); ++d) {
    if (inShape[d] == 1)
      continue; // coordinate 0 on a tiled axis of size 1
    std::string coord = "c" + std::to_string(d);
    if (outShape[d] != inShape[d])
      coord = "(" + coord + " % " + std::to_string(inShape[d]) + ")";
    if (strides[d] != 1)
      coord += " * " + std::to_string(strides[d]);
    index += (index.empty() ? "" : " + ") + coord;
  }
  return s + "  out[i] = in[" + (index.empty() ? "0" : index) + "];\n";
}

std::string trainc::codegen::intLiteral(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min())
    return "(-9223372036854775807LL - 1)";
  return std::to_string(v) + (v > INT32_MAX || v < INT32_MIN ? "LL" : "");
}

std::string trainc::codegen::triluBody(llvm::ArrayRef<int64_t> shape, bool upper, int64_t k,
                                       llvm::StringRef type) {
  int64_t rows = shape[shape.size() - 2], cols = shape.back();
  // col - row lies in [-(rows - 1), cols - 1]: a k beyond keeps or drops
  // everything, as the clamped one does (and stays a small literal).
  k = std::clamp<int64_t>(k, -rows, cols);
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "  const int64_t col = i % " << cols << ", row = (i / " << cols << ") % " << rows
     << ";\n"
     << "  out[i] = col - row " << (upper ? ">=" : "<=") << " " << k << " ? in[i] : " << type
     << "(0);\n";
  return s;
}

std::string trainc::codegen::padBody(llvm::ArrayRef<int64_t> inShape,
                                     llvm::ArrayRef<int64_t> outShape,
                                     llvm::ArrayRef<int64_t> pads, llvm::StringRef mode,
                                     llvm::StringRef value) {
  size_t rank = inShape.size();
  std::string s = decomposeIndex(outShape, "i", "c", "  ");
  llvm::raw_string_ostream os(s);
  std::vector<int64_t> strides = rowMajorStrides(inShape);
  std::string inside, index;
  for (size_t d = 0; d < rank; ++d) {
    int64_t b = pads[d], e = pads[rank + d], n = inShape[d];
    std::string j = "j" + std::to_string(d);
    os << "  " << (mode == "constant" || (!b && !e) ? "const " : "") << "int64_t " << j
       << " = c" << d;
    if (b > 0)
      os << " - " << b;
    else if (b < 0)
      os << " + " << -b;
    os << ";\n";
    if (b > 0 || e > 0) {
      if (mode == "constant") {
        inside += (inside.empty() ? "" : " && ") +
                  (b > 0 ? j + " >= 0" : "") + (b > 0 && e > 0 ? " && " : "") +
                  (e > 0 ? j + " < " + std::to_string(n) : "");
      } else if (mode == "reflect") {
        // The mirror image without repeating the edge (pads < n).
        if (b > 0)
          os << "  if (" << j << " < 0) " << j << " = -" << j << ";\n";
        if (e > 0)
          os << "  if (" << j << " >= " << n << ") " << j << " = " << 2 * (n - 1) << " - " << j
             << ";\n";
      } else if (mode == "wrap") {
        // numpy.pad(mode='wrap'): the axis repeats, as often as the pads ask.
        os << "  " << j << " = ((" << j << " % " << n << ") + " << n << ") % " << n << ";\n";
      } else {
        if (b > 0)
          os << "  if (" << j << " < 0) " << j << " = 0;\n";
        if (e > 0)
          os << "  if (" << j << " >= " << n << ") " << j << " = " << n - 1 << ";\n";
      }
    }
    if (n != 1 && strides[d] != 0) {
      std::string term = j + (strides[d] != 1 ? " * " + std::to_string(strides[d]) : "");
      index += (index.empty() ? "" : " + ") + term;
    } else if (!(mode == "constant" && (b > 0 || e > 0))) {
      // An axis of size 1 reads offset 0 (the constant test still uses j).
      os << "  (void)" << j << ";\n";
    }
  }
  if (index.empty())
    index = "0";
  if (inside.empty())
    os << "  out[i] = in[" << index << "];\n";
  else
    os << "  out[i] = " << inside << " ? in[" << index << "] : " << value << ";\n";
  return s;
}

std::string trainc::codegen::padBackwardBody(llvm::ArrayRef<int64_t> inShape,
                                             llvm::ArrayRef<int64_t> outShape,
                                             llvm::ArrayRef<int64_t> pads,
                                             llvm::StringRef mode, llvm::StringRef type) {
  size_t rank = inShape.size();
  std::string s = decomposeIndex(inShape, "i", "j", "  ");
  llvm::raw_string_ostream os(s);
  std::vector<int64_t> strides = rowMajorStrides(outShape);
  // Per padded axis, the output positions that read input coordinate j form
  // up to three ranges [lo, hi), in increasing order: the left pad, the copy
  // itself, the right pad (wrap: every n-th position from (j + b) mod n).
  std::string loops, indent = "  ", index;
  for (size_t d = 0; d < rank; ++d) {
    int64_t b = pads[d], e = pads[rank + d], n = inShape[d];
    std::string ds = std::to_string(d), j = "j" + ds, o = "o" + ds;
    if (!b && !e) {
      os << "  const int64_t " << o << " = " << j << ";\n";
    } else if (mode == "wrap") {
      // Output o reads (o - b) mod n: the positions of j are j + b mod n,
      // then every n-th up to the end.
      loops += indent + "for (int64_t " + o + " = (" + j + " + " + std::to_string(b) + ") % " +
               std::to_string(n) + "; " + o + " < " + std::to_string(outShape[d]) + "; " + o +
               " += " + std::to_string(n) + ")\n";
      indent += "  ";
    } else {
      std::string lo = "lo" + ds, hi = "hi" + ds, cnt = "n" + ds;
      os << "  int64_t " << lo << "[3], " << hi << "[3];\n  int " << cnt << " = 0;\n";
      auto range = [&](const std::string &cond, const std::string &from,
                       const std::string &to) {
        os << "  " << (cond.empty() ? "" : "if (" + cond + ") ") << "{ " << lo << "[" << cnt
           << "] = " << from << "; " << hi << "[" << cnt << "++] = " << to << "; }\n";
      };
      // The copy itself: output j + b.
      std::string self = b ? j + " + " + std::to_string(b) : j;
      if (mode == "edge") {
        if (b > 0)
          range(j + " == 0", "0", std::to_string(b));
        range("", self, j + " + " + std::to_string(b + 1));
        if (e > 0)
          range(j + " == " + std::to_string(n - 1), std::to_string(n + b),
                std::to_string(outShape[d]));
      } else {
        // Output b - j mirrors j in [1, b]; output b + 2(n-1) - j mirrors j
        // in [n-1-e, n-2].
        if (b > 0)
          range(j + " >= 1 && " + j + " <= " + std::to_string(b), std::to_string(b) + " - " + j,
                std::to_string(b + 1) + " - " + j);
        range("", self, j + " + " + std::to_string(b + 1));
        if (e > 0)
          range(j + " >= " + std::to_string(n - 1 - e) + " && " + j + " <= " +
                    std::to_string(n - 2),
                std::to_string(b + 2 * (n - 1)) + " - " + j,
                std::to_string(b + 2 * (n - 1) + 1) + " - " + j);
      }
      loops += indent + "for (int s" + ds + " = 0; s" + ds + " < " + cnt + "; ++s" + ds + ")\n";
      loops += indent + "  for (int64_t " + o + " = " + lo + "[s" + ds + "]; " + o + " < " + hi +
               "[s" + ds + "]; ++" + o + ")\n";
      indent += "    ";
    }
    bool padded = b || e;
    if (padded || (strides[d] != 0 && outShape[d] != 1))
      index += (index.empty() ? "" : " + ") + o +
               (strides[d] != 1 ? " * " + std::to_string(strides[d]) : "");
    else
      os << "  (void)" << o << ";\n";
  }
  os << "  " << type << " acc = " << type << "(0);\n"
     << loops << indent << "acc += in[" << (index.empty() ? "0" : index) << "];\n"
     << "  out[i] = acc;\n";
  return s;
}

std::string trainc::codegen::scatterNDBody(llvm::ArrayRef<int64_t> dataShape, int64_t q,
                                           int64_t tuples, int64_t slice,
                                           llvm::StringRef reduction, bool isFloat) {
  std::string s;
  llvm::raw_string_ostream os(s);
  std::vector<int64_t> strides = rowMajorStrides(dataShape);
  // One thread per slice element walks the tuples in order: repeated tuples
  // resolve as in the ONNX reference (last write wins, reductions in order)
  // and nothing races.
  os << "  for (int64_t t = 0; t < " << tuples << "; ++t) {\n"
     << "    int64_t at = i;\n"
     << "    bool inside = true;\n";
  for (int64_t a = 0; a < q; ++a) {
    int64_t dim = dataShape[a];
    os << "    {\n"
       << "      int64_t k = static_cast<int64_t>(idx[t * " << q << " + " << a << "]);\n"
       << "      if (k < 0) k += " << dim << ";\n"
       << "      inside = inside && k >= 0 && k < " << dim << ";\n"
       << "      at += k * " << strides[a] << ";\n"
       << "    }\n";
  }
  os << "    if (!inside)\n      continue;\n"
     << "    const auto u = upd[t * " << slice << " + i];\n";
  if (reduction == "add")
    os << "    out[at] = out[at] + u;\n";
  else if (reduction == "mul")
    os << "    out[at] = out[at] * u;\n";
  else if (reduction == "max" || reduction == "min")
    // NaN, once met, stays (numpy.maximum / minimum of the reference).
    os << "    out[at] = (u " << (reduction == "max" ? ">" : "<") << " out[at]"
       << (isFloat ? " || u != u" : "") << ") ? u : out[at];\n";
  else
    os << "    out[at] = u;\n";
  os << "  }\n";
  return s;
}

std::string trainc::codegen::modExpr(llvm::StringRef a, llvm::StringRef b, bool isFloat,
                                     bool f32, bool fmod, llvm::StringRef type) {
  std::string x = a.str(), y = b.str(), t = type.str();
  if (isFloat)
    return (f32 ? "fmodf(" : "fmod(") + x + ", " + y + ")";
  std::string guard = "(" + y + " == 0 || " + y + " == -1) ? " + t + "(0) : ";
  if (fmod)
    return "(" + guard + x + " % " + y + ")";
  // The C remainder has the dividend's sign; move it to the divisor's.
  std::string r = "(" + x + " % " + y + ")";
  return "(" + guard + "(" + r + " != 0 && ((" + r + " < 0) != (" + y + " < 0)) ? " + r +
         " + " + y + " : " + r + "))";
}

std::string trainc::codegen::argReduceBody(llvm::ArrayRef<int64_t> shape, int64_t axis,
                                           bool max, bool last, bool isFloat) {
  int64_t dim = shape[axis], inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  std::string s;
  llvm::raw_string_ostream os(s);
  // One thread walks its line in order, so ties resolve the same everywhere.
  if (inner == 1)
    os << "  const int64_t base = i * " << dim << ";\n";
  else
    os << "  const int64_t base = (i / " << inner << ") * " << dim * inner << " + i % " << inner
       << ";\n";
  std::string cmp = max ? (last ? ">=" : ">") : (last ? "<=" : "<");
  std::string step = inner != 1 ? " * " + std::to_string(inner) : std::string();
  os << "  auto best = in[base];\n"
     << "  int64_t pick = 0;\n"
     << "  for (int64_t s = 1; s < " << dim << "; ++s) {\n"
     << "    const auto v = in[base + s" << step << "];\n";
  if (isFloat)
    // NaN is the extremum (torch.argmax/argmin): the first NaN wins, or with
    // select_last_index the last one.
    os << "    if (best != best ? " << (last ? "v != v" : "false") << " : (v != v || v " << cmp
       << " best)) {\n";
  else
    os << "    if (v " << cmp << " best) {\n";
  os << "      best = v;\n      pick = s;\n    }\n  }\n  out[i] = pick;\n";
  return s;
}

std::string trainc::codegen::topKBody(llvm::ArrayRef<int64_t> shape, int64_t axis, int64_t k,
                                      bool largest, bool isFloat) {
  int64_t dim = shape[axis], inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  std::string s;
  llvm::raw_string_ostream os(s);
  std::string step = inner != 1 ? " * " + std::to_string(inner) : std::string();
  // Line i: input elements base + s * inner, output elements obase + j * inner.
  if (inner == 1)
    os << "  const int64_t base = i * " << dim << ", obase = i * " << k << ";\n";
  else
    os << "  const int64_t base = (i / " << inner << ") * " << dim * inner << " + i % " << inner
       << ", obase = (i / " << inner << ") * " << k * inner << " + i % " << inner << ";\n";
  // before(a, sa, b, sb): (a, sa) comes first in the order. NaN compares as
  // the largest value; equal values go by position.
  std::string nanA = isFloat ? "a != a" : "false", nanB = isFloat ? "b != b" : "false";
  std::string better = largest ? "a > b" : "a < b";
  os << "  auto before = [](auto a, int64_t sa, auto b, int64_t sb) {\n"
     << "    const bool na = " << nanA << ", nb = " << nanB << ";\n"
     << "    if (na || nb)\n"
     << "      return na && nb ? sa < sb : " << (largest ? "na" : "nb") << ";\n"
     << "    return " << better << " || (a == b && sa < sb);\n"
     << "  };\n"
     << "  int64_t prev = -1;\n"
     << "  for (int64_t j = 0; j < " << k << "; ++j) {\n"
     << "    int64_t pick = -1;\n"
     << "    for (int64_t s = 0; s < " << dim << "; ++s) {\n"
     << "      const auto v = in[base + s" << step << "];\n"
     << "      if (prev >= 0 && !before(in[base + prev" << step << "], prev, v, s))\n"
     << "        continue; // taken already\n"
     << "      if (pick < 0 || before(v, s, in[base + pick" << step << "], pick))\n"
     << "        pick = s;\n"
     << "    }\n"
     << "    out[obase + j" << step << "] = pick;\n"
     << "    prev = pick;\n"
     << "  }\n";
  return s;
}

std::string trainc::codegen::scatterElementsBody(llvm::ArrayRef<int64_t> dataShape,
                                                llvm::ArrayRef<int64_t> idxShape, int64_t axis,
                                                llvm::StringRef reduction, bool isFloat) {
  std::vector<int64_t> dataStrides = rowMajorStrides(dataShape),
                       idxStrides = rowMajorStrides(idxShape);
  const int64_t rank = static_cast<int64_t>(dataShape.size());
  std::string s;
  llvm::raw_string_ostream os(s);
  // The line's coordinates on the other axes, from the last one.
  os << "  int64_t rest = i;\n";
  std::string dataBase = "0", idxBase = "0", inside = "true";
  for (int64_t d = rank - 1; d >= 0; --d) {
    if (d == axis)
      continue;
    std::string c = "c" + std::to_string(d);
    os << "  const int64_t " << c << " = rest % " << dataShape[d] << ";\n"
       << "  rest /= " << dataShape[d] << ";\n";
    dataBase += " + " + c + " * " + std::to_string(dataStrides[d]);
    idxBase += " + " + c + " * " + std::to_string(idxStrides[d]);
    if (idxShape[d] < dataShape[d])
      inside += " && " + c + " < " + std::to_string(idxShape[d]);
  }
  const int64_t dim = dataShape[axis];
  os << "  const int64_t dbase = " << dataBase << ";\n"
     << "  for (int64_t k = 0; k < " << dim << "; ++k)\n"
     << "    out[dbase + k * " << dataStrides[axis] << "] = in[dbase + k * "
     << dataStrides[axis] << "];\n"
     << "  if (!(" << inside << "))\n"
     << "    return;\n"
     << "  const int64_t ibase = " << idxBase << ";\n"
     << "  for (int64_t s = 0; s < " << idxShape[axis] << "; ++s) {\n"
     << "    int64_t k = static_cast<int64_t>(idx[ibase + s * " << idxStrides[axis] << "]);\n"
     << "    if (k < 0) k += " << dim << ";\n"
     << "    if (k < 0 || k >= " << dim << ") continue;\n"
     << "    auto &o = out[dbase + k * " << dataStrides[axis] << "];\n"
     << "    const auto u = upd[ibase + s * " << idxStrides[axis] << "];\n";
  std::string nan = isFloat ? "u != u || " : "";
  if (reduction == "add")
    os << "    o = o + u;\n";
  else if (reduction == "mul")
    os << "    o = o * u;\n";
  else if (reduction == "max")
    os << "    if (" << nan << "u > o) o = u;\n";
  else if (reduction == "min")
    os << "    if (" << nan << "u < o) o = u;\n";
  else
    os << "    o = u;\n";
  os << "  }\n";
  return s;
}

std::string trainc::codegen::gatherElementsBody(llvm::ArrayRef<int64_t> dataShape,
                                                llvm::ArrayRef<int64_t> idxShape, int64_t axis,
                                                llvm::StringRef type) {
  // The axis coordinate comes from idx; one of an axis of size 1 is 0.
  llvm::SmallVector<bool, 8> used;
  for (size_t d = 0; d < idxShape.size(); ++d)
    used.push_back(static_cast<int64_t>(d) != axis && idxShape[d] != 1);
  std::string s = decomposeIndex(idxShape, "i", "c", "  ", used);
  llvm::raw_string_ostream os(s);
  std::vector<int64_t> strides = rowMajorStrides(dataShape);
  int64_t dim = dataShape[axis];
  std::string index = "k" + (strides[axis] != 1 ? " * " + std::to_string(strides[axis]) : "");
  for (size_t d = 0; d < dataShape.size(); ++d)
    if (static_cast<int64_t>(d) != axis && idxShape[d] != 1)
      index += " + c" + std::to_string(d) +
               (strides[d] != 1 ? " * " + std::to_string(strides[d]) : std::string());
  // Negative indices count from the end; one outside the axis reads 0.
  os << "  int64_t k = static_cast<int64_t>(idx[i]);\n"
     << "  if (k < 0) k += " << dim << ";\n"
     << "  out[i] = k >= 0 && k < " << dim << " ? in[" << index << "] : " << type << "(0);\n";
  return s;
}

std::string trainc::codegen::gatherElementsBackwardBody(llvm::ArrayRef<int64_t> dataShape,
                                                        llvm::ArrayRef<int64_t> idxShape,
                                                        int64_t axis, llvm::StringRef type) {
  std::string s = decomposeIndex(dataShape, "i", "j", "  ");
  llvm::raw_string_ostream os(s);
  std::vector<int64_t> strides = rowMajorStrides(idxShape);
  std::string base, outside;
  for (size_t d = 0; d < dataShape.size(); ++d) {
    if (static_cast<int64_t>(d) == axis)
      continue;
    std::string j = "j" + std::to_string(d);
    if (idxShape[d] < dataShape[d])
      outside += (outside.empty() ? "" : " || ") + j + " >= " + std::to_string(idxShape[d]);
    if (idxShape[d] != 1)
      base += (base.empty() ? "" : " + ") + j +
              (strides[d] != 1 ? " * " + std::to_string(strides[d]) : std::string());
    else
      os << "  (void)" << j << ";\n";
  }
  int64_t dim = dataShape[axis];
  std::string step = strides[axis] != 1 ? " * " + std::to_string(strides[axis]) : std::string();
  // One thread per input-gradient element walks the index axis in order, so
  // repeated indices add up in the same order on every target and thread
  // count.
  os << "  " << type << " acc = " << type << "(0);\n";
  if (!outside.empty())
    os << "  if (!(" << outside << "))\n";
  os << "  for (int64_t s = 0; s < " << idxShape[axis] << "; ++s) {\n"
     << "    const int64_t at = " << (base.empty() ? "" : base + " + ") << "s" << step << ";\n"
     << "    int64_t k = static_cast<int64_t>(idx[at]);\n"
     << "    if (k < 0) k += " << dim << ";\n"
     << "    if (k == j" << axis << ") acc += in[at];\n"
     << "  }\n"
     << "  out[i] = acc;\n";
  return s;
}
