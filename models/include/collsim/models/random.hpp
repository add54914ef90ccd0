// Platform-independent random numbers. std::mt19937_64 is specified bit for bit by the C++
// standard, but the std:: distributions are not, so every transformation from raw 64-bit draws
// to doubles lives here and in distribution.cpp: a seed gives the same numbers everywhere
// (up to the last-ulp differences of the platform's libm exp/log/erfc).
#pragma once

#include <cstdint>
#include <random>

namespace collsim {

/// The only random engine collsim uses.
using Rng = std::mt19937_64;

/// Uniform double in [0, 1) from the 53 high bits of exactly one 64-bit draw.
double uniform01(Rng& rng);

/// Uniform double in the open interval (0, 1): the 53 high bits of one draw plus one half,
/// times 2^-53. Never 0 or 1, so inverse CDFs with infinite tails never see an endpoint.
double uniform_open01(Rng& rng);

/// Uniform integer in [0, bound) from 64-bit draws by rejection (no modulo bias).
/// Precondition bound >= 1 (throws InternalError otherwise). Usually consumes one draw.
std::uint64_t uniform_index(Rng& rng, std::uint64_t bound);

/// Standard normal CDF Phi(x), computed as erfc(-x / sqrt 2) / 2 so that the lower tail keeps
/// full relative precision.
double normal_cdf(double x);

/// Standard normal quantile Phi^-1(p) for p in (0, 1); -inf at p <= 0 and +inf at p >= 1.
/// Acklam's rational approximation (relative error 1.15e-9) refined by one Halley step on
/// Phi(x) - p, which brings it to double precision. Symmetric by construction:
/// normal_quantile(1 - p) == -normal_quantile(p) whenever 1 - p is exact.
double normal_quantile(double p);

/// A seed for an independent sub-stream, mixed from (seed, stream, index) with the splitmix64
/// finalizer so that neighbouring seeds and indices give unrelated generators. Used to give
/// every iteration and every purpose (jitter, delays, identities) its own generator: results
/// then do not depend on the order in which iterations are computed.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index);

}  // namespace collsim
