#include "collsim/models/calibration.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <tuple>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

// alpha, beta, gamma, launch, launch per extra GPU (columns of the design matrix, in this order)
constexpr int kUnknowns = 5;
constexpr int kAlpha = 0;
constexpr int kBeta = 1;
constexpr int kGamma = 2;
constexpr int kLaunch = 3;
constexpr int kExtraGpu = 4;
using Unknowns = Eigen::Matrix<double, kUnknowns, 1>;

struct Solution {
  Unknowns x = Unknowns::Zero();  // alpha (s), beta (s/B), gamma (s/B), launch (s), launch per extra GPU (s)
  double cost = std::numeric_limits<double>::infinity();  // sum of squared relative errors
  bool alpha_from_prior = false;
};

double column_value(const CostCoefficients& c, int column) {
  switch (column) {
    case kAlpha: return c.latency;
    case kBeta: return c.bytes;
    case kGamma: return c.reduce_bytes;
    case kLaunch: return c.launches;
    default: return c.extra_gpu_launches;
  }
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

bool any_launches(std::span<const FitRow> rows, std::span<const std::size_t> subset) {
  return std::any_of(subset.begin(), subset.end(), [&](std::size_t i) { return rows[i].coefficients.launches > 0; });
}

// The launch of the further GPUs a thread drives is told apart from the launch itself only by the
// same measurement made with the GPUs driven two ways (nccl-tests -g 8 next to mpirun -np 8 with
// -g 1): rows of one size with the same hops and launches on the critical path (the same
// collective, schedule and n) but different extra GPU launches. Logs that differ in -g and also in
// collective or n do not separate it: the difference in driving is then confounded with the
// difference in the collective (or with another machine), and the term would absorb that.
bool extra_gpu_launch_separable(std::span<const FitRow> rows, std::span<const std::size_t> subset) {
  std::map<std::tuple<double, double, double>, double> extra_of;  // (size, hops, launches) -> extra launches
  for (const std::size_t i : subset) {
    const CostCoefficients& c = rows[i].coefficients;
    const auto [it, inserted] = extra_of.try_emplace({rows[i].size_bytes, c.latency, c.launches}, c.extra_gpu_launches);
    if (!inserted && it->second != c.extra_gpu_launches) return true;
  }
  return false;
}

// The launch is paid once per collective and alpha once per hop: the rows separate them only
// when their hops per launch differ (several collectives with different step counts, several n,
// or per-round launches). One reduce_scatter log at one n has 3 hops per launch in every row,
// so "launch + 3 alpha" is all it measures.
bool alpha_separable_from_launch(std::span<const FitRow> rows, std::span<const std::size_t> subset) {
  double ll = 0, aa = 0, la = 0;
  for (const std::size_t i : subset) {
    const double w = 1.0 / rows[i].measured_s;
    const double l = rows[i].coefficients.launches * w;
    const double a = rows[i].coefficients.latency * w;
    ll += l * l;
    aa += a * a;
    la += l * a;
  }
  if (ll == 0 || aa == 0) return true;
  return la / std::sqrt(ll * aa) < 1.0 - 1e-9;
}

// Exact non-negative least squares of `a` x ~ y (the rows are already divided by the measured
// time, so with y = 1 the residuals are relative errors; a term fixed at a prior moves its part
// into y) with only the columns in `usable` free: the optimum
// is the unconstrained solution on some set of free columns with the others at zero, so trying
// every set and keeping the best feasible one is exact; it is cheap for the at most
// 2 * kMaxLinkClasses + 1 columns used here. Columns are scaled to unit norm because alpha
// (~1e-5 s) and beta (~1e-12 s/B) differ by seven orders of magnitude.
struct GeneralSolution {
  Eigen::VectorXd x;
  double cost = std::numeric_limits<double>::infinity();  // sum of squared relative errors
};

GeneralSolution nnls_by_subsets(Eigen::MatrixXd a, std::uint32_t usable, const Eigen::VectorXd& y) {
  const auto m = a.rows();
  const auto columns = static_cast<int>(a.cols());
  Eigen::VectorXd scale(columns);
  for (int c = 0; c < columns; ++c) {
    const double norm = a.col(c).norm();
    scale(c) = norm > 0 ? norm : 1.0;
    a.col(c) /= scale(c);
  }
  GeneralSolution best;
  best.x = Eigen::VectorXd::Zero(columns);
  for (std::uint32_t mask = 0; mask < (1u << columns); ++mask) {
    if ((mask & ~usable) != 0) continue;
    if (mask == 0) {  // every column at zero (or at its prior): feasible, and a baseline
      const double cost = y.squaredNorm();
      if (cost < best.cost) {
        best.cost = cost;
        best.x.setZero();
      }
      continue;
    }
    std::vector<int> free;
    for (int c = 0; c < columns; ++c) {
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

// The single-class fit: columns alpha, beta, gamma, launch, launch per extra GPU. A term given a
// value (`alpha_prior_s`, `launch_fixed_s`, `extra_gpu_fixed_s`) is fixed there and its share of
// every row moves to the right-hand side.
Solution solve_nnls(std::span<const FitRow> rows, std::span<const std::size_t> subset, bool with_gamma,
                    bool with_launch, std::optional<double> alpha_prior_s, std::optional<double> launch_fixed_s,
                    std::optional<double> extra_gpu_fixed_s) {
  const auto m = static_cast<Eigen::Index>(subset.size());
  Eigen::MatrixXd a(m, kUnknowns);
  Eigen::VectorXd y = Eigen::VectorXd::Ones(m);
  for (Eigen::Index r = 0; r < m; ++r) {
    const FitRow& row = rows[subset[static_cast<std::size_t>(r)]];
    for (int c = 0; c < kUnknowns; ++c) a(r, c) = column_value(row.coefficients, c) / row.measured_s;
    if (alpha_prior_s) y(r) -= a(r, kAlpha) * *alpha_prior_s;
    if (launch_fixed_s) y(r) -= a(r, kLaunch) * *launch_fixed_s;
    if (extra_gpu_fixed_s) y(r) -= a(r, kExtraGpu) * *extra_gpu_fixed_s;
  }
  std::uint32_t usable = (1u << kAlpha) | (1u << kBeta);
  if (with_gamma) usable |= 1u << kGamma;
  if (with_launch) usable |= (1u << kLaunch) | (1u << kExtraGpu);
  if (alpha_prior_s) usable &= ~(1u << kAlpha);
  if (launch_fixed_s) usable &= ~(1u << kLaunch);
  if (extra_gpu_fixed_s) usable &= ~(1u << kExtraGpu);
  const GeneralSolution g = nnls_by_subsets(std::move(a), usable, y);
  Solution best;
  best.cost = g.cost;
  best.x = g.x;
  if (launch_fixed_s) best.x(kLaunch) = *launch_fixed_s;
  if (extra_gpu_fixed_s) best.x(kExtraGpu) = *extra_gpu_fixed_s;
  if (alpha_prior_s) {
    best.x(kAlpha) = *alpha_prior_s;
    best.alpha_from_prior = true;
  }
  return best;
}

LinkModel to_link(const Unknowns& x) {
  LinkModel link;
  link.latency_s = x(kAlpha);
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
    if (!(c.latency >= 0 && c.bytes >= 0 && c.reduce_bytes >= 0 && c.launches >= 0 && c.extra_gpu_launches >= 0) ||
        !std::isfinite(c.latency + c.bytes + c.reduce_bytes + c.launches + c.extra_gpu_launches)) {
      throw ConfigError(fmt::format("fit row {}: cost coefficients ({}, {}, {}, {}, {}) must be finite and non-negative",
                                    i, c.latency, c.bytes, c.reduce_bytes, c.launches, c.extra_gpu_launches));
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
  // One regime stands for every protocol; with several, a row whose protocol is known joins its own.
  RegimeSearch(std::span<const FitRow> rows, const FitOptions& options)
      : rows_(rows), options_(options), by_protocol_(options.regimes > 1) {
    for (const auto& r : rows) distinct_.push_back(r.size_bytes);
    std::sort(distinct_.begin(), distinct_.end());
    distinct_.erase(std::unique(distinct_.begin(), distinct_.end()), distinct_.end());
  }

  std::size_t distinct_sizes() const { return distinct_.size(); }

  // `launch`: the launch terms of the partition's first regime, shared by the later ones (the
  // kernel launch does not depend on the protocol, and bandwidth-bound sizes cannot measure it).
  struct Launch {
    double launch_s = 0;
    double per_extra_gpu_s = 0;
    bool per_extra_gpu_fitted = false;
  };
  const SegmentFit& segment(std::size_t first, std::size_t last, Protocol protocol, std::optional<Launch> launch) {
    const auto key = std::make_tuple(first, last, protocol, launch ? launch->launch_s : -1.0,
                                     launch ? launch->per_extra_gpu_s : -1.0);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::vector<std::size_t> subset;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      // A row whose protocol is known belongs to that protocol's regime, whatever its size.
      const bool in_range = rows_[i].size_bytes >= distinct_[first] && rows_[i].size_bytes <= distinct_[last];
      if (by_protocol_ && rows_[i].protocol ? *rows_[i].protocol == protocol : in_range) subset.push_back(i);
    }
    SegmentFit fit;
    const bool with_gamma = options_.fit_gamma && gamma_identifiable(rows_, subset);
    const bool with_launch = options_.fit_launch && any_launches(rows_, subset);
    std::optional<double> alpha_prior_s;
    if (with_launch && !alpha_separable_from_launch(rows_, subset)) alpha_prior_s = per_hop_prior(protocol).value;
    // The launch per extra GPU: the first regime's in later ones, else fitted where the rows
    // separate it, else the prior (it only matters when some row drives several GPUs per thread).
    std::optional<double> extra_gpu_fixed_s;
    bool extra_gpu_fitted = false;
    if (!with_launch) {
      extra_gpu_fixed_s = 0.0;  // no launch charged (--no-launch, or no row launches): none per GPU either
    } else if (launch) {
      extra_gpu_fixed_s = launch->per_extra_gpu_s;
      extra_gpu_fitted = launch->per_extra_gpu_fitted;
    } else if (extra_gpu_launch_separable(rows_, subset)) {
      extra_gpu_fitted = true;
    } else {
      extra_gpu_fixed_s = launch_per_extra_gpu_prior().value;
    }
    const Solution s = solve_nnls(rows_, subset, with_gamma, with_launch, alpha_prior_s,
                                  with_launch && launch ? std::optional<double>(launch->launch_s) : std::nullopt,
                                  extra_gpu_fixed_s);
    // A regime without a bandwidth term would win every large size under the minimum.
    if (std::isfinite(s.cost) && s.x(kBeta) > 0) {
      fit.ok = true;
      fit.regime.link = to_link(s.x);
      fit.regime.launch_s = s.x(kLaunch);
      fit.regime.launch_fitted = with_launch;
      fit.regime.launch_per_extra_gpu_s = s.x(kExtraGpu);
      fit.regime.launch_per_extra_gpu_fitted = with_launch && extra_gpu_fitted;
      fit.regime.latency_fitted = !s.alpha_from_prior;
      fit.regime.protocol = protocol;
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
        std::optional<Launch> launch;
        if (j > 0) {
          const FittedRegime& r = regimes.front();
          launch = Launch{r.launch_s, r.launch_per_extra_gpu_s, r.launch_per_extra_gpu_fitted};
        }
        const SegmentFit& fit = segment(starts[j], last, protocol_of_regime(static_cast<std::uint32_t>(j), k), launch);
        if (!fit.ok) return;
        regimes.push_back(fit.regime);
      }
      double cost = 0;
      for (const auto& row : rows_) {
        const double e = predict_time_s(row.coefficients, regimes, row.protocol) / row.measured_s - 1.0;
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
  std::map<std::tuple<std::size_t, std::size_t, Protocol, double, double>, SegmentFit> cache_;
  bool by_protocol_;
};

}  // namespace

double linear_time_s(const CostCoefficients& c, const LinkModel& link, double launch_s, double launch_per_extra_gpu_s) {
  return c.latency * link.latency_s + c.bytes / link.bandwidth_Bps + c.reduce_bytes * link.gamma_s_per_byte +
         c.launches * launch_s + c.extra_gpu_launches * launch_per_extra_gpu_s;
}

const char* protocol_name(Protocol protocol) {
  switch (protocol) {
    case Protocol::LL: return "LL";
    case Protocol::LL128: return "LL128";
    case Protocol::Simple: return "Simple";
  }
  return "LL";
}

Protocol protocol_of_regime(std::uint32_t k, std::uint32_t regimes) {
  if (regimes >= 3) return k == 0 ? Protocol::LL : k == 1 ? Protocol::LL128 : Protocol::Simple;
  if (regimes == 2) return k == 0 ? Protocol::LL : Protocol::Simple;
  return Protocol::LL;
}

TermPrior per_hop_prior(Protocol protocol) {
  // NCCL's tuner (src/graph/tuning.cc, hwLat for NVLink, Ring) charges these per ring step on
  // top of a base latency per launch; they are the published numbers, not fitted to any log.
  switch (protocol) {
    case Protocol::LL: return {0.6e-6, "NCCL src/graph/tuning.cc hwLat[NVLink][Ring][LL] = 0.6 us"};
    case Protocol::LL128: return {1.9e-6, "NCCL src/graph/tuning.cc hwLat[NVLink][Ring][LL128] = 1.9 us"};
    case Protocol::Simple: return {3.4e-6, "NCCL src/graph/tuning.cc hwLat[NVLink][Ring][Simple] = 3.4 us"};
  }
  return {0.6e-6, ""};
}

TermPrior launch_per_extra_gpu_prior() {
  // Measured on the shared A100 server, whose all_reduce was logged both ways: nccl-tests -g 8
  // (one thread drives all 8 GPUs) and mpirun -np 8 with -g 1. Fitting both logs together
  // (`collsim calibrate a100-sxm4-8gpu-allreduce-g8.txt a100-sxm4-8gpu-allreduce-mpirun.txt`)
  // separates the term: 2.40 us per further GPU (the launch of one GPU is 14.2 us there). It is
  // host-side work (a kernel launch and its bookkeeping per device), so it carries to other GPUs
  // driven from one thread the same way.
  return {2.4e-6,
          "2.4 us: fitted on the shared A100 server's all_reduce run both ways, nccl-tests -g 8 and mpirun -np 8 "
          "with -g 1 (a100-sxm4-8gpu-allreduce-g8.txt + -mpirun.txt)"};
}

namespace {

// Time under one regime, with every term the regime carries.
double regime_time_s(const CostCoefficients& coefficients, const FittedRegime& r) {
  return linear_time_s(coefficients, r.link, r.launch_s, r.launch_per_extra_gpu_s);
}

}  // namespace

double predict_time_s(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes,
                      std::optional<Protocol> protocol) {
  return regime_time_s(coefficients, regimes[best_regime(coefficients, regimes, protocol)]);
}

std::uint32_t best_regime(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes,
                          std::optional<Protocol> protocol) {
  COLLSIM_ASSERT(!regimes.empty(), "a regime model needs at least one regime");
  if (protocol && regimes.size() > 1) {
    for (std::uint32_t k = 0; k < regimes.size(); ++k) {
      if (regimes[k].protocol == *protocol) return k;
    }
  }
  std::uint32_t best = 0;
  double best_time = regime_time_s(coefficients, regimes[0]);
  for (std::uint32_t k = 1; k < regimes.size(); ++k) {
    const double t = regime_time_s(coefficients, regimes[k]);
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
  if (search.distinct_sizes() < min_distinct_sizes(options.regimes)) {
    throw ConfigError(fmt::format("a fit with {} regime(s) needs at least {} distinct sizes; the data have {}",
                                  options.regimes, min_distinct_sizes(options.regimes), search.distinct_sizes()));
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
    const std::uint32_t k = best_regime(row.coefficients, result.regimes, row.protocol);
    const double predicted = regime_time_s(row.coefficients, result.regimes[k]);
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
    if (k == 0 && regime.launch_fitted && !regime.launch_per_extra_gpu_fitted &&
        std::any_of(rows.begin(), rows.end(), [](const FitRow& r) { return r.coefficients.extra_gpu_launches > 0; })) {
      result.notes.push_back(fmt::format(
          "no measurement was made with its GPUs driven two ways, so the launch per extra GPU a thread drives is not "
          "separable from the launch; it is a prior, {} us ({})",
          1e6 * regime.launch_per_extra_gpu_s, launch_per_extra_gpu_prior().source));
    }
    if (!regime.latency_fitted) {
      result.notes.push_back(fmt::format(
          "regime {} ({}): the rows cannot separate the per-hop alpha from the launch overhead (the same hops per "
          "launch in every row); alpha = {} us is a prior ({}), launch fitted",
          k, protocol_name(regime.protocol), 1e6 * regime.link.latency_s, per_hop_prior(regime.protocol).source));
    } else if (regime.link.latency_s == 0) {
      result.notes.push_back(fmt::format("regime {}: alpha clamped at 0 (the unconstrained fit would be negative)", k));
    }
  }
  return result;
}

CostCoefficients ClassCostCoefficients::total() const {
  CostCoefficients c;
  for (const double x : latency) c.latency += x;
  for (const double x : bytes) c.bytes += x;
  c.reduce_bytes = reduce_bytes;
  c.launches = launches;
  return c;
}

double linear_time_s(const ClassCostCoefficients& coefficients, const ClassFitResult& fit) {
  COLLSIM_ASSERT(coefficients.latency.size() == fit.classes.size() && coefficients.bytes.size() == fit.classes.size(),
                 "one coefficient per link class");
  double t = 0;
  for (std::size_t k = 0; k < fit.classes.size(); ++k) {
    const LinkClassFit& c = fit.classes[k];
    if (!c.identified) {
      COLLSIM_ASSERT(coefficients.latency[k] == 0 && coefficients.bytes[k] == 0,
                     fmt::format("a time crosses link class '{}', which the fit did not identify", c.name));
      continue;
    }
    t += coefficients.latency[k] * c.link.latency_s + coefficients.bytes[k] / c.link.bandwidth_Bps;
  }
  return t + coefficients.reduce_bytes * fit.gamma_s_per_byte;
}

ClassFitResult fit_link_classes(std::span<const ClassFitRow> rows, std::span<const std::string> class_names,
                                bool fit_gamma) {
  const std::size_t classes = class_names.size();
  if (classes == 0 || classes > kMaxLinkClasses) {
    throw ConfigError(fmt::format("link classes: {} given; the fit handles 1..{}", classes, kMaxLinkClasses));
  }
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& c = rows[i].coefficients;
    if (c.latency.size() != classes || c.bytes.size() != classes) {
      throw ConfigError(fmt::format("fit row {}: {} latency and {} bytes coefficients for {} link classes", i,
                                    c.latency.size(), c.bytes.size(), classes));
    }
    const double t = rows[i].measured_s, size = rows[i].size_bytes;
    if (!(std::isfinite(t) && t > 0) || !(std::isfinite(size) && size > 0)) {
      throw ConfigError(fmt::format("fit row {}: measured time {} s and size {} B must be positive and finite", i, t, size));
    }
    for (std::size_t k = 0; k < classes; ++k) {
      if (!(c.latency[k] >= 0 && c.bytes[k] >= 0) || !std::isfinite(c.latency[k] + c.bytes[k])) {
        throw ConfigError(fmt::format("fit row {}: link class '{}' has coefficients ({}, {}); they must be finite and "
                                      "non-negative",
                                      i, class_names[k], c.latency[k], c.bytes[k]));
      }
    }
    if (!(c.reduce_bytes >= 0) || !std::isfinite(c.reduce_bytes)) {
      throw ConfigError(fmt::format("fit row {}: reduce_bytes {} must be finite and non-negative", i, c.reduce_bytes));
    }
  }
  std::vector<double> sizes;
  for (const auto& r : rows) sizes.push_back(r.size_bytes);
  std::sort(sizes.begin(), sizes.end());
  const auto distinct = static_cast<std::size_t>(std::unique(sizes.begin(), sizes.end()) - sizes.begin());
  if (distinct < 2) {
    throw ConfigError(fmt::format("a per-class fit needs at least 2 distinct sizes; the data have {}", distinct));
  }

  ClassFitResult result;
  std::vector<std::size_t> present;  // classes some row's critical path crosses
  for (std::size_t k = 0; k < classes; ++k) {
    LinkClassFit fit;
    fit.name = class_names[k];
    fit.link = LinkModel{0.0, 0.0, 0.0};
    for (const auto& r : rows) {
      if (r.coefficients.latency[k] > 0 || r.coefficients.bytes[k] > 0) ++fit.rows;
    }
    if (fit.rows > 0) {
      present.push_back(k);
    } else {
      result.notes.push_back(fmt::format("link class '{}' not identified: no fitted measurement's critical path "
                                         "crosses it (no parameters are reported for it)",
                                         fit.name));
    }
    result.classes.push_back(std::move(fit));
  }
  if (present.empty()) throw ConfigError("per-class fit: no fitted measurement crosses any link class");

  // Columns: alpha and beta of every present class, then gamma.
  const auto m = static_cast<Eigen::Index>(rows.size());
  const auto unknowns = static_cast<Eigen::Index>(2 * present.size() + 1);
  const Eigen::Index gamma_column = unknowns - 1;
  Eigen::MatrixXd a(m, unknowns);
  bool any_reduction = false;
  for (Eigen::Index r = 0; r < m; ++r) {
    const ClassFitRow& row = rows[static_cast<std::size_t>(r)];
    for (std::size_t j = 0; j < present.size(); ++j) {
      a(r, static_cast<Eigen::Index>(2 * j)) = row.coefficients.latency[present[j]] / row.measured_s;
      a(r, static_cast<Eigen::Index>(2 * j + 1)) = row.coefficients.bytes[present[j]] / row.measured_s;
    }
    a(r, gamma_column) = row.coefficients.reduce_bytes / row.measured_s;
    any_reduction = any_reduction || row.coefficients.reduce_bytes > 0;
  }
  const auto full_rank = [&](Eigen::Index columns) {
    Eigen::MatrixXd scaled = a.leftCols(columns);
    for (Eigen::Index c = 0; c < columns; ++c) {
      const double norm = scaled.col(c).norm();
      if (norm > 0) scaled.col(c) /= norm;
    }
    Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(scaled);
    qr.setThreshold(1e-9);
    return qr.rank() == columns;
  };
  if (!full_rank(gamma_column)) {
    std::vector<std::string> names;
    for (const std::size_t k : present) names.push_back(class_names[k]);
    throw ConfigError(fmt::format(
        "per-class fit: the data cannot separate the parameters of link classes {} (their alpha and beta terms are "
        "linearly dependent over the fitted rows); add measurements whose critical path crosses one class alone, "
        "e.g. a collective inside one node, or sizes spanning latency- and bandwidth-bound",
        fmt::join(names, ", ")));
  }
  result.gamma_fitted = fit_gamma && any_reduction && full_rank(unknowns);
  const std::uint32_t all = (1u << static_cast<std::uint32_t>(unknowns)) - 1;
  const std::uint32_t usable = result.gamma_fitted ? all : all & ~(1u << static_cast<std::uint32_t>(gamma_column));
  const GeneralSolution solution = nnls_by_subsets(a, usable, Eigen::VectorXd::Ones(m));
  if (!std::isfinite(solution.cost)) throw ConfigError("per-class fit: no non-negative solution");
  result.gamma_s_per_byte = solution.x(gamma_column);
  for (std::size_t j = 0; j < present.size(); ++j) {
    LinkClassFit& c = result.classes[present[j]];
    const double alpha = solution.x(static_cast<Eigen::Index>(2 * j));
    const double beta = solution.x(static_cast<Eigen::Index>(2 * j + 1));
    if (!(beta > 0)) {
      throw ConfigError(fmt::format(
          "per-class fit: link class '{}' gets beta = 0 (its bandwidth is not constrained by the data: are all "
          "sizes crossing it latency-bound?)",
          c.name));
    }
    c.identified = true;
    c.link = LinkModel{alpha, 1.0 / beta, result.gamma_s_per_byte};
    if (alpha == 0) result.notes.push_back(fmt::format("link class '{}': alpha clamped at 0 (the unconstrained fit would be negative)", c.name));
  }
  if (!fit_gamma) {
    result.notes.push_back("gamma fixed at 0 (disabled)");
  } else if (!result.gamma_fitted) {
    result.notes.push_back(
        "gamma not identifiable from these rows (no reductions, or reduced bytes a combination of transferred bytes "
        "in every row); gamma fixed at 0 and absorbed into beta");
  } else if (result.gamma_s_per_byte == 0) {
    result.notes.push_back("gamma clamped at 0 (the unconstrained fit would be negative)");
  }
  for (const auto& row : rows) {
    const double predicted = linear_time_s(row.coefficients, result);
    result.predicted_s.push_back(predicted);
    result.rel_error.push_back(predicted / row.measured_s - 1.0);
  }
  result.stats = error_stats(result.rel_error);
  return result;
}

}  // namespace collsim
