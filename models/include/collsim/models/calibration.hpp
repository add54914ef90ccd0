// Fitting the alpha-beta(-gamma) link model to measured collective times.
//
// Every measurement is explained by a schedule (see sim/calibrate.hpp): on a contention-free
// topology its time is linear in the link parameters,
//     t = latency * alpha + bytes * beta + reduce_bytes * gamma,
// where the coefficients count the messages, bytes and reduced bytes on the critical path.
// This file knows nothing about schedules; it fits (alpha, beta, gamma) to (coefficients, time)
// pairs by weighted least squares on the RELATIVE error (weights 1/t, so that 8-byte rows are
// not drowned by 16-GiB rows) with the parameters constrained to be non-negative (exact NNLS
// by enumerating the active sets of the few unknowns). On topologies with several link classes
// (fit_link_classes) the same fit has one (alpha, beta) per class plus one gamma.
//
// The protocol-aware variant mirrors NCCL's tuner: K regimes (LL / LL128 / Simple), each with
// its own parameters, each fitted on a contiguous range of sizes, and a prediction is the
// minimum over the regimes. The ranges are chosen by exhaustive search over the breakpoints
// between distinct sizes (global for the contiguous-range objective; K <= 3 keeps it cheap).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "collsim/models/link_model.hpp"

namespace collsim {

/// NCCL's protocols, in the order of the sizes they win (LL small, LL128 middle, Simple large).
enum class Protocol { LL, LL128, Simple };

/// Critical-path counts that make a schedule's time linear in the link parameters.
struct CostCoefficients {
  double latency = 0;       ///< messages on the critical path (multiplies alpha, seconds)
  double bytes = 0;         ///< bytes serialised on the critical path (multiplies beta, s/B)
  double reduce_bytes = 0;  ///< bytes reduced on the critical path (multiplies gamma, s/B)
  /// Launches (kernels or NCCL groups) on the critical path, multiplies launch_s: 1 for a fused
  /// collective, one per round a rank takes part in for p2p_rounds (see ExecutionStyle).
  double launches = 0;
  /// Launches a host thread issues for the other GPUs it drives: launches * (GPUs per thread - 1)
  /// (nccl-tests `-g G` drives G GPUs from one thread, one after the other; 0 for one process
  /// per GPU). Multiplies launch_per_extra_gpu_s.
  double extra_gpu_launches = 0;
};

/// latency*alpha + bytes/bandwidth + reduce_bytes*gamma + launches*launch_s
/// + extra_gpu_launches*launch_per_extra_gpu_s, seconds.
double linear_time_s(const CostCoefficients& coefficients, const LinkModel& link, double launch_s = 0.0,
                     double launch_per_extra_gpu_s = 0.0);

/// Critical-path counts per link class (see topology.hpp: LinkClass), for topologies whose links
/// do not all share one (alpha, beta): t = sum_k latency[k] * alpha_k + bytes[k] * beta_k
/// + reduce_bytes * gamma. Both vectors have one entry per class.
struct ClassCostCoefficients {
  std::vector<double> latency;  ///< per class: alpha_k multiples on the critical path
  std::vector<double> bytes;    ///< per class: bytes serialised at the class's bandwidth
  double reduce_bytes = 0;      ///< bytes reduced on the critical path (multiplies gamma)
  double launches = 0;          ///< launches on the critical path (not fitted per class)

  /// The counts summed over classes: the single-class view (exact when there is one class).
  CostCoefficients total() const;
};

/// One measurement for the fit.
struct FitRow {
  CostCoefficients coefficients;
  double measured_s = 0;   ///< measured time, seconds (> 0)
  double size_bytes = 0;   ///< collective size, orders rows into regimes (> 0)
  /// The protocol the measurement ran with, when known (a log naming NCCL_PROTO): the row then
  /// belongs to that protocol's regime whatever its size, not to the minimum over regimes.
  std::optional<Protocol> protocol = std::nullopt;
};

/// Distinct sizes a fit of `regimes` regimes needs: 2 for one (alpha and beta), and
/// kMinSizesPerRegime per regime for more, so that no regime is interpolated through two points.
inline constexpr std::size_t kMinSizesPerRegime = 4;
constexpr std::size_t min_distinct_sizes(std::uint32_t regimes) { return regimes == 1 ? 2 : kMinSizesPerRegime * regimes; }

struct FitOptions {
  std::uint32_t regimes = 1;  ///< 1..3
  bool fit_gamma = true;      ///< fit gamma when the data identify it; otherwise gamma = 0
  /// Fit a launch overhead (the `launches` coefficient) when some row has launches. When the rows
  /// of a regime cannot separate it from the per-hop alpha (every row has the same hops per
  /// launch, e.g. one collective at one n), alpha is fixed at the regime's protocol prior
  /// (per_hop_prior()) and only the launch is fitted.
  bool fit_launch = true;
};

/// "LL", "LL128", "Simple".
const char* protocol_name(Protocol protocol);

/// The protocol regime k of a K-regime fit stands for: K = 3 gives LL, LL128, Simple; K = 2 LL and
/// Simple; K = 1 LL (the protocol of the latency-bound sizes, where the per-hop alpha matters).
Protocol protocol_of_regime(std::uint32_t k, std::uint32_t regimes);

/// A documented prior for one term the data may not identify.
struct TermPrior {
  double value = 0;
  const char* source = "";  ///< where the number comes from
};

/// NCCL's per-hop latency of a ring step over NVLink for `protocol` (src/graph/tuning.cc, hwLat
/// NVLINK/Ring: LL 0.6 us, LL128 1.9 us, Simple 3.4 us), seconds.
TermPrior per_hop_prior(Protocol protocol);

/// The launch a thread adds for each further GPU it drives, when the data hold one way of driving
/// the GPUs only (every log ran with the same nccl-tests -g): see calibration.cpp for its source.
TermPrior launch_per_extra_gpu_prior();

/// The parameters of one regime and the size range it was fitted on.
struct FittedRegime {
  LinkModel link;
  double min_size_bytes = 0;  ///< smallest size fitted by this regime
  double max_size_bytes = 0;  ///< largest size fitted by this regime
  std::size_t rows = 0;       ///< rows fitted by this regime
  bool gamma_fitted = false;  ///< false: gamma was fixed at 0 (not identifiable or disabled)
  double launch_s = 0;        ///< launch overhead of one kernel / NCCL group, seconds
  bool launch_fitted = false; ///< false: no row had launches (or disabled); launch_s = 0
  /// Launch added per further GPU one thread drives (see CostCoefficients::extra_gpu_launches);
  /// launch_s is the launch of a thread driving one GPU.
  double launch_per_extra_gpu_s = 0;
  /// False: the rows hold one way of driving the GPUs, so the term is the prior (or 0 without a
  /// launch).
  bool launch_per_extra_gpu_fitted = false;
  /// False: the rows could not separate alpha from the launch and alpha is the protocol prior.
  bool latency_fitted = true;
  Protocol protocol = Protocol::LL;  ///< the NCCL protocol this regime stands for
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

/// Time predicted by the regime model: the minimum of linear_time_s over `regimes` (non-empty),
/// or the time under the regime of `protocol` when given and fitted.
double predict_time_s(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes,
                      std::optional<Protocol> protocol = std::nullopt);

/// Index of the regime giving predict_time_s (the first on ties; `protocol`'s regime when given
/// and fitted).
std::uint32_t best_regime(const CostCoefficients& coefficients, std::span<const FittedRegime> regimes,
                          std::optional<Protocol> protocol = std::nullopt);

/// Error statistics of signed relative errors; all zero for an empty span.
ErrorStats error_stats(std::span<const double> rel_errors);

/// One measurement for the per-class fit.
struct ClassFitRow {
  ClassCostCoefficients coefficients;
  double measured_s = 0;   ///< measured time, seconds (> 0)
  double size_bytes = 0;   ///< collective size (> 0)
};

/// The fitted parameters of one link class.
struct LinkClassFit {
  std::string name;
  /// True when the data determine both alpha and beta of this class: some fitted row's critical
  /// path crosses it, and its beta is positive. False: `link` holds no fitted value (0, 0).
  bool identified = false;
  LinkModel link;          ///< alpha and bandwidth of the class; gamma is the shared gamma
  std::size_t rows = 0;    ///< fitted rows whose critical path uses the class
};

struct ClassFitResult {
  std::vector<LinkClassFit> classes;   ///< one per class name, in the given order
  double gamma_s_per_byte = 0;
  bool gamma_fitted = false;           ///< false: gamma was fixed at 0 (not identifiable or disabled)
  std::vector<double> predicted_s;     ///< per input row
  std::vector<double> rel_error;       ///< per input row, (predicted - measured) / measured
  ErrorStats stats;
  std::vector<std::string> notes;      ///< e.g. which classes the data do not identify, and why
};

/// sum_k latency[k] * alpha_k + bytes[k] / bandwidth_k + reduce_bytes * gamma, seconds. Classes
/// that are not identified must have zero coefficients (InternalError otherwise, via assert).
double linear_time_s(const ClassCostCoefficients& coefficients, const ClassFitResult& fit);

/// Most link classes fit_link_classes() accepts (2 unknowns each, exact NNLS over subsets).
inline constexpr std::size_t kMaxLinkClasses = 4;

/// Fits (alpha_k, beta_k) for every class the data identify, plus gamma, by the non-negative
/// weighted least squares on relative error of fit_link_model() (one regime). A class that no
/// fitted row's critical path crosses is reported as not identified (no made-up value), with a
/// note. Throws ConfigError when: class_names is empty, longer than kMaxLinkClasses or a row's
/// vectors do not have one entry per class; a row has a non-positive or non-finite time or size
/// or negative coefficients; the rows have fewer than 2 distinct sizes; the classes' columns are
/// linearly dependent (the data cannot separate them, e.g. every row crosses two classes in the
/// same proportion); or no class gets a positive beta.
ClassFitResult fit_link_classes(std::span<const ClassFitRow> rows, std::span<const std::string> class_names,
                                bool fit_gamma);

/// Fits the link model. Throws ConfigError when: options.regimes is not 1..3; a row has a
/// non-positive or non-finite time or size or negative coefficients; the rows have fewer
/// distinct sizes than 2 (one regime) or 4 per regime (several regimes); or no fit gives a
/// positive beta (the data constrain no bandwidth, e.g. every size is latency-bound).
FitResult fit_link_model(std::span<const FitRow> rows, const FitOptions& options);

}  // namespace collsim
