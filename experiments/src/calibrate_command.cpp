// `collsim calibrate`: fit the link model to nccl-tests logs or collsim-cuda measurements.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <ostream>

#include "collsim/experiments/args.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/experiments/output_path.hpp"
#include "collsim/experiments/plot_script.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/atomic_file.hpp"
#include "collsim/models/formats/nccl_log.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/sim/calibrate.hpp"

namespace collsim {
namespace {

std::vector<Collective> parse_collectives(const std::string& text, std::string_view what) {
  std::vector<Collective> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    out.push_back(parse_collective(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start), what));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The files the fit's plot writes: <model stem>_fit.png/.svg next to the model, or <CSV
// stem>.png/.svg next to the CSV when there is no model, and the script's error log
// <CSV stem>.plot.log. Worked out once, for the check before the fit and for the plot.
struct FitPlotFiles {
  std::filesystem::path dir;
  std::string stem;
  std::filesystem::path error_log;
  std::vector<std::filesystem::path> all() const { return {dir / (stem + ".png"), dir / (stem + ".svg"), error_log}; }
};

FitPlotFiles fit_plot_files(const std::filesystem::path& csv, const std::filesystem::path& model) {
  const std::filesystem::path dir = (model.empty() ? csv : model).parent_path();
  return {dir.empty() ? std::filesystem::path(".") : dir,
          model.empty() ? csv.stem().string() : model.stem().string() + "_fit",
          std::filesystem::path(csv).replace_extension(".plot.log")};
}

// Measured vs predicted from the CSV just written (fit_plot_files). The model and CSV are
// complete without it, so a missing interpreter or matplotlib costs one note; a script that
// fails is a warning and exit code 3, as in `collsim run` (README, "Exit codes"). Returns the
// exit code.
int plot_fit(const CalibrationReport& report, std::ostream& out) {
  if (report.csv_path.empty()) return 0;
  const std::optional<std::filesystem::path> script = available_plot_script("calibration_fit.py", out);
  if (!script) return 0;
  const FitPlotFiles files = fit_plot_files(report.csv_path, report.model_path);
  const std::vector<std::string> args{report.csv_path.string(), "--out", files.dir.string(), "--stem", files.stem};
  out.flush();
  std::string error;
  PlotOutput output;
  output.error_log = files.error_log.string();
  const int rc = run_plot_script_logged(script->string(), args, output, error);
  if (rc == 0) return 0;
  std::cerr << fmt::format("collsim: warning: plot script {} failed ({}); the model and {} are complete\n",
                           script->filename().string(), error, report.csv_path.string());
  return kExitPlotFailed;
}

// The same file twice would count its measurements twice in the fit: refuse it rather than
// guess which copy was meant. Paths are compared resolved (symlinks, ../) and as files (device
// and inode), since a hard link resolves to a different path.
void reject_duplicate_inputs(const std::vector<std::filesystem::path>& files) {
  std::vector<std::filesystem::path> seen;
  for (const auto& f : files) {
    std::error_code ec;
    std::filesystem::path key = std::filesystem::weakly_canonical(f, ec);
    if (ec) key = std::filesystem::absolute(f).lexically_normal();
    for (std::size_t i = 0; i < seen.size(); ++i) {
      std::error_code same_ec;
      const bool same_file = std::filesystem::equivalent(f, files[i], same_ec) && !same_ec;
      if (seen[i] == key || same_file) {
        throw ConfigError(fmt::format("calibrate: input '{}' is given twice (also as '{}'); each file counts once",
                                      quote_excerpt(f.string(), 200), quote_excerpt(files[i].string(), 200)));
      }
    }
    seen.push_back(key);
  }
}

}  // namespace

int calibrate_command(const Args& args, std::ostream& out) {
  ArgParser parser("calibrate",
                   "Fit alpha, beta (and gamma) to nccl-tests logs or collsim-cuda CSVs, through a schedule, "
                   "and cross-predict the collectives not fitted.");
  parser
      .positional("FILE...", "nccl-tests logs (all_reduce, reduce_scatter, all_gather, sendrecv) or collsim-cuda CSVs")
      .option("out", "-o", "MODEL.yaml", "model file to write (plus MODEL_fit.csv beside it)")
      .option("csv", "", "FILE", "measured-vs-predicted CSV (default: <MODEL>_fit.csv)")
      .option("algo", "", "NAME",
              "schedule that explains the logs; nccl: what NCCL would run under the model being fitted (a fixed point)",
              "ring")
      .option("topology", "", "NAME|FILE",
              "topology the schedules run on; alpha and beta are fitted per link class (cluster: nvlink, network)",
              "nvswitch")
      .option("regimes", "", "K",
              "1..3 protocol regimes (LL, LL128, Simple), time = min over them; auto = as many as the sizes support "
              "and the protocols the logs name (NCCL_PROTO) fill",
              "auto")
      .flag("no-gamma", "keep gamma at 0 instead of fitting it")
      .flag("no-launch", "charge alpha per hop only (no launch overhead per kernel or NCCL group)")
      .option("time", "", "min|out_of_place|in_place", "which nccl-tests time column to use", "min")
      .option("fit-on", "", "C[,C...]", "collectives to fit (default: every input)")
      .option("predict", "", "C[,C...]", "collectives to cross-predict (default: every input not fitted)")
      .option("hold-out", "", "FILE[,FILE...]",
              "inputs (file names or paths) to predict, never fit (leave-one-out checks)")
      .option("collective", "", "C", "override the collective of every nccl-tests log")
      .option("nranks", "", "N", "override the rank count of every nccl-tests log")
      .option("max-schedule-memory", "", "SIZE",
              "refuse a measured n whose schedule is estimated to need more memory (at most this machine's memory)",
              "4GiB")
      .option("name", "", "NAME", "model name (default: the stem of --out)")
      .flag("no-plot",
            "do not plot measured vs predicted (default: <MODEL>_fit.png/.svg with plots/calibration_fit.py)");
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  CalibrationOptions options;
  options.algorithm = parser.get("algo");
  options.topology = parser.get("topology");
  if (parser.get("regimes") != "auto") {
    const auto regimes = parse_unsigned(parser.get("regimes"), "--regimes");
    if (regimes < 1 || regimes > 3) {
      throw ConfigError(fmt::format("calibrate: --regimes {} is not in 1..3 (or auto)", regimes));
    }
    options.regimes = static_cast<std::uint32_t>(regimes);
  }
  options.fit_gamma = !parser.flag_set("no-gamma");
  options.fit_launch = !parser.flag_set("no-launch");
  // The help said min|oop|ip while only the column names were read, so its own spelling failed.
  try {
    options.time = parse_log_time(parser.get("time"));
  } catch (const ConfigError&) {
    throw ConfigError(fmt::format("calibrate: --time '{}' is not one of min, out_of_place, in_place",
                                  quote_excerpt(parser.get("time"))));
  }
  if (auto v = parser.get_optional("fit-on")) options.fit_on = parse_collectives(*v, "--fit-on");
  if (auto v = parser.get_optional("predict")) options.predict = parse_collectives(*v, "--predict");
  if (auto v = parser.get_optional("hold-out")) {
    std::size_t start = 0;
    while (start <= v->size()) {
      const auto comma = v->find(',', start);
      options.hold_out.push_back(v->substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (auto v = parser.get_optional("collective")) options.collective = parse_collective(*v, "--collective");
  if (auto v = parser.get_optional("nranks")) options.nranks = parse_u32(*v, "--nranks");
  if (auto v = parser.get_optional("name")) options.name = *v;
  if (auto v = parser.get_optional("out")) options.out_model = output_file_option(*v, "calibrate", "--out");
  if (auto v = parser.get_optional("csv")) options.out_csv = output_file_option(*v, "calibrate", "--csv");
  // Checked before the fit writes anything: the model was written and then the CSV failed
  // ("cannot rename ... Is a directory"), the CSV replaced the model given the same name, and
  // an output named like an input log replaced the measurements.
  std::filesystem::path csv = options.out_csv;
  if (csv.empty() && !options.out_model.empty()) {
    csv = options.out_model.parent_path() / (options.out_model.stem().string() + "_fit.csv");
    check_output_file(csv, "calibrate", "--csv (default: <MODEL>_fit.csv beside --out)");
  }
  const std::string csv_option = options.out_csv.empty() ? "--csv (default: <MODEL>_fit.csv beside --out)" : "--csv";
  if (!csv.empty() && !options.out_model.empty()) {
    check_not_same_file(csv, "calibrate", csv_option, options.out_model, "the --out model file");
  }
  // A pipe or a device under an output's name is refused before the fit, not after it; the
  // plot's files too (matplotlib opening a pipe for the SVG waited for a reader for ever).
  if (!options.out_model.empty()) writable_destination(options.out_model);
  if (!csv.empty()) writable_destination(csv);
  if (!csv.empty() && !parser.flag_set("no-plot")) {
    for (const std::filesystem::path& file : fit_plot_files(csv, options.out_model).all()) {
      check_output_file(file, "calibrate",
                        fmt::format("the plot (writes {}; --no-plot skips it)", file.filename().string()));
    }
  }
  for (const auto& input : parser.positionals()) {
    if (!options.out_model.empty()) check_not_same_file(options.out_model, "calibrate", "--out", input, "the input");
    if (!csv.empty()) check_not_same_file(csv, "calibrate", csv_option, input, "the input");
  }
  // A schedule per measured n is built for the fit: one that would not fit in memory is refused
  // up front, as simulate refuses it (the default 4 GiB of --max-schedule-memory).
  const double limit_bytes =
      memory_limit_option_bytes(parser.get("max-schedule-memory"), parser.flag_set("max-schedule-memory"));
  const std::string limit_text = parser.get("max-schedule-memory");
  options.check_schedule_size = [limit_bytes, limit_text](const std::string& algorithm, std::uint32_t n,
                                                          std::uint32_t gpus_per_node, const std::string& where) {
    AlgorithmOptions sizing;
    sizing.n = n;
    sizing.gpus_per_node = gpus_per_node;
    const std::optional<double> transfers = estimate_transfers(algorithm, sizing);
    if (transfers && schedule_bytes(*transfers) > limit_bytes) {
      throw ConfigError(fmt::format("calibrate: {}: a {} schedule on {} ranks needs about {} of memory to fit, above "
                                    "--max-schedule-memory {} (is the rank count right? --nranks overrides the log's; "
                                    "else raise --max-schedule-memory)",
                                    where, algorithm, n, rough_size(schedule_bytes(*transfers)), limit_text));
    }
  };
  options.command = "collsim calibrate";
  for (const auto& a : args) options.command += " " + a;

  std::vector<std::filesystem::path> files(parser.positionals().begin(), parser.positionals().end());
  reject_duplicate_inputs(files);
  const CalibrationReport report = run_calibration(files, options);
  out << format_calibration_report(report);
  return parser.flag_set("no-plot") ? 0 : plot_fit(report, out);
}

}  // namespace collsim
