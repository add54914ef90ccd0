// Delay distributions (seconds) for straggler and jitter models, sampled by our own inverse-CDF
// code from std::mt19937_64 so that a seed gives the same delays on every platform.
//
// Every sample consumes exactly one 64-bit draw, u = uniform_open01(rng) in (0, 1), and returns
// quantile(u). Changing one distribution therefore never shifts the draws of another that
// shares the generator.
#pragma once

#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/random.hpp"

namespace collsim {

enum class DistributionKind { Constant, Uniform, TruncatedNormal, Exponential, Lognormal, Pareto, Empirical };

/// The name used in YAML, on the command line and in describe(): "constant", "uniform",
/// "truncated_normal", "exponential", "lognormal", "pareto", "empirical".
std::string_view distribution_kind_name(DistributionKind kind);

/// A non-negative random delay in seconds. A small copyable value; empirical samples are shared
/// between copies. Build it with the named constructors, which validate their parameters and
/// throw ConfigError naming `what` (the config key, e.g. "arrival.jitter") and the bad value.
class DelayDistribution {
 public:
  /// The constant 0 s.
  DelayDistribution() = default;

  /// Always value_s. Throws ConfigError unless value_s is finite and >= 0.
  static DelayDistribution constant(double value_s, std::string_view what = "distribution");

  /// Uniform on [min_s, max_s]. Throws ConfigError unless 0 <= min_s <= max_s < inf.
  static DelayDistribution uniform(double min_s, double max_s, std::string_view what = "distribution");

  /// Normal(mean_s, stddev_s) conditioned on [lo_s, hi_s] (hi_s may be +inf). Sampled by the
  /// inverse CDF restricted to [Phi(a), Phi(b)], a = (lo - mean) / stddev, b = (hi - mean) / stddev,
  /// mirrored when a > 0 so that the interval always sits where Phi keeps full precision.
  /// Throws ConfigError unless stddev_s > 0, 0 <= lo_s < hi_s, mean_s finite, and the interval
  /// carries a probability above 1e-280 (the interval reaches within ~35 stddev of the mean).
  static DelayDistribution truncated_normal(double mean_s, double stddev_s, double lo_s = 0.0,
                                            double hi_s = kInfinity,
                                            std::string_view what = "distribution");

  /// shift_s + Exponential with mean mean_s. Throws ConfigError unless mean_s > 0, shift_s >= 0.
  static DelayDistribution exponential(double mean_s, double shift_s = 0.0,
                                       std::string_view what = "distribution");

  /// exp(Normal(mu, sigma)) seconds: mu is the mean of ln(delay / 1 s), sigma > 0 its standard
  /// deviation. Throws ConfigError unless mu is finite and 0 < sigma < inf.
  static DelayDistribution lognormal(double mu, double sigma, std::string_view what = "distribution");

  /// The lognormal with the given median and mean (both seconds). Since median = e^mu and
  /// mean = e^(mu + sigma^2 / 2): mu = ln(median), sigma = sqrt(2 ln(mean / median)).
  /// Example: the paper's fine-tuning straggler (median 6.97 ms, mean 9.50 ms) gives sigma 0.787.
  /// Throws ConfigError unless 0 < median_s < mean_s < inf (median >= mean has no lognormal).
  static DelayDistribution lognormal_from_median_mean(double median_s, double mean_s,
                                                      std::string_view what = "distribution");

  /// The lognormal with the given median (seconds) and sigma: mu = ln(median).
  /// Throws ConfigError unless median_s > 0 and 0 < sigma < inf.
  static DelayDistribution lognormal_from_median_sigma(double median_s, double sigma,
                                                       std::string_view what = "distribution");

  /// Pareto type I: P(X > x) = (scale_s / x)^shape for x >= scale_s. The mean is finite only for
  /// shape > 1, the variance only for shape > 2 (mean()/variance() return +inf otherwise).
  /// Throws ConfigError unless scale_s > 0 and shape > 0 (both finite).
  static DelayDistribution pareto(double scale_s, double shape, std::string_view what = "distribution");

  /// Resampling from observed delays: the inverse of the empirical CDF, a step function, so
  /// every sample is one of samples_s (with its observed frequency). `source` names the origin
  /// for describe() (a file name). Throws ConfigError if samples_s is empty or holds a negative
  /// or non-finite value.
  static DelayDistribution empirical(std::vector<double> samples_s, std::string source,
                                     std::string_view what = "distribution");

  /// Empirical distribution of the samples in a CSV file, see read_delay_samples_csv.
  static DelayDistribution empirical_csv(const std::filesystem::path& file, std::string_view column = {},
                                         std::optional<double> unit_s = std::nullopt,
                                         std::string_view what = "distribution");

  /// One delay in seconds (>= 0) from exactly one draw of rng.
  double sample(Rng& rng) const { return quantile(uniform_open01(rng)); }

  /// The inverse CDF at p in (0, 1), seconds. sample() is quantile(uniform_open01(rng)).
  double quantile(double p) const;

  /// Analytic mean in seconds (+inf for a Pareto with shape <= 1; the sample mean for empirical).
  double mean() const;

  /// Analytic variance in s^2 (+inf for a Pareto with shape <= 2; the population variance of
  /// the samples for empirical).
  double variance() const;

  /// A one-line human description, e.g. "lognormal(median=6.970 ms, mean=9.500 ms, sigma=0.7870)".
  std::string describe() const;

  DistributionKind kind() const { return kind_; }

  /// Parameters as given to the named constructor, SI units. Which ones are meaningful depends
  /// on kind(): constant {value}, uniform {min,max}, truncated_normal {mean,stddev,lo,hi},
  /// exponential {mean,shift}, lognormal {mu,sigma}, pareto {scale,shape}.
  struct Parameters {
    double value_s = 0;
    double min_s = 0, max_s = 0;
    double mean_s = 0, stddev_s = 0, lo_s = 0, hi_s = 0;
    double shift_s = 0;
    double mu = 0, sigma = 0;
    double scale_s = 0, shape = 0;
  };
  const Parameters& parameters() const { return p_; }

  /// For empirical: the sorted samples (seconds) and where they came from.
  const std::vector<double>& samples_s() const;
  const std::string& source() const { return source_; }

  static constexpr double kInfinity = std::numeric_limits<double>::infinity();

 private:
  DistributionKind kind_ = DistributionKind::Constant;
  Parameters p_;
  // Truncated normal, precomputed: standardized bounds after the optional mirror, their CDFs.
  bool mirrored_ = false;
  double cdf_lo_ = 0, cdf_hi_ = 0, std_lo_ = 0, std_hi_ = 0;
  std::shared_ptr<const std::vector<double>> samples_;
  std::string source_;
};

/// Reads delay samples from a CSV file, returning seconds.
///  - Blank lines and lines starting with '#' are ignored; fields are separated by commas and
///    may be wrapped in double quotes.
///  - The first remaining line is a header iff it is not entirely numeric (a field is numeric
///    when parse_duration_s accepts it, so "5ms" counts as a number).
///  - Without `column`, every line must have exactly one field. With `column`, the header must
///    contain that name and only that field is read.
///  - A field may carry a unit ("5ms", "20 us"). Bare numbers are in `unit_s` seconds if given,
///    else in the unit a header name ends with ("delay_ms", "t_us", "x_ns", "d_s"), else seconds.
/// Throws ConfigError naming the file (and line, value) when the file cannot be read, has no
/// samples, a field is not a number, a value is negative, or the column is missing.
std::vector<double> read_delay_samples_csv(const std::filesystem::path& file, std::string_view column = {},
                                           std::optional<double> unit_s = std::nullopt);

}  // namespace collsim
