#include "collsim/models/random.hpp"

#include <cmath>
#include <limits>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;  // 2^-53
constexpr double kSqrt2 = 1.4142135623730950488;
constexpr double kSqrt2Pi = 2.5066282746310005024;

// Acklam's coefficients (P. J. Acklam, "An algorithm for computing the inverse normal
// cumulative distribution function", 2003). Central region |p - 0.5| <= 0.5 - kLowBreak uses
// a rational function of (p - 0.5)^2, the tails one of sqrt(-2 ln p).
constexpr double kA[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                          1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
constexpr double kB[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                          6.680131188771972e+01,  -1.328068155288572e+01};
constexpr double kC[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                          -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
constexpr double kD[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                          3.754408661907416e+00};
constexpr double kLowBreak = 0.02425;

// Quantile for p in (0, 0.5]. Working only in the lower half keeps Phi(x) - p free of
// cancellation: both terms are small numbers with full relative precision.
double lower_quantile(double p) {
  double x = 0.0;
  if (p < kLowBreak) {
    const double q = std::sqrt(-2.0 * std::log(p));
    x = (((((kC[0] * q + kC[1]) * q + kC[2]) * q + kC[3]) * q + kC[4]) * q + kC[5]) /
        ((((kD[0] * q + kD[1]) * q + kD[2]) * q + kD[3]) * q + 1.0);
  } else {
    const double q = p - 0.5;
    const double r = q * q;
    x = (((((kA[0] * r + kA[1]) * r + kA[2]) * r + kA[3]) * r + kA[4]) * r + kA[5]) * q /
        (((((kB[0] * r + kB[1]) * r + kB[2]) * r + kB[3]) * r + kB[4]) * r + 1.0);
  }
  // One Halley step on f(x) = Phi(x) - p. f'(x) = phi(x), f''/f' = -x, so the step is
  // u / (1 + x u / 2) with u = f / f'. Skipped where exp(x^2/2) would overflow; there the
  // approximation is already far below the spacing of representable p.
  const double half_x2 = 0.5 * x * x;
  if (half_x2 < 700.0) {
    const double e = normal_cdf(x) - p;
    const double u = e * kSqrt2Pi * std::exp(half_x2);
    x -= u / (1.0 + 0.5 * x * u);
  }
  return x;
}

std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

double uniform01(Rng& rng) { return static_cast<double>(rng() >> 11) * kTwoPowMinus53; }

double uniform_open01(Rng& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * kTwoPowMinus53;
}

std::uint64_t uniform_index(Rng& rng, std::uint64_t bound) {
  COLLSIM_ASSERT(bound >= 1, "uniform_index needs a non-empty range");
  // Accept draws below the largest multiple of bound; the rest would bias small indices.
  const std::uint64_t limit = std::numeric_limits<std::uint64_t>::max() -
                              std::numeric_limits<std::uint64_t>::max() % bound;
  std::uint64_t draw = rng();
  while (draw >= limit) draw = rng();
  return draw % bound;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / kSqrt2); }

double normal_quantile(double p) {
  if (std::isnan(p)) return p;
  if (p <= 0.0) return -std::numeric_limits<double>::infinity();
  if (p >= 1.0) return std::numeric_limits<double>::infinity();
  if (p > 0.5) return -lower_quantile(1.0 - p);
  return lower_quantile(p);
}

std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  return splitmix64(splitmix64(splitmix64(seed) ^ stream) ^ index);
}

}  // namespace collsim
