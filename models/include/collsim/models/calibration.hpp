// Fitting the alpha-beta(-gamma) link model to measured collective times.
//
// Every measurement is explained by a schedule (see sim/calibrate.hpp): on a contention-free
// topology its time is linear in the link parameters,
//     t = latency * alpha + bytes * beta + reduce_bytes * gamma,
// where the coefficients count the messages, bytes and reduced bytes on the critical path.
// This file knows nothing about schedules; it fits (alpha, beta, gamma) to (coefficients, time)
// pairs by weighted least squares on the RELATIVE error (weights 1/t, so that 8-byte rows are
// not drowned by 16-GiB rows) with the parameters constrained to be non-negative (exact NNLS
// by enumerating the active sets of the at most three unknowns).
//
// The protocol-aware variant mirrors NCCL's tuner: K regimes (LL / LL128 / Simple), each with
// its own parameters, each fitted on a contiguous range of sizes, and a prediction is the
// minimum over the regimes. The ranges are chosen by exhaustive search over the breakpoints
// between distinct sizes (global for the contiguous-range objective; K <= 3 keeps it cheap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collsim/models/link_model.hpp"

namespace collsim {

/// Critical-path counts that make a schedule's time linear in the link parameters.
struct CostCoefficients {
  double latency = 0;       ///< messages on the critical path (multiplies alpha, seconds)
  double bytes = 0;         ///< bytes serialised on the critical path (multiplies beta, s/B)
  double reduce_bytes = 0;  ///< bytes reduced on the critical path (multiplies gamma, s/B)
};

/// latency*alpha + bytes/bandwidth + reduce_bytes*gamma, seconds.
double linear_time_s(const CostCoefficients& coefficients, const LinkModel& link);

/// One measurement for the fit.
struct FitRow {
  CostCoefficients coefficients;
  double measured_s = 0;   ///< measured time, seconds (> 0)
  double size_bytes = 0;   ///< collective size, orders rows into regimes (> 0)
};

struct FitOptions {
  std::uint32_t regimes = 1;  ///< 1..3
  bool fit_gamma = true;      ///< fit gamma when the data identify it; otherwise gamma = 0
};

/// The parameters of one regime and the size range it was fitted on.
struct FittedRegime {
  LinkModel link;
  double min_size_bytes = 0;  ///< smallest size fitted by this regime
  double max_size_bytes = 0;  ///< largest size fitted by this regime
  std::size_t rows = 0;       ///< rows fitted by this regime
  bool gamma_fitted = false;  ///< false: gamma was fixed at 0 (not identifiable or disabled)
};

/// Summary of relative errors (pred - meas) / meas.
struct ErrorStats {
  std::size_t count = 0;
  double median_abs = 0;  ///< median of |relative error|
  double max_abs = 0;     ///< max of |relative error|
  double mean = 0;        ///< mean signed relative error (> 0: the model is too slow)
};

struct FitResult {
  std::vector<FittedRegime> regimes;     ///< ordered by size; size == options.regimes
  std::vector<double> predicted_s;       ///< per input row, min over regimes
  std::vector<double> rel_error;         ///< per input row, (predicted - measured) / measured
  std::vector<std::uint32_t> regime_of_row;  ///< per input row, the regime giving the minimum
  ErrorStats stats;
  std::vector<std::string> notes;        ///< e.g. why gamma was not fitted
};

/// Time predicted by the regime model: the minimum of linear_time_s over `regimes` (non-empty).
double predict_time_s(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes);

/// Index of the regime giving predict_time_s (the first on ties).
std::uint32_t best_regime(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes);

/// Error statistics of signed relative errors; all zero for an empty span.
ErrorStats error_stats(std::span<const double> rel_errors);

/// Fits the link model. Throws ConfigError when: options.regimes is not 1..3; a row has a
/// non-positive or non-finite time or size or negative coefficients; the rows have fewer
/// distinct sizes than 2 (one regime) or 4 per regime (several regimes); or no fit gives a
/// positive beta (the data constrain no bandwidth, e.g. every size is latency-bound).
FitResult fit_link_model(std::span<const FitRow> rows, const FitOptions& options);

}  // namespace collsim
