//===- DampedInverseTest.cpp - K-FAC's factor inverse ---------------------===//

#include "common/DampedInverse.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using trainc::rt::detail::dampedInverseOnHost;

namespace {

/// A symmetric positive semi-definite n x n matrix B^T B / n of rank `rank`.
std::vector<float> covariance(int64_t n, int64_t rank, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> b(static_cast<size_t>(rank * n));
  for (float &v : b)
    v = normal(gen);
  std::vector<float> m(static_cast<size_t>(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t r = 0; r < rank; ++r)
        s += static_cast<double>(b[r * n + i]) * b[r * n + j];
      m[i * n + j] = static_cast<float>(s / n);
    }
  return m;
}

TEST(DampedInverseTest, InvertsTheDampedMatrix) {
  // Rank-deficient (a batch smaller than the layer): invertible only
  // through the damping.
  const int64_t n = 40;
  const double damping = 1e-2;
  std::vector<float> m = covariance(n, 8, 1), inverse(n * n);
  ASSERT_TRUE(dampedInverseOnHost(n, m.data(), damping, inverse.data()).ok());
  double worst = 0, asymmetry = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double product = 0;
      for (int64_t k = 0; k < n; ++k)
        product += (m[i * n + k] + (i == k ? std::sqrt(damping) : 0.0)) *
                   static_cast<double>(inverse[k * n + j]);
      worst = std::max(worst, std::abs(product - (i == j ? 1.0 : 0.0)));
      asymmetry = std::max(asymmetry, std::abs(static_cast<double>(inverse[i * n + j]) -
                                               inverse[j * n + i]));
    }
  // The inverse is rounded to float once: (M + d I) X = I to about the
  // condition number times float's epsilon.
  EXPECT_LT(worst, 1e-4);
  EXPECT_EQ(asymmetry, 0.0);
}

TEST(DampedInverseTest, InPlaceAndRefusals) {
  const int64_t n = 5;
  std::vector<float> m = covariance(n, 5, 2), copy = m, inverse(n * n);
  ASSERT_TRUE(dampedInverseOnHost(n, m.data(), 1e-3, inverse.data()).ok());
  ASSERT_TRUE(dampedInverseOnHost(n, copy.data(), 1e-3, copy.data()).ok());
  EXPECT_EQ(copy, inverse);
  // Indefinite: -I is not positive definite after a damping of 1e-6.
  std::vector<float> negative(n * n, 0.0f);
  for (int64_t i = 0; i < n; ++i)
    negative[i * n + i] = -1.0f;
  trainc::rt::Status refused = dampedInverseOnHost(n, negative.data(), 1e-6, inverse.data());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("not positive definite"), std::string::npos);
  EXPECT_FALSE(dampedInverseOnHost(n, m.data(), std::nan(""), inverse.data()).ok());
}

} // namespace
