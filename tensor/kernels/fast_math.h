// exp and erf for float32 kernels, as plain arithmetic g++ can vectorise.
//
// Why: std::exp and std::erf on float are calls into libm, one element at a
// time, and a call in a loop stops g++ from vectorising it. GELU spent a
// fifth of a small model's training step in erff. These versions are a few
// multiply-adds each, accurate to 1.5 (exp) and 2 (erf) units in the last
// place of a float, with or without fused multiply-adds (checked over a
// dense sweep in tests/tensor/kernels/fast_math_test.cpp). Only float32 kernels use
// them; float64 keeps std::exp and std::erf, which gradcheck relies on.
//
// exp's polynomial was fitted by weighted least squares on Chebyshev nodes
// (numpy.polyfit) against Python's math.exp. erf's two polynomials are
// minimax fits by the Remez exchange algorithm (in plain Python doubles,
// against math.erf and math.erfc; the one for erfc constrained to be exact at
// its clamp point), converted exactly to monomials and rounded to float; the
// errors quoted below were measured on every float, against double erf.
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

// erf(x): for |x| <= 1, x + x P(x^2), P fitted to erf(x)/x - 1 (relative error
// 1.2e-9); for 1 < |x|, 1 - E(|x| - 2.5), E fitted to erfc on [1, 3.95]
// (absolute error 3.4e-8) and equal to erfc(3.95) at 3.95, so that from there
// on (|x| is clamped to 3.95) the result rounds to exactly 1, as erf does in
// float from 3.92 on. Both are plain polynomials: no exp, no division.
//
// Why this shape: the x and the 1 are exact, so each piece ends in one
// rounding of a value near the result, plus a small term's error; over every
// float the error is at most 1.6 ulp (1.8 without fused multiply-adds). The
// previous 1 - exp(Q) for |x| > 1 cost a second polynomial of 10 terms and an
// exp. A single rational x P(x^2) / Q(x^2) with a clamp would be cheaper still
// (about 0.7 the time of this), but in float the roundings of P, Q, the product
// and the quotient add up to 3 to 6 ulp, over the 2.5 the tests hold erf to.
// Both pieces are computed and one selected, so the loop stays branch-free.
inline float erf(float x) {
  const float a = x < 0 ? -x : x;
  const float s = x * x;
  float p = 7.853861462e-05f;
  p = p * s - 8.010193706e-04f;
  p = p * s + 5.188327748e-03f;
  p = p * s - 2.685381286e-02f;
  p = p * s + 1.128358543e-01f;
  p = p * s - 3.761262596e-01f;
  p = p * s + 1.283791661e-01f;
  const float small = x + x * p;

  // Written so that NaN is kept (a > 3.95 is false for it) and reaches the result.
  const float t = (a > 3.95f ? 3.95f : a) - 2.5f;
  float e = 8.922005691e-06f;
  e = e * t - 2.114881318e-05f;
  e = e * t - 6.070137533e-05f;
  e = e * t + 2.794530301e-04f;
  e = e * t - 2.890889591e-04f;
  e = e * t - 5.713833962e-04f;
  e = e * t + 2.820738824e-03f;
  e = e * t - 6.102447398e-03f;
  e = e * t + 8.614182472e-03f;
  e = e * t - 8.353488520e-03f;
  e = e * t + 5.446833093e-03f;
  e = e * t - 2.178058494e-03f;
  e = e * t + 4.069270799e-04f;
  const float large = 1.0f - e;
  const float signed_large = x < 0 ? -large : large;
  return a <= 1.0f ? small : signed_large;
}

}  // namespace gradflow::fast
