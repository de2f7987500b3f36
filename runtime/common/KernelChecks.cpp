//===- KernelChecks.cpp - argument checks shared by all targets -----------===//

#include "KernelChecks.h"

namespace trainc::rt {
namespace {

std::string prefix(const char *kernel) { return std::string(kernel) + ": "; }

/// Floor division for a possibly negative numerator and positive divisor.
int64_t floorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/// Checks one spatial axis of a window op; `allowCeil` (pools) accepts
/// ceil-mode output sizes and the pool padding rules.
Status checkWindowAxis(const char *kernel, const char *axis, int64_t in,
                       int64_t k, int64_t stride, int64_t padBegin,
                       int64_t padEnd, int64_t dilation, int64_t out,
                       bool allowCeil) {
  std::string where = prefix(kernel) + "axis " + axis + ": ";
  if (padBegin < 0 || padEnd < 0)
    return Status::error(where + "negative padding " +
                         std::to_string(padBegin) + "/" +
                         std::to_string(padEnd));
  int64_t extent = dilation * (k - 1) + 1;
  int64_t span = in + padBegin + padEnd - extent;
  if (span < 0)
    return Status::error(where + "window extent " + std::to_string(extent) +
                         " exceeds the padded input " +
                         std::to_string(in + padBegin + padEnd));
  int64_t floorOut = floorDiv(span, stride) + 1;
  int64_t ceilOut = floorDiv(span + stride - 1, stride) + 1;
  bool okSize = out == floorOut || (allowCeil && out == ceilOut);
  if (!okSize) {
    std::string expected = std::to_string(floorOut);
    if (allowCeil && ceilOut != floorOut)
      expected += " (floor) or " + std::to_string(ceilOut) + " (ceil)";
    return Status::error(
        where + "output size " + std::to_string(out) +
        " does not match the input size " + std::to_string(in) + ", kernel " +
        std::to_string(k) + ", stride " + std::to_string(stride) +
        ", padding " + std::to_string(padBegin) + "/" + std::to_string(padEnd) +
        ", dilation " + std::to_string(dilation) + ": expected " + expected);
  }
  if (!allowCeil)
    return Status(); // Conv allows any padding (windows in it see zeros).
  // Pools read padding as "nothing" (-inf for max), so a window must see
  // input: ONNX requires pads smaller than the kernel, and ceil mode drops a
  // last window that would start in the end padding.
  if (padBegin >= extent || padEnd >= extent)
    return Status::error(where + "padding " + std::to_string(padBegin) + "/" +
                         std::to_string(padEnd) +
                         " must be smaller than the window extent " +
                         std::to_string(extent));
  if ((out - 1) * stride - padBegin >= in)
    return Status::error(where + "the last of " + std::to_string(out) +
                         " windows starts past the input (ceil mode must "
                         "drop it)");
  return Status();
}

} // namespace

Status
checkPositive(const char *kernel,
              std::initializer_list<std::pair<const char *, int64_t>> sizes) {
  for (const auto &[name, value] : sizes)
    if (value <= 0)
      return Status::error(prefix(kernel) + name + " must be positive, got " +
                           std::to_string(value));
  return Status();
}

Status checkNotNull(
    const char *kernel,
    std::initializer_list<std::pair<const char *, const void *>> pointers) {
  for (const auto &[name, pointer] : pointers)
    if (!pointer)
      return Status::error(prefix(kernel) + name + " is null");
  return Status();
}

Status checkedProduct(const char *kernel, std::initializer_list<int64_t> sizes,
                      int64_t &product) {
  product = 1;
  for (int64_t size : sizes)
    if (__builtin_mul_overflow(product, size, &product))
      return Status::error(prefix(kernel) + "tensor size overflows int64");
  return Status();
}

Status checkNoHostFusion(const char *kernel, const NormFusion *fusion) {
  if (fusion && (fusion->prologue || fusion->epilogue))
    return Status::error(std::string(kernel) +
                         ": the CUDA target runs a norm's prologue and epilogue as kernels of "
                         "their own, not as host functions");
  return Status();
}

Status checkBatchNormShape(const char *kernel, int64_t n, int64_t c, int64_t spatial) {
  TRAINC_RETURN_IF_ERROR(
      checkPositive(kernel, {{"n", n}, {"c", c}, {"spatial", spatial}}));
  int64_t unused;
  return checkedProduct(kernel, {n, c, spatial}, unused);
}

Status checkConv2dDesc(const char *kernel, const Conv2dDesc &d) {
  TRAINC_RETURN_IF_ERROR(checkPositive(kernel, {{"n", d.n},
                                                {"c", d.c},
                                                {"h", d.h},
                                                {"w", d.w},
                                                {"m", d.m},
                                                {"kh", d.kh},
                                                {"kw", d.kw},
                                                {"strideH", d.strideH},
                                                {"strideW", d.strideW},
                                                {"dilationH", d.dilationH},
                                                {"dilationW", d.dilationW},
                                                {"groups", d.groups},
                                                {"outH", d.outH},
                                                {"outW", d.outW}}));
  if (d.c % d.groups != 0 || d.m % d.groups != 0)
    return Status::error(prefix(kernel) + "groups " + std::to_string(d.groups) +
                         " must divide both c " + std::to_string(d.c) +
                         " and m " + std::to_string(d.m));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {d.n, d.c, d.h, d.w}, unused));
  TRAINC_RETURN_IF_ERROR(
      checkedProduct(kernel, {d.n, d.m, d.outH, d.outW}, unused));
  TRAINC_RETURN_IF_ERROR(
      checkedProduct(kernel, {d.c, d.kh, d.kw, d.outH, d.outW}, unused));
  TRAINC_RETURN_IF_ERROR(checkWindowAxis(kernel, "H", d.h, d.kh, d.strideH,
                                         d.padTop, d.padBottom, d.dilationH,
                                         d.outH, /*allowCeil=*/false));
  return checkWindowAxis(kernel, "W", d.w, d.kw, d.strideW, d.padLeft,
                         d.padRight, d.dilationW, d.outW, /*allowCeil=*/false);
}

Status checkPool2dDesc(const char *kernel, const Pool2dDesc &d) {
  TRAINC_RETURN_IF_ERROR(checkPositive(kernel, {{"n", d.n},
                                                {"c", d.c},
                                                {"h", d.h},
                                                {"w", d.w},
                                                {"kh", d.kh},
                                                {"kw", d.kw},
                                                {"strideH", d.strideH},
                                                {"strideW", d.strideW},
                                                {"dilationH", d.dilationH},
                                                {"dilationW", d.dilationW},
                                                {"outH", d.outH},
                                                {"outW", d.outW}}));
  int64_t unused;
  TRAINC_RETURN_IF_ERROR(checkedProduct(kernel, {d.n, d.c, d.h, d.w}, unused));
  TRAINC_RETURN_IF_ERROR(
      checkedProduct(kernel, {d.n, d.c, d.outH, d.outW}, unused));
  TRAINC_RETURN_IF_ERROR(checkWindowAxis(kernel, "H", d.h, d.kh, d.strideH,
                                         d.padTop, d.padBottom, d.dilationH,
                                         d.outH, /*allowCeil=*/true));
  return checkWindowAxis(kernel, "W", d.w, d.kw, d.strideW, d.padLeft,
                         d.padRight, d.dilationW, d.outW, /*allowCeil=*/true);
}

Status checkReduction(const char *kernel, Reduction reduction) {
  switch (reduction) {
  case Reduction::None:
  case Reduction::Mean:
  case Reduction::Sum:
    return Status();
  }
  return Status::error(prefix(kernel) + "invalid reduction " +
                       std::to_string(static_cast<int32_t>(reduction)));
}

} // namespace trainc::rt
