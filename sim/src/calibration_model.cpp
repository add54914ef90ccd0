// The model file a calibration writes: its link parameters, regimes, execution defaults, where
// each term came from (fitted or a prior, and why) and the rows it was fitted on.
#include "calibration_model.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"

namespace collsim {
namespace {

std::string regime_protocols(std::uint32_t regimes) {
  std::vector<std::string> names;
  for (std::uint32_t k = 0; k < regimes; ++k) names.emplace_back(protocol_name(protocol_of_regime(k, regimes)));
  return fmt::format("{}", fmt::join(names, ", "));
}

// Execution defaults and the origin of every term: a fused NCCL collective pays one launch, and
// a term the data could not separate carries the prior it came from.
void add_terms(const CalibrationReport& report, ModelFile& model) {
  const std::vector<FittedRegime>& regimes = report.regime_fit ? report.regime_fit->regimes : report.single.regimes;
  const FittedRegime& first = regimes.front();
  if (first.launch_fitted) {
    model.has_execution = true;
    model.execution = ExecutionCosts{ExecutionStyle::Fused, report.single.regimes.front().launch_s};
    model.terms.push_back({"launch_s", "fitted", ""});
    if (first.launch_per_extra_gpu_fitted) {
      model.terms.push_back({"launch_per_extra_gpu_s", "fitted", ""});
    } else {
      model.terms.push_back({"launch_per_extra_gpu_s", "prior",
                             fmt::format("no measurement here was made with its GPUs driven two ways (nccl-tests -g); {}",
                                         launch_per_extra_gpu_prior().source)});
    }
  }
  std::vector<std::string> priors;
  for (const auto& r : regimes) {
    if (!r.latency_fitted) priors.push_back(fmt::format("{}: {}", protocol_name(r.protocol), per_hop_prior(r.protocol).source));
  }
  if (priors.empty()) {
    model.terms.push_back({"latency_s", "fitted", ""});
  } else {
    model.terms.push_back({"latency_s", priors.size() == regimes.size() ? "prior" : "fitted",
                           fmt::format("per-hop alpha not separable from the launch (same hops per launch in every "
                                       "row); prior for {}",
                                       fmt::join(priors, "; "))});
  }
  model.terms.push_back({"bandwidth_Bps", "fitted", ""});
  const bool gamma_fitted = std::any_of(regimes.begin(), regimes.end(), [](const FittedRegime& r) { return r.gamma_fitted; });
  if (gamma_fitted) {
    model.terms.push_back({"gamma_s_per_byte", "fitted", ""});
  } else {
    model.terms.push_back({"gamma_s_per_byte", "prior",
                           report.options.fit_gamma
                               ? "0: not identifiable from these data (reduced bytes proportional to transferred bytes)"
                               : "0: not fitted (--no-gamma)"});
  }
}

}  // namespace

namespace detail {

ModelFile build_model(const CalibrationReport& report, const std::string& name) {
  const auto& options = report.options;
  ModelFile model;
  model.name = name;
  if (report.class_fit) {
    const auto& fit = *report.class_fit;
    for (const auto& c : fit.classes) {
      if (c.identified) {
        model.link_classes.push_back({c.name, c.link.latency_s, c.link.bandwidth_Bps, 0});
      } else {
        model.unidentified_classes.push_back(c.name);
      }
    }
    model.link = LinkModel{model.link_classes.front().latency_s, model.link_classes.front().bandwidth_Bps,
                           fit.gamma_s_per_byte};
  } else {
    model.link = report.single.regimes.front().link;
  }
  if (report.regime_fit) model.regimes = report.regime_fit->regimes;
  if (!report.class_fit) add_terms(report, model);
  model.provenance.tool = "collsim calibrate";
  model.provenance.command = options.command;
  model.provenance.algorithm = options.algorithm;
  if (!options.topology.empty() && options.topology != "nvswitch") model.provenance.topology = options.topology;
  model.provenance.method = fmt::format(
      "times explained through the {}'s critical path (contention-free){}; non-negative weighted least "
      "squares on relative error (weights 1/t){}{}",
      find_algorithm(options.algorithm).chosen_per_run
          ? fmt::format("schedule NCCL would run for each row ({}, a fixed point of the fit)", options.algorithm)
          : fmt::format("{} schedule", options.algorithm),
      report.class_fit ? fmt::format(" on topology {}, alpha and beta per link class ({})", options.topology,
                                     fmt::join(report.link_classes, ", "))
                       : std::string(),
      options.fit_gamma ? "" : "; gamma fixed at 0 (not fitted)",
      report.regimes > 1
          ? fmt::format("; {} protocol regimes ({}) on contiguous size ranges (exhaustive breakpoint search), time = "
                        "min over regimes",
                        report.regimes, regime_protocols(report.regimes))
          : std::string());
  model.provenance.time_column = log_time_name(options.time);
  std::vector<Collective> fitted;
  for (const auto& p : report.points) {
    if (p.fitted && std::find(fitted.begin(), fitted.end(), p.collective) == fitted.end()) fitted.push_back(p.collective);
  }
  for (const auto c : fitted) model.provenance.fit_on.emplace_back(collective_name(c));
  for (const auto& input : report.inputs) {
    model.provenance.sources.push_back(
        {input.file, input.format, input.collective, input.n, input.rows, input.fnv1a64});
  }
  model.median_abs_rel_error = report.fit_stats.median_abs;
  model.max_abs_rel_error = report.fit_stats.max_abs;
  for (const auto& p : report.points) {
    model.fit_rows.push_back({p.source, collective_name(p.collective), p.algorithm, p.n, p.size_bytes, p.measured_s,
                              p.predicted_s, p.rel_error, p.fitted ? "fit" : "predict", p.regime});
  }
  return model;
}

}  // namespace detail
}  // namespace collsim
