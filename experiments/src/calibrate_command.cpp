// `collsim calibrate`: fit the link model to nccl-tests logs or collsim-cuda measurements.
#include <fmt/format.h>

#include <filesystem>
#include <ostream>

#include "collsim/experiments/args.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/nccl_log.hpp"
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

}  // namespace

int calibrate_command(const Args& args, std::ostream& out) {
  ArgParser parser("calibrate",
                   "Fit alpha, beta (and gamma) to nccl-tests logs or collsim-cuda CSVs, through a schedule, "
                   "and cross-predict the collectives not fitted.");
  parser.positional("FILE...", "nccl-tests logs (all_reduce, reduce_scatter, all_gather, sendrecv) or collsim-cuda CSVs")
      .option("out", "-o", "MODEL.yaml", "model file to write (plus MODEL_fit.csv beside it)")
      .option("csv", "", "FILE", "measured-vs-predicted CSV (default: <MODEL>_fit.csv)")
      .option("algo", "", "NAME", "schedule that explains the logs", "ring")
      .option("regimes", "", "K", "1..3 (latency, bandwidth) regimes, time = min over them", "1")
      .flag("no-gamma", "keep gamma at 0 instead of fitting it")
      .option("time", "", "min|oop|ip", "which nccl-tests time column to use", "min")
      .option("fit-on", "", "C[,C...]", "collectives to fit (default: every input)")
      .option("predict", "", "C[,C...]", "collectives to cross-predict (default: every input not fitted)")
      .option("collective", "", "C", "override the collective of every nccl-tests log")
      .option("nranks", "", "N", "override the rank count of every nccl-tests log")
      .option("name", "", "NAME", "model name (default: the stem of --out)");
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  CalibrationOptions options;
  options.algorithm = parser.get("algo");
  const auto regimes = parse_unsigned(parser.get("regimes"), "--regimes");
  if (regimes < 1 || regimes > 3) throw ConfigError(fmt::format("calibrate: --regimes {} is not in 1..3", regimes));
  options.regimes = static_cast<std::uint32_t>(regimes);
  options.fit_gamma = !parser.flag_set("no-gamma");
  options.time = parse_log_time(parser.get("time"));
  if (auto v = parser.get_optional("fit-on")) options.fit_on = parse_collectives(*v, "--fit-on");
  if (auto v = parser.get_optional("predict")) options.predict = parse_collectives(*v, "--predict");
  if (auto v = parser.get_optional("collective")) options.collective = parse_collective(*v, "--collective");
  if (auto v = parser.get_optional("nranks")) options.nranks = static_cast<std::uint32_t>(parse_unsigned(*v, "--nranks"));
  if (auto v = parser.get_optional("name")) options.name = *v;
  if (auto v = parser.get_optional("out")) options.out_model = *v;
  if (auto v = parser.get_optional("csv")) options.out_csv = *v;
  options.command = "collsim calibrate";
  for (const auto& a : args) options.command += " " + a;

  std::vector<std::filesystem::path> files(parser.positionals().begin(), parser.positionals().end());
  const CalibrationReport report = run_calibration(files, options);
  out << format_calibration_report(report);
  return 0;
}

}  // namespace collsim
