// `collsim arrivals FILE`: summarise an arrival trace (spread, gap, late ranks, persistence of the
// late rank), optionally fit an arrival model to it and plot the empirical CDF of the delays.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "collsim/experiments/args.hpp"
#include "collsim/experiments/arrival_trace_cli.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/experiments/output_path.hpp"
#include "collsim/experiments/plot_script.hpp"
#include "collsim/models/formats/arrival_trace.hpp"
#include "collsim/models/arrival_trace_stats.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "collsim/models/formats/atomic_file.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/json.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

std::string json_counts(const std::vector<std::size_t>& counts) {
  std::string s = "[";
  for (std::size_t i = 0; i < counts.size(); ++i) s += fmt::format("{}{}", i ? "," : "", counts[i]);
  return s + "]";
}

std::string json_percentiles(const Percentiles& p) {
  return fmt::format("{{\"p50_s\":{},\"p90_s\":{},\"p99_s\":{},\"max_s\":{}}}", json_number(p.p50_s),
                     json_number(p.p90_s), json_number(p.p99_s), json_number(p.max_s));
}

std::string text_percentiles(const Percentiles& p) {
  return fmt::format("p50 {}  p90 {}  p99 {}  max {}", format_duration(p.p50_s), format_duration(p.p90_s),
                     format_duration(p.p99_s), format_duration(p.max_s));
}

// "rank: count" for the ranks with a non-zero count, most frequent first (at most `limit`).
std::string text_counts(const std::vector<std::size_t>& counts, std::size_t limit = 8) {
  std::vector<std::size_t> order;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > 0) order.push_back(r);
  }
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return counts[a] > counts[b]; });
  std::string s;
  for (std::size_t i = 0; i < order.size() && i < limit; ++i) {
    s += fmt::format("{}rank {}: {}", i ? ", " : "", order[i], counts[order[i]]);
  }
  if (order.size() > limit) s += fmt::format(", ... ({} ranks)", order.size());
  return s.empty() ? "none" : s;
}

std::string summary_json(const ArrivalTrace& trace, const ArrivalTraceSummary& s) {
  return fmt::format(
      "{{\"file\":{},\"n\":{},\"iterations\":{},\"spread\":{},\"gap\":{},"
      "\"late_rule\":{{\"mad_k\":{},\"floor_s\":{}}},\"late_histogram\":{},\"mean_late_ranks\":{},"
      "\"late_by_rank\":{},\"last_by_rank\":{},\"persistence\":{},\"chance_uniform\":{},\"chance_empirical\":{}}}\n",
      json_string(trace.source), s.n, s.iterations, json_percentiles(s.spread), json_percentiles(s.gap),
      json_number(s.rule.mad_k), json_number(s.rule.floor_s), json_counts(s.late_histogram),
      json_number(s.mean_late_ranks), json_counts(s.late_by_rank), json_counts(s.last_by_rank),
      json_number(s.persistence), json_number(s.chance_uniform), json_number(s.chance_empirical));
}

std::string summary_text(const ArrivalTrace& trace, const ArrivalTraceSummary& s) {
  std::string out = fmt::format("arrival trace {}: {} iteration{} of {} ranks\n", trace.source, s.iterations,
                                s.iterations == 1 ? "" : "s", s.n);
  out += fmt::format("  spread (last - first arrival):       {}\n", text_percentiles(s.spread));
  out += fmt::format("  gap (last - second-to-last arrival): {}\n", text_percentiles(s.gap));
  out += fmt::format("  late ranks (delay - median > max({:g} x 1.4826 x MAD, {})): {:.2f} per iteration\n",
                     s.rule.mad_k, format_duration(s.rule.floor_s), s.mean_late_ranks);
  std::string histogram;
  for (std::size_t k = 0; k < s.late_histogram.size(); ++k) {
    if (s.late_histogram[k] > 0) histogram += fmt::format("{}{} late: {}", histogram.empty() ? "" : ", ", k, s.late_histogram[k]);
  }
  out += fmt::format("    iterations with {}\n", histogram);
  out += fmt::format("    late most often:  {}\n", text_counts(s.late_by_rank));
  out += fmt::format("  last rank most often: {}\n", text_counts(s.last_by_rank));
  if (std::isnan(s.persistence)) {
    out += "  persistence of the last rank: undefined (no two consecutive iterations with a late rank)\n";
  } else {
    out += fmt::format(
        "  persistence of the last rank: {:.3f} of {} consecutive pairs keep it (chance: {:.3f} if uniform, {:.3f} "
        "from the last-rank frequencies)\n",
        s.persistence, s.persistence_pairs, s.chance_uniform, s.chance_empirical);
  }
  return out;
}

void write_fit(const ArrivalTrace& trace, const LateRule& rule, const std::string& path, std::ostream& out) {
  const ArrivalSpec fit = fit_arrival_model(trace, rule);
  YAML::Emitter yaml;
  yaml << arrival_to_yaml(fit);
  const std::string text = fmt::format(
      "# Arrival model fitted by `collsim arrivals` to {} ({} iterations of {} ranks): the {} rank(s) most\n"
      "# often late, their delay resampled from the {} largest delay(s) of every iteration, the other delays as\n"
      "# jitter, and the observed persistence of the last rank (markov). Use it as the `arrival:` value of a\n"
      "# spec, or with collsim advise --arrival \"$(cat {})\".\n{}\n",
      trace.source, trace.size(), trace.n, fit.stragglers.size(), fit.stragglers.size(),
      std::filesystem::path(path).filename().string(), yaml.c_str());
  write_file_atomically(path, text);
  out << fmt::format("wrote {}: {}\n", path, fit.describe());
}

// The delays as CSV for plots/arrivals_cdf.py: one row per rank per iteration, with whether the
// rank was late (the rule above) and whether it was last.
std::string delays_csv(const ArrivalTrace& trace, const LateRule& rule) {
  std::string csv = "iteration,rank,delay_s,late,last\n";
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const auto late = late_ranks(trace.delay_s[i], rule);
    const std::uint32_t last = trace.last_rank(i);
    for (std::uint32_t r = 0; r < trace.n; ++r) {
      const bool is_late = std::find(late.begin(), late.end(), r) != late.end();
      csv += fmt::format("{},{},{},{},{}\n", trace.iterations[i], r, json_number(trace.delay_s[i][r]), is_late ? 1 : 0,
                         r == last ? 1 : 0);
    }
  }
  return csv;
}

// OUT.png -> OUT_delays.csv, then plots/arrivals_cdf.py writes OUT.png and OUT.svg. The summary is
// complete without the figure, so a missing interpreter or matplotlib costs one line; a script
// that fails is a warning and exit code 3, as in `run` and `calibrate` (README, "Exit codes").
// Returns the exit code.
int plot_delays(const ArrivalTrace& trace, const LateRule& rule, const std::filesystem::path& png, std::ostream& out) {
  const std::filesystem::path dir = png.parent_path().empty() ? std::filesystem::path(".") : png.parent_path();
  const std::filesystem::path csv = dir / (png.stem().string() + "_delays.csv");
  write_file_atomically(csv.string(), delays_csv(trace, rule));
  out << fmt::format("wrote {}\n", csv.string());
  const std::optional<std::filesystem::path> script = available_plot_script("arrivals_cdf.py", out);
  if (!script) return 0;
  out.flush();
  std::string error;
  PlotOutput output;
  output.error_log = (dir / (png.stem().string() + ".plot.log")).string();
  const std::vector<std::string> args{csv.string(), "--out", dir.string(), "--stem", png.stem().string()};
  if (run_plot_script_logged(script->string(), args, output, error) == 0) return 0;
  std::cerr << fmt::format("collsim: warning: plot script {} failed ({}); the summary and {} are complete\n",
                           script->filename().string(), error, csv.string());
  return kExitPlotFailed;
}

}  // namespace

int arrivals_command(const Args& args, std::ostream& out) {
  ArgParser parser("arrivals",
                   "Summarise an arrival trace (CSV iteration,rank,arrival_s or NCCL Inspector verbose JSON): spread "
                   "and gap percentiles, late ranks, persistence of the last rank against chance.");
  parser.positional("FILE", "the trace")
      .option("n", "-n", "N", "check that the group has N ranks")
      .option("late-k", "", "K", "late rule: cut in robust standard deviations (1.4826 x MAD)", "3")
      .option("late-floor", "", "TIME", "late rule: minimum lateness", "100us")
      .option("fit", "", "OUT.yaml", "write an arrival model (stragglers, delay, jitter, persistence) fitted to the trace")
      .option("plot", "", "OUT.png", "plot the empirical CDF of the delays (OUT.png, OUT.svg, OUT_delays.csv)")
      .flag("json", "print one JSON object instead of the text summary");
  add_trace_reading_options(parser);
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  if (parser.positionals().size() != 1) {
    throw ConfigError(fmt::format("arrivals: expected one trace FILE, got {}", parser.positionals().size()));
  }
  std::optional<std::uint32_t> n;
  if (auto text = parser.get_optional("n")) n = parse_u32(*text, "-n");
  LateRule rule;
  const std::string k_text = parser.get("late-k");
  try {
    std::size_t used = 0;
    rule.mad_k = std::stod(k_text, &used);
    if (used != k_text.size()) throw std::invalid_argument(k_text);
  } catch (const std::exception&) {
    throw ConfigError(fmt::format("arrivals: --late-k '{}' is not a number", k_text));
  }
  rule.floor_s = parse_duration_s(parser.get("late-floor"), "--late-floor");
  try {
    rule.validate();
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("arrivals: --late-k/--late-floor: {}", e.what()));
  }

  // Outputs that would replace the trace or each other are refused before anything is written
  // (--fit T.csv replaced the trace T.csv; --plot T.png writes T_delays.csv).
  const std::filesystem::path input = parser.positionals().front();
  const auto fit_path = parser.get_optional("fit");
  if (fit_path) {
    output_file_option(*fit_path, "arrivals", "--fit");
    check_not_same_file(*fit_path, "arrivals", "--fit", input, "the input trace");
  }
  if (auto png = parser.get_optional("plot")) {
    output_file_option(*png, "arrivals", "--plot");
    const std::filesystem::path dir = std::filesystem::path(*png).parent_path();
    const std::string stem = std::filesystem::path(*png).stem().string();
    for (const std::string& name : {stem + ".png", stem + ".svg", stem + "_delays.csv", stem + ".plot.log"}) {
      const std::string what = fmt::format("--plot (writes {})", name);
      check_output_file(dir / name, "arrivals", what);  // a pipe at p_delays.csv
      check_not_same_file(dir / name, "arrivals", what, input, "the input trace");
      if (fit_path) check_not_same_file(dir / name, "arrivals", what, *fit_path, "the --fit file");
    }
  }

  const ArrivalTrace trace =
      read_arrival_trace(parser.positionals().front(), n, trace_options_from_flags(parser, "arrivals", ""));
  print_trace_warnings(trace, std::cerr);
  const ArrivalTraceSummary summary = summarize_arrival_trace(trace, rule);
  out << (parser.flag_set("json") ? summary_json(trace, summary) : summary_text(trace, summary));
  if (auto path = parser.get_optional("fit")) write_fit(trace, rule, *path, out);
  if (auto path = parser.get_optional("plot")) return plot_delays(trace, rule, *path, out);
  return 0;
}

}  // namespace collsim
