//===- VectorMath.cpp - the math functions of generated CPU loops ---------===//
//
// Generated element loops are vectorized (4 floats at a time: SSE2, the
// programs' baseline), and a vectorized loop still computes some elements
// one at a time: a loop's remainder, a GEMM epilogue's row, a kernel the
// compiler left scalar. glibc's vector math library (libmvec) and its
// scalar libm round differently (both within a few ulp), so an element's
// value would depend on which side of that line it fell: on the thread
// count, and on fusion. Here the scalar function is libmvec's 4-lane one
// on a single value, so every element, vectorized or not, gets the same
// bits. generated.h declares these with the simd attribute, which makes
// g++ call the `_ZGVbN4v_` variants below from vectorized loops (the x86-64
// vector function ABI's names for 4 lanes of SSE, unmasked). libmvec
// itself sends the inputs its vector code does not cover (NaN, infinities,
// results near overflow) to libm, lane by lane, the same way in both.
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>

extern "C" {

// libmvec (glibc 2.22 for exp, log, pow; 2.35 for erf and tanh).
__m128 _ZGVbN4v_expf(__m128);
__m128 _ZGVbN4v_logf(__m128);
__m128 _ZGVbN4vv_powf(__m128, __m128);
__m128 _ZGVbN4v_erff(__m128);
__m128 _ZGVbN4v_tanhf(__m128);

float trainc_expf(float x) noexcept { return _mm_cvtss_f32(_ZGVbN4v_expf(_mm_set1_ps(x))); }
float trainc_logf(float x) noexcept { return _mm_cvtss_f32(_ZGVbN4v_logf(_mm_set1_ps(x))); }
float trainc_powf(float x, float y) noexcept {
  return _mm_cvtss_f32(_ZGVbN4vv_powf(_mm_set1_ps(x), _mm_set1_ps(y)));
}
float trainc_erff(float x) noexcept { return _mm_cvtss_f32(_ZGVbN4v_erff(_mm_set1_ps(x))); }
float trainc_tanhf(float x) noexcept { return _mm_cvtss_f32(_ZGVbN4v_tanhf(_mm_set1_ps(x))); }

__m128 _ZGVbN4v_trainc_expf(__m128 x) { return _ZGVbN4v_expf(x); }
__m128 _ZGVbN4v_trainc_logf(__m128 x) { return _ZGVbN4v_logf(x); }
__m128 _ZGVbN4vv_trainc_powf(__m128 x, __m128 y) { return _ZGVbN4vv_powf(x, y); }
__m128 _ZGVbN4v_trainc_erff(__m128 x) { return _ZGVbN4v_erff(x); }
__m128 _ZGVbN4v_trainc_tanhf(__m128 x) { return _ZGVbN4v_tanhf(x); }

} // extern "C"
