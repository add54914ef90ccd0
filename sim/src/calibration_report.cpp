// How a calibration is shown: the text report of `collsim calibrate` and its measured-vs-predicted
// CSV. Apart from calibrate.cpp, which fits, so that the fit reads without the formatting.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collsim/models/units.hpp"
#include "collsim/sim/calibrate.hpp"

namespace collsim {
namespace {

std::string link_text(const FittedRegime& r) {
  return fmt::format("launch = {}{} (+{}{} per extra GPU a thread drives), alpha = {}{}, bandwidth = {:.1f} GB/s "
                     "(beta = {:.4g} ps/B), gamma = {:.4g} ps/B{}",
                     format_duration(r.launch_s), r.launch_fitted ? "" : " (not fitted)",
                     format_duration(r.launch_per_extra_gpu_s), r.launch_per_extra_gpu_fitted ? "" : " prior",
                     format_duration(r.link.latency_s), r.latency_fitted ? "" : " (prior)", r.link.bandwidth_Bps / 1e9,
                     1e12 / r.link.bandwidth_Bps, r.link.gamma_s_per_byte * 1e12, r.gamma_fitted ? "" : " (not fitted)");
}

std::string percent(double x) { return fmt::format("{:.1f}%", 100.0 * x); }

}  // namespace

std::string calibration_csv(const CalibrationReport& report) {
  std::string out =
      "source,line,collective,algorithm,n,size_bytes,measured_s,predicted_s,rel_error,predicted_single_s,"
      "rel_error_single,role,regime\n";
  for (const auto& p : report.points) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", p.source, p.line, collective_name(p.collective),
                       p.algorithm, p.n, p.size_bytes, p.measured_s, p.predicted_s, p.rel_error, p.predicted_single_s,
                       p.rel_error_single, p.fitted ? "fit" : "predict", p.regime);
  }
  return out;
}

std::string format_calibration_report(const CalibrationReport& report) {
  const auto& options = report.options;
  std::string out = fmt::format("collsim calibrate: schedule '{}', nccl-tests time '{}', {} regime(s)\n",
                                options.algorithm, log_time_name(options.time), report.regimes);
  out += "inputs:\n";
  for (const auto& in : report.inputs) {
    out += fmt::format("  {}: {} {} n={} rows={} skipped={} ({})\n", in.file, in.format, in.collective, in.n, in.rows,
                       in.skipped, in.how);
    for (const auto& w : in.warnings) out += fmt::format("    warning: {}\n", w);
  }
  out += fmt::format("topology '{}', link classes: {}\n", options.topology, fmt::join(report.link_classes, ", "));
  if (report.class_fit) {
    const auto& fit = *report.class_fit;
    out += fmt::format("per-class fit: gamma = {:.4g} ps/B{}\n", fit.gamma_s_per_byte * 1e12,
                       fit.gamma_fitted ? "" : " (not fitted)");
    for (const auto& c : fit.classes) {
      if (c.identified) {
        out += fmt::format("  {}: alpha = {}, bandwidth = {:.1f} GB/s (beta = {:.4g} ps/B), {} fitted rows cross it\n",
                           c.name, format_duration(c.link.latency_s), c.link.bandwidth_Bps / 1e9,
                           1e12 / c.link.bandwidth_Bps, c.rows);
      } else {
        out += fmt::format("  {}: not identified (no fitted measurement crosses it; no parameters written)\n", c.name);
      }
    }
  } else {
    const auto& single = report.single.regimes.front();
    out += fmt::format("single fit: {}\n", link_text(single));
  }
  if (report.regime_fit) {
    out += fmt::format("{}-regime fit (time = min over regimes):\n", report.regime_fit->regimes.size());
    for (std::size_t k = 0; k < report.regime_fit->regimes.size(); ++k) {
      const auto& r = report.regime_fit->regimes[k];
      out += fmt::format("  regime {} ({}): {} .. {}: {}\n", k, protocol_name(r.protocol), format_size(r.min_size_bytes),
                         format_size(r.max_size_bytes), link_text(r));
    }
  }
  const ErrorStats& single_stats = report.class_fit ? report.class_fit->stats : report.single.stats;
  out += fmt::format("fit: {} rows, median |rel error| {}, max {} (single fit: median {}, max {})\n",
                     report.fit_stats.count, percent(report.fit_stats.median_abs), percent(report.fit_stats.max_abs),
                     percent(single_stats.median_abs), percent(single_stats.max_abs));
  out += fmt::format("{:<40} {:<14} {:>3} {:>10} {:>12} {:>12} {:>8} {:>7}\n", "source", "collective", "n", "size",
                     "measured", "predicted", "rel.err", "role");
  for (const auto& p : report.points) {
    out += fmt::format("{:<40} {:<14} {:>3} {:>10} {:>12} {:>12} {:>8} {:>7}\n", p.source, collective_name(p.collective),
                       p.n, format_size(p.size_bytes), format_duration(p.measured_s), format_duration(p.predicted_s),
                       percent(p.rel_error), p.fitted ? "fit" : "predict");
  }
  out += "errors per input and size range (median / max |rel error|, signed mean):\n";
  for (const auto& s : report.sources) {
    out += fmt::format("  {} ({} n={}, {}): overall {} / {} (mean {:+.1f}%)\n", s.source, collective_name(s.collective),
                       s.n, s.fitted ? "fitted" : "cross-predicted", percent(s.overall.median_abs),
                       percent(s.overall.max_abs), 100.0 * s.overall.mean);
    for (const auto& r : s.ranges) {
      out += fmt::format("    {:<16} {:>3} rows: {} / {} (mean {:+.1f}%)\n", r.label, r.stats.count,
                         percent(r.stats.median_abs), percent(r.stats.max_abs), 100.0 * r.stats.mean);
    }
  }
  for (const auto& n : report.notes) out += fmt::format("note: {}\n", n);
  if (!report.model_path.empty()) out += fmt::format("model written to {}\n", report.model_path.string());
  if (!report.csv_path.empty()) out += fmt::format("measured vs predicted written to {}\n", report.csv_path.string());
  return out;
}

}  // namespace collsim
