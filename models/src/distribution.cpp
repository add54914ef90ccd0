#include "collsim/models/distribution.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

constexpr double kInvSqrt2Pi = 0.39894228040143267794;

// Below this the truncated mass is no longer representable well enough for the Halley step
// of normal_quantile (exp(x^2/2) overflows past |x| ~ 37).
constexpr double kMinTruncatedMass = 1e-280;

double normal_pdf(double x) {
  if (std::isinf(x)) return 0.0;
  return kInvSqrt2Pi * std::exp(-0.5 * x * x);
}

// x * phi(x), which is 0 at +-inf rather than NaN.
double x_pdf(double x) { return std::isinf(x) ? 0.0 : x * normal_pdf(x); }

void require(bool ok, std::string_view what, const std::string& message) {
  if (!ok) throw ConfigError(fmt::format("{}: {}", what, message));
}

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0.0; }
bool finite_positive(double v) { return std::isfinite(v) && v > 0.0; }

// The share of draws a distribution may put past the hour. Draws past it are refused as they
// are drawn (ArrivalProcess), which made a tail this heavy an error for one seed and not for
// another (lognormal sigma 1e300 draws inf or 0): one whose 99th percentile already lies past
// the hour is refused as given, whatever the seed.
constexpr double kRangeQuantile = 0.99;

DelayDistribution within_delay_range(DelayDistribution d, std::string_view what) {
  const double q = d.quantile(kRangeQuantile);
  require(q <= kMaxDuration_s, what,
          fmt::format("{} has its 99th percentile at {:.6g} s, more than {} s (1 hour), the longest delay collsim "
                      "takes, so 1 draw in 100 or more would be refused; its tail is too heavy (a larger shape, or a "
                      "smaller scale, median, mean, max or sigma)",
                      d.describe(), q, kMaxDuration_s));
  return d;
}

}  // namespace

std::string_view distribution_kind_name(DistributionKind kind) {
  switch (kind) {
    case DistributionKind::Constant: return "constant";
    case DistributionKind::Uniform: return "uniform";
    case DistributionKind::TruncatedNormal: return "truncated_normal";
    case DistributionKind::Exponential: return "exponential";
    case DistributionKind::Lognormal: return "lognormal";
    case DistributionKind::Pareto: return "pareto";
    case DistributionKind::Empirical: return "empirical";
  }
  return "unknown";
}

DelayDistribution DelayDistribution::constant(double value_s, std::string_view what) {
  require(finite_non_negative(value_s), what,
          fmt::format("constant delay value = {:.6g} s must be finite and >= 0", value_s));
  DelayDistribution d;
  d.kind_ = DistributionKind::Constant;
  d.p_.value_s = value_s;
  return d;
}

DelayDistribution DelayDistribution::uniform(double min_s, double max_s, std::string_view what) {
  require(finite_non_negative(min_s), what,
          fmt::format("uniform min = {:.6g} s must be finite and >= 0", min_s));
  require(std::isfinite(max_s), what, fmt::format("uniform max = {:.6g} s must be finite", max_s));
  require(max_s >= min_s, what,
          fmt::format("uniform max = {:.6g} s is less than min = {:.6g} s", max_s, min_s));
  DelayDistribution d;
  d.kind_ = DistributionKind::Uniform;
  d.p_.min_s = min_s;
  d.p_.max_s = max_s;
  return within_delay_range(std::move(d), what);
}

DelayDistribution DelayDistribution::truncated_normal(double mean_s, double stddev_s, double lo_s,
                                                      double hi_s, std::string_view what) {
  require(std::isfinite(mean_s), what, fmt::format("truncated_normal mean = {:.6g} s must be finite", mean_s));
  require(finite_positive(stddev_s), what,
          fmt::format("truncated_normal stddev = {:.6g} s must be finite and > 0", stddev_s));
  require(finite_non_negative(lo_s), what,
          fmt::format("truncated_normal lo = {:.6g} s must be finite and >= 0 (delays are never negative)", lo_s));
  require(!std::isnan(hi_s) && hi_s > lo_s, what,
          fmt::format("truncated_normal hi = {:.6g} s must be greater than lo = {:.6g} s", hi_s, lo_s));
  DelayDistribution d;
  d.kind_ = DistributionKind::TruncatedNormal;
  d.p_.mean_s = mean_s;
  d.p_.stddev_s = stddev_s;
  d.p_.lo_s = lo_s;
  d.p_.hi_s = hi_s;
  const double a = (lo_s - mean_s) / stddev_s;
  const double b = (hi_s - mean_s) / stddev_s;
  // Phi loses relative precision near 1, so an interval above the mean is handled as the
  // mirror image of one below it.
  d.mirrored_ = a > 0.0;
  d.std_lo_ = d.mirrored_ ? -b : a;
  d.std_hi_ = d.mirrored_ ? -a : b;
  d.cdf_lo_ = normal_cdf(d.std_lo_);
  d.cdf_hi_ = normal_cdf(d.std_hi_);
  require(d.cdf_hi_ - d.cdf_lo_ > kMinTruncatedMass, what,
          fmt::format("truncated_normal interval [lo = {:.6g} s, hi = {:.6g} s] lies too far in the tail of "
                      "normal(mean = {:.6g} s, stddev = {:.6g} s)",
                      lo_s, hi_s, mean_s, stddev_s));
  return within_delay_range(std::move(d), what);
}

DelayDistribution DelayDistribution::exponential(double mean_s, double shift_s, std::string_view what) {
  require(finite_positive(mean_s), what,
          fmt::format("exponential mean = {:.6g} s must be finite and > 0", mean_s));
  require(finite_non_negative(shift_s), what,
          fmt::format("exponential shift = {:.6g} s must be finite and >= 0", shift_s));
  DelayDistribution d;
  d.kind_ = DistributionKind::Exponential;
  d.p_.mean_s = mean_s;
  d.p_.shift_s = shift_s;
  return within_delay_range(std::move(d), what);
}

DelayDistribution DelayDistribution::lognormal(double mu, double sigma, std::string_view what) {
  require(std::isfinite(mu), what, fmt::format("lognormal mu = {:.6g} must be finite", mu));
  require(finite_positive(sigma), what, fmt::format("lognormal sigma = {:.6g} must be finite and > 0", sigma));
  DelayDistribution d;
  d.kind_ = DistributionKind::Lognormal;
  d.p_.mu = mu;
  d.p_.sigma = sigma;
  return within_delay_range(std::move(d), what);
}

DelayDistribution DelayDistribution::lognormal_from_median_mean(double median_s, double mean_s,
                                                                std::string_view what) {
  require(finite_positive(median_s), what,
          fmt::format("lognormal median = {:.6g} s must be finite and > 0", median_s));
  require(std::isfinite(mean_s), what, fmt::format("lognormal mean = {:.6g} s must be finite", mean_s));
  require(mean_s > median_s, what,
          fmt::format("lognormal median = {:.6g} s must be less than mean = {:.6g} s (a lognormal's mean "
                      "always exceeds its median)",
                      median_s, mean_s));
  return lognormal(std::log(median_s), std::sqrt(2.0 * std::log(mean_s / median_s)), what);
}

DelayDistribution DelayDistribution::lognormal_from_median_sigma(double median_s, double sigma,
                                                                 std::string_view what) {
  require(finite_positive(median_s), what,
          fmt::format("lognormal median = {:.6g} s must be finite and > 0", median_s));
  return lognormal(std::log(median_s), sigma, what);
}

DelayDistribution DelayDistribution::pareto(double scale_s, double shape, std::string_view what) {
  require(finite_positive(scale_s), what, fmt::format("pareto scale = {:.6g} s must be finite and > 0", scale_s));
  require(finite_positive(shape), what, fmt::format("pareto shape = {:.6g} must be finite and > 0", shape));
  DelayDistribution d;
  d.kind_ = DistributionKind::Pareto;
  d.p_.scale_s = scale_s;
  d.p_.shape = shape;
  return within_delay_range(std::move(d), what);
}

DelayDistribution DelayDistribution::empirical(std::vector<double> samples_s, std::string source,
                                               std::string_view what) {
  require(!samples_s.empty(), what, fmt::format("empirical distribution '{}' has no samples", source));
  for (std::size_t i = 0; i < samples_s.size(); ++i) {
    require(finite_non_negative(samples_s[i]), what,
            fmt::format("empirical sample {} of '{}' = {:.6g} s must be finite and >= 0", i, source,
                        samples_s[i]));
  }
  std::sort(samples_s.begin(), samples_s.end());
  DelayDistribution d;
  d.kind_ = DistributionKind::Empirical;
  d.samples_ = std::make_shared<const std::vector<double>>(std::move(samples_s));
  d.source_ = std::move(source);
  return d;
}

DelayDistribution DelayDistribution::empirical_csv(const std::filesystem::path& file,
                                                   std::string_view column,
                                                   std::optional<double> unit_s,
                                                   std::string_view what) {
  std::string source = file.string();
  if (!column.empty()) source += fmt::format(" column {}", column);
  try {
    return empirical(read_delay_samples_csv(file, column, unit_s), std::move(source), what);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {}", what, e.what()));
  }
}

const std::vector<double>& DelayDistribution::samples_s() const {
  static const std::vector<double> kNone;
  return samples_ ? *samples_ : kNone;
}

double DelayDistribution::quantile(double p) const {
  switch (kind_) {
    case DistributionKind::Constant:
      return p_.value_s;
    case DistributionKind::Uniform:
      return p_.min_s + (p_.max_s - p_.min_s) * p;
    case DistributionKind::TruncatedNormal: {
      // Mirrored, the interval's upper end is the mirror's lower one: p is 1 - p there (without
      // it quantile(0.99) gave the 1st percentile, and the range check read the wrong tail).
      const double q = mirrored_ ? 1.0 - p : p;
      double z = normal_quantile(cdf_lo_ + q * (cdf_hi_ - cdf_lo_));
      z = std::clamp(z, std_lo_, std_hi_);
      if (mirrored_) z = -z;
      return std::clamp(p_.mean_s + p_.stddev_s * z, p_.lo_s, p_.hi_s);
    }
    case DistributionKind::Exponential:
      return p_.shift_s - p_.mean_s * std::log1p(-p);
    case DistributionKind::Lognormal:
      return std::exp(p_.mu + p_.sigma * normal_quantile(p));
    case DistributionKind::Pareto:
      return p_.scale_s * std::exp(-std::log1p(-p) / p_.shape);
    case DistributionKind::Empirical: {
      // F_n^-1(p) = x_(ceil(p m)) with 1-based order statistics; floor(p m) when 0-based.
      const auto& xs = *samples_;
      const auto m = xs.size();
      const auto index = std::min(static_cast<std::size_t>(p * static_cast<double>(m)), m - 1);
      return xs[index];
    }
  }
  return 0.0;
}

double DelayDistribution::mean() const {
  switch (kind_) {
    case DistributionKind::Constant:
      return p_.value_s;
    case DistributionKind::Uniform:
      return 0.5 * (p_.min_s + p_.max_s);
    case DistributionKind::TruncatedNormal: {
      const double mass = cdf_hi_ - cdf_lo_;
      const double z = (normal_pdf(std_lo_) - normal_pdf(std_hi_)) / mass;
      return p_.mean_s + p_.stddev_s * (mirrored_ ? -z : z);
    }
    case DistributionKind::Exponential:
      return p_.shift_s + p_.mean_s;
    case DistributionKind::Lognormal:
      return std::exp(p_.mu + 0.5 * p_.sigma * p_.sigma);
    case DistributionKind::Pareto:
      if (p_.shape <= 1.0) return kInfinity;
      return p_.shape * p_.scale_s / (p_.shape - 1.0);
    case DistributionKind::Empirical: {
      const auto& xs = *samples_;
      return std::accumulate(xs.begin(), xs.end(), 0.0) / static_cast<double>(xs.size());
    }
  }
  return 0.0;
}

double DelayDistribution::variance() const {
  switch (kind_) {
    case DistributionKind::Constant:
      return 0.0;
    case DistributionKind::Uniform: {
      const double w = p_.max_s - p_.min_s;
      return w * w / 12.0;
    }
    case DistributionKind::TruncatedNormal: {
      // Mirroring flips the sign of the mean shift but leaves the variance unchanged.
      const double mass = cdf_hi_ - cdf_lo_;
      const double z = (normal_pdf(std_lo_) - normal_pdf(std_hi_)) / mass;
      const double v = 1.0 + (x_pdf(std_lo_) - x_pdf(std_hi_)) / mass - z * z;
      return p_.stddev_s * p_.stddev_s * v;
    }
    case DistributionKind::Exponential:
      return p_.mean_s * p_.mean_s;
    case DistributionKind::Lognormal: {
      const double s2 = p_.sigma * p_.sigma;
      return std::expm1(s2) * std::exp(2.0 * p_.mu + s2);
    }
    case DistributionKind::Pareto: {
      const double a = p_.shape;
      if (a <= 2.0) return kInfinity;
      return p_.scale_s * p_.scale_s * a / ((a - 1.0) * (a - 1.0) * (a - 2.0));
    }
    case DistributionKind::Empirical: {
      const auto& xs = *samples_;
      const double mu = mean();
      double sum = 0.0;
      for (double x : xs) sum += (x - mu) * (x - mu);
      return sum / static_cast<double>(xs.size());
    }
  }
  return 0.0;
}

std::string DelayDistribution::describe() const {
  switch (kind_) {
    case DistributionKind::Constant:
      return fmt::format("constant({})", format_duration(p_.value_s));
    case DistributionKind::Uniform:
      return fmt::format("uniform(min={}, max={})", format_duration(p_.min_s), format_duration(p_.max_s));
    case DistributionKind::TruncatedNormal:
      return fmt::format("truncated_normal(mean={}, stddev={}, lo={}, hi={})", format_duration(p_.mean_s),
                         format_duration(p_.stddev_s), format_duration(p_.lo_s),
                         std::isinf(p_.hi_s) ? std::string("inf") : format_duration(p_.hi_s));
    case DistributionKind::Exponential:
      return fmt::format("exponential(mean={}, shift={})", format_duration(p_.mean_s),
                         format_duration(p_.shift_s));
    case DistributionKind::Lognormal:
      return fmt::format("lognormal(mu={:.4f}, sigma={:.4f}; median={}, mean={})", p_.mu, p_.sigma,
                         format_duration(std::exp(p_.mu)), format_duration(mean()));
    case DistributionKind::Pareto:
      return fmt::format("pareto(scale={}, shape={:g})", format_duration(p_.scale_s), p_.shape);
    case DistributionKind::Empirical:
      return fmt::format("empirical({}, {} samples, mean={})", source_, samples_->size(),
                         format_duration(mean()));
  }
  return "unknown";
}

}  // namespace collsim
