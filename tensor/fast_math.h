// exp and erf for float32 kernels, as plain arithmetic g++ can vectorise.
//
// Why: std::exp and std::erf on float are calls into libm, one element at a
// time, and a call in a loop stops g++ from vectorising it. GELU spent a
// fifth of a small model's training step in erff. These versions are a few
// multiply-adds each, accurate to 1.5 (exp) and 2.5 (erf) units in the last
// place of a float, with or without fused multiply-adds (checked over a
// dense sweep in tests/tensor/fast_math_test.cpp). Only float32 kernels use
// them; float64 keeps std::exp and std::erf, which gradcheck relies on.
//
// The polynomials were fitted by weighted least squares on Chebyshev nodes
// (numpy.polyfit) against Python's math.erf, math.erfc and math.exp.
#pragma once

#include <bit>
#include <cstdint>

namespace gradflow::fast {

// e^x: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial (relative
// error 2e-9), 2^n put straight into the float's exponent bits. Inputs below
// -87 give about 0 (the smallest normal float), above 88 about 1.7e38, NaN NaN.
inline float exp(float x) {
  // Written so that NaN lands on -87 (and the int conversion below stays
  // defined); the NaN itself is returned at the end.
  const float clamped = x > -87.0f ? (x < 88.0f ? x : 88.0f) : -87.0f;
  // n = round(x / ln2): adding 1.5 * 2^23 pushes the fraction bits out of the
  // float, and subtracting it back leaves the rounded value (g++ 12 does not
  // vectorise roundevenf).
  constexpr float kRound = 12582912.0f;
  const float n = (clamped * 1.44269504f + kRound) - kRound;
  // r = x - n ln2 in two steps: ln2's high part times n is exact in float.
  const float r = (clamped - n * 0.693145752f) - n * 1.42860677e-6f;
  float p = 1.382942050e-03f;
  p = p * r + 8.374771520e-03f;
  p = p * r + 4.166835803e-02f;
  p = p * r + 1.666642083e-01f;
  p = p * r + 4.999999149e-01f;
  p = p * r + 1.000000036e+00f;
  p = p * r + 1.000000001e+00f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return x != x ? x : p * scale;
}

// erf(x): for |x| <= 1, x P(x^2) (relative error 1.4e-9); for 1 < |x| < 4,
// 1 - exp(Q(|x| - 2.5)) with Q fitted to log(erfc) (relative error of erfc
// 7e-9); from 4 on, 1 (erf(4) rounds to 1 in float). Both branches are
// computed and one is selected, so the loop stays branch-free.
inline float erf(float x) {
  const float a = x < 0 ? -x : x;
  const float s = x * x;
  float p = 7.898210184e-05f;
  p = p * s - 8.024354122e-04f;
  p = p * s + 5.190053577e-03f;
  p = p * s - 2.685480854e-02f;
  p = p * s + 1.128361243e-01f;
  p = p * s - 3.761262884e-01f;
  p = p * s + 1.128379167e+00f;
  const float small = x * p;

  const float u = (a > 4.0f ? 4.0f : a) - 2.5f;
  float q = -6.582858169e-08f;
  q = q * u + 1.614061607e-06f;
  q = q * u - 1.297613320e-05f;
  q = q * u + 7.739442554e-05f;
  q = q * u - 4.207069391e-04f;
  q = q * u + 2.165160310e-03f;
  q = q * u - 1.085816553e-02f;
  q = q * u - 9.438936403e-01f;
  q = q * u - 5.352680740e+00f;
  q = q * u - 7.806815277e+00f;
  const float large = 1.0f - fast::exp(q);
  const float magnitude = a >= 4.0f ? 1.0f : large;
  const float signed_large = x < 0 ? -magnitude : magnitude;
  return a <= 1.0f ? small : signed_large;
}

}  // namespace gradflow::fast
