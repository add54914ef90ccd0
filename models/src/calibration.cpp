#include "collsim/models/calibration.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

constexpr int kUnknowns = 3;  // alpha, beta, gamma (columns of the design matrix, in this order)
constexpr int kBeta = 1;
constexpr int kGamma = 2;
constexpr std::size_t kMinSizesPerRegime = 4;

struct Solution {
  Eigen::Vector3d x = Eigen::Vector3d::Zero();  // alpha (s), beta (s/B), gamma (s/B)
  double cost = std::numeric_limits<double>::infinity();  // sum of squared relative errors
};

double column_value(const CostCoefficients& c, int column) {
  return column == 0 ? c.latency : column == kBeta ? c.bytes : c.reduce_bytes;
}

// Gamma is identifiable only when some rows reduce and the reduced bytes are not a fixed
// fraction of the serialised bytes in every row (one reduce_scatter log, for instance, cannot
// separate gamma from beta: both scale with the same bytes).
bool gamma_identifiable(std::span<const FitRow> rows, std::span<const std::size_t> subset) {
  double bb = 0, cc = 0, bc = 0;
  for (const std::size_t i : subset) {
    const double w = 1.0 / rows[i].measured_s;
    const double b = rows[i].coefficients.bytes * w;
    const double c = rows[i].coefficients.reduce_bytes * w;
    bb += b * b;
    cc += c * c;
    bc += b * c;
  }
  if (cc == 0 || bb == 0) return false;
  return bc / std::sqrt(bb * cc) < 1.0 - 1e-9;
}

// Exact non-negative weighted least squares for at most three unknowns: the optimum is the
// unconstrained solution on some set of free variables with the others at zero, so trying every
// set and keeping the best feasible one is exact. Columns are scaled to unit norm because alpha
// (~1e-5 s) and beta (~1e-12 s/B) differ by seven orders of magnitude.
Solution solve_nnls(std::span<const FitRow> rows, std::span<const std::size_t> subset, bool with_gamma) {
  const auto m = static_cast<Eigen::Index>(subset.size());
  Eigen::MatrixXd a(m, kUnknowns);
  const Eigen::VectorXd y = Eigen::VectorXd::Ones(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    const FitRow& row = rows[subset[static_cast<std::size_t>(r)]];
    for (int c = 0; c < kUnknowns; ++c) a(r, c) = column_value(row.coefficients, c) / row.measured_s;
  }
  Eigen::Vector3d scale;
  for (int c = 0; c < kUnknowns; ++c) {
    const double norm = a.col(c).norm();
    scale(c) = norm > 0 ? norm : 1.0;
    a.col(c) /= scale(c);
  }
  const int usable = with_gamma ? 0b111 : 0b011;
  Solution best;
  for (int mask = 1; mask < (1 << kUnknowns); ++mask) {
    if ((mask & ~usable) != 0) continue;
    std::vector<int> free;
    for (int c = 0; c < kUnknowns; ++c) {
      if ((mask >> c) & 1) free.push_back(c);
    }
    Eigen::MatrixXd sub(m, static_cast<Eigen::Index>(free.size()));
    for (std::size_t k = 0; k < free.size(); ++k) sub.col(static_cast<Eigen::Index>(k)) = a.col(free[k]);
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(sub);
    qr.setThreshold(1e-12);
    if (qr.rank() < static_cast<Eigen::Index>(free.size())) continue;
    const Eigen::VectorXd z = qr.solve(y);
    if ((z.array() < 0).any()) continue;
    const double cost = (sub * z - y).squaredNorm();
    if (cost < best.cost) {
      best.cost = cost;
      best.x.setZero();
      for (std::size_t k = 0; k < free.size(); ++k) best.x(free[k]) = z(static_cast<Eigen::Index>(k)) / scale(free[k]);
    }
  }
  return best;
}

LinkModel to_link(const Eigen::Vector3d& x) {
  LinkModel link;
  link.latency_s = x(0);
  link.bandwidth_Bps = x(kBeta) > 0 ? 1.0 / x(kBeta) : std::numeric_limits<double>::infinity();
  link.gamma_s_per_byte = x(kGamma);
  return link;
}

void validate_rows(std::span<const FitRow> rows) {
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const FitRow& r = rows[i];
    const auto& c = r.coefficients;
    if (!(std::isfinite(r.measured_s) && r.measured_s > 0) || !(std::isfinite(r.size_bytes) && r.size_bytes > 0)) {
      throw ConfigError(fmt::format("fit row {}: measured time {} s and size {} B must be positive and finite", i,
                                    r.measured_s, r.size_bytes));
    }
    if (!(c.latency >= 0 && c.bytes >= 0 && c.reduce_bytes >= 0) || !std::isfinite(c.latency + c.bytes + c.reduce_bytes)) {
      throw ConfigError(fmt::format("fit row {}: cost coefficients ({}, {}, {}) must be finite and non-negative", i,
                                    c.latency, c.bytes, c.reduce_bytes));
    }
  }
}

// One regime fitted on the rows whose sizes lie in distinct[first..last].
struct SegmentFit {
  bool ok = false;
  FittedRegime regime;
};

class RegimeSearch {
 public:
  RegimeSearch(std::span<const FitRow> rows, const FitOptions& options) : rows_(rows), options_(options) {
    for (const auto& r : rows) distinct_.push_back(r.size_bytes);
    std::sort(distinct_.begin(), distinct_.end());
    distinct_.erase(std::unique(distinct_.begin(), distinct_.end()), distinct_.end());
  }

  std::size_t distinct_sizes() const { return distinct_.size(); }

  const SegmentFit& segment(std::size_t first, std::size_t last) {
    const auto key = std::make_pair(first, last);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::vector<std::size_t> subset;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      if (rows_[i].size_bytes >= distinct_[first] && rows_[i].size_bytes <= distinct_[last]) subset.push_back(i);
    }
    SegmentFit fit;
    const bool with_gamma = options_.fit_gamma && gamma_identifiable(rows_, subset);
    const Solution s = solve_nnls(rows_, subset, with_gamma);
    // A regime without a bandwidth term would win every large size under the minimum.
    if (std::isfinite(s.cost) && s.x(kBeta) > 0) {
      fit.ok = true;
      fit.regime.link = to_link(s.x);
      fit.regime.min_size_bytes = distinct_[first];
      fit.regime.max_size_bytes = distinct_[last];
      fit.regime.rows = subset.size();
      fit.regime.gamma_fitted = with_gamma;
    }
    return cache_.emplace(key, fit).first->second;
  }

  // Best partition of the distinct sizes into `k` contiguous ranges, each with at least
  // `min_sizes` distinct sizes, by the relative error of the min-over-regimes prediction.
  std::optional<std::vector<FittedRegime>> best(std::uint32_t k, std::size_t min_sizes) {
    std::vector<std::size_t> starts{0};
    std::optional<std::vector<FittedRegime>> best_regimes;
    double best_cost = std::numeric_limits<double>::infinity();
    enumerate(k, min_sizes, starts, best_regimes, best_cost);
    return best_regimes;
  }

 private:
  void enumerate(std::uint32_t k, std::size_t min_sizes, std::vector<std::size_t>& starts,
                 std::optional<std::vector<FittedRegime>>& best_regimes, double& best_cost) {
    const std::size_t m = distinct_.size();
    if (starts.size() == k) {
      std::vector<FittedRegime> regimes;
      for (std::size_t j = 0; j < k; ++j) {
        const std::size_t last = j + 1 < k ? starts[j + 1] - 1 : m - 1;
        const SegmentFit& fit = segment(starts[j], last);
        if (!fit.ok) return;
        regimes.push_back(fit.regime);
      }
      double cost = 0;
      for (const auto& row : rows_) {
        const double e = predict_time_s(row.coefficients, regimes) / row.measured_s - 1.0;
        cost += e * e;
      }
      if (cost < best_cost) {
        best_cost = cost;
        best_regimes = std::move(regimes);
      }
      return;
    }
    const std::size_t remaining = k - starts.size();
    for (std::size_t next = starts.back() + min_sizes; next + remaining * min_sizes <= m; ++next) {
      starts.push_back(next);
      enumerate(k, min_sizes, starts, best_regimes, best_cost);
      starts.pop_back();
    }
  }

  std::span<const FitRow> rows_;
  FitOptions options_;
  std::vector<double> distinct_;
  std::map<std::pair<std::size_t, std::size_t>, SegmentFit> cache_;
};

}  // namespace

double linear_time_s(const CostCoefficients& c, const LinkModel& link) {
  return c.latency * link.latency_s + c.bytes / link.bandwidth_Bps + c.reduce_bytes * link.gamma_s_per_byte;
}

double predict_time_s(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes) {
  return linear_time_s(coefficients, regimes[best_regime(coefficients, regimes)].link);
}

std::uint32_t best_regime(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes) {
  COLLSIM_ASSERT(!regimes.empty(), "a regime model needs at least one regime");
  std::uint32_t best = 0;
  double best_time = linear_time_s(coefficients, regimes[0].link);
  for (std::uint32_t k = 1; k < regimes.size(); ++k) {
    const double t = linear_time_s(coefficients, regimes[k].link);
    if (t < best_time) {
      best_time = t;
      best = k;
    }
  }
  return best;
}

ErrorStats error_stats(std::span<const double> rel_errors) {
  ErrorStats stats;
  stats.count = rel_errors.size();
  if (rel_errors.empty()) return stats;
  std::vector<double> abs_errors;
  double sum = 0;
  for (const double e : rel_errors) {
    abs_errors.push_back(std::fabs(e));
    sum += e;
  }
  std::sort(abs_errors.begin(), abs_errors.end());
  const std::size_t mid = abs_errors.size() / 2;
  stats.median_abs = abs_errors.size() % 2 == 1 ? abs_errors[mid] : 0.5 * (abs_errors[mid - 1] + abs_errors[mid]);
  stats.max_abs = abs_errors.back();
  stats.mean = sum / static_cast<double>(rel_errors.size());
  return stats;
}

FitResult fit_link_model(std::span<const FitRow> rows, const FitOptions& options) {
  if (options.regimes < 1 || options.regimes > 3) {
    throw ConfigError(fmt::format("regimes: {} is outside 1..3", options.regimes));
  }
  validate_rows(rows);
  RegimeSearch search(rows, options);
  // A regime must be fitted, not interpolated through two points: with K > 1 each spans at least
  // kMinSizesPerRegime distinct sizes, or a regime of 8 B..16 B would fit noise exactly.
  const std::size_t min_sizes = options.regimes == 1 ? 2 : kMinSizesPerRegime;
  if (search.distinct_sizes() < min_sizes * options.regimes) {
    throw ConfigError(fmt::format("a fit with {} regime(s) needs at least {} distinct sizes; the data have {}",
                                  options.regimes, min_sizes * options.regimes, search.distinct_sizes()));
  }
  auto regimes = search.best(options.regimes, min_sizes);
  if (!regimes) {
    throw ConfigError(fmt::format(
        "no fit with {} regime(s) gives a positive beta: the data do not constrain the bandwidth (are all sizes "
        "latency-bound, or do larger sizes take less time?)",
        options.regimes));
  }
  FitResult result;
  result.regimes = std::move(*regimes);
  for (const auto& row : rows) {
    const std::uint32_t k = best_regime(row.coefficients, result.regimes);
    const double predicted = linear_time_s(row.coefficients, result.regimes[k].link);
    result.regime_of_row.push_back(k);
    result.predicted_s.push_back(predicted);
    result.rel_error.push_back(predicted / row.measured_s - 1.0);
  }
  result.stats = error_stats(result.rel_error);
  const bool none_identifiable = std::none_of(result.regimes.begin(), result.regimes.end(),
                                              [](const FittedRegime& r) { return r.gamma_fitted; });
  if (!options.fit_gamma) {
    result.notes.push_back("gamma fixed at 0 (disabled)");
  } else if (none_identifiable) {
    result.notes.push_back(
        "gamma not identifiable from these rows (no reductions, or reduced bytes proportional to transferred bytes "
        "in every row); gamma fixed at 0 and absorbed into beta");
  }
  for (std::size_t k = 0; k < result.regimes.size(); ++k) {
    const auto& regime = result.regimes[k];
    if (options.fit_gamma && !none_identifiable && !regime.gamma_fitted) {
      result.notes.push_back(fmt::format("regime {}: gamma not identifiable in this size range; fixed at 0", k));
    } else if (regime.gamma_fitted && regime.link.gamma_s_per_byte == 0) {
      result.notes.push_back(fmt::format("regime {}: gamma clamped at 0 (the unconstrained fit would be negative)", k));
    }
    if (regime.link.latency_s == 0) {
      result.notes.push_back(fmt::format("regime {}: alpha clamped at 0 (the unconstrained fit would be negative)", k));
    }
  }
  return result;
}

}  // namespace collsim
