//===- half.h - bf16 and f16 storage types ---------------------*- C++ -*-===//
//
// The 16-bit float types of mixed precision, as storage: a value converts to
// float to be computed with and back when stored, rounding to nearest even
// (NaN stays NaN, overflow becomes infinity), as PyTorch's and CUDA's
// conversions do. One layout-compatible definition serves the host and the
// device and every translation unit (the runtime's declarations and the
// generated code name the same type), so cuBLASLt and cuDNN read the bits
// as their CUDA_R_16BF / CUDA_R_16F. On the device the conversions are
// CUDA's intrinsics; on the host they are the bit operations below (C++17
// has no 16-bit float type; std::bfloat16_t is C++23).
//
//===----------------------------------------------------------------------===//

#ifndef TRAINC_RT_HALF_H
#define TRAINC_RT_HALF_H

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define TRAINC_HALF_HD __host__ __device__ __forceinline__
#else
#define TRAINC_HALF_HD inline
#endif

namespace trainc::rt {

namespace half_detail {

TRAINC_HALF_HD uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

TRAINC_HALF_HD float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// float -> bfloat16 bits, round to nearest even; NaN stays a quiet NaN.
TRAINC_HALF_HD uint16_t toBF16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

TRAINC_HALF_HD float fromBF16(uint16_t h) { return bitsFloat(uint32_t(h) << 16); }

/// float -> IEEE binary16 bits, round to nearest even: subnormals, overflow
/// to infinity and NaN as the hardware conversion.
TRAINC_HALF_HD uint16_t toF16(float f) {
  uint32_t u = floatBits(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) // NaN: keep it quiet
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) // rounds to 65520 or more, or is infinite
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    if (a < 0x33000000u) // below half the smallest subnormal: zero
      return sign;
    uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
    int shift = 126 - int(a >> 23); // 14..24 for exponents -15..-25
    uint32_t result = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (result & 1u)))
      ++result;
    return static_cast<uint16_t>(sign | result);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits;
  // a carry into the exponent is the correct rounding up.
  uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

TRAINC_HALF_HD float fromF16(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) // infinity or NaN
    return bitsFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return bitsFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  // Subnormal (or zero): mantissa * 2^-24, exact in float.
  float magnitude = float(mantissa) * 5.9604644775390625e-8f;
  return sign ? -magnitude : magnitude;
}

} // namespace half_detail

/// bfloat16 storage: 1 sign, 8 exponent, 7 mantissa bits.
struct bf16 {
  uint16_t bits;
  bf16() = default;
  TRAINC_HALF_HD bf16(float f) {
#if defined(__CUDA_ARCH__)
    bits = __bfloat16_as_ushort(__float2bfloat16_rn(f));
#else
    bits = half_detail::toBF16(f);
#endif
  }
  TRAINC_HALF_HD operator float() const { return half_detail::fromBF16(bits); }
};

/// IEEE binary16 storage: 1 sign, 5 exponent, 10 mantissa bits.
struct f16 {
  uint16_t bits;
  f16() = default;
  TRAINC_HALF_HD f16(float f) {
#if defined(__CUDA_ARCH__)
    bits = __half_as_ushort(__float2half_rn(f));
#else
    bits = half_detail::toF16(f);
#endif
  }
  TRAINC_HALF_HD operator float() const {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(bits));
#else
    return half_detail::fromF16(bits);
#endif
  }
};

static_assert(sizeof(bf16) == 2 && sizeof(f16) == 2, "16-bit storage types");

} // namespace trainc::rt

#endif // TRAINC_RT_HALF_H
