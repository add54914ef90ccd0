// `collsim simulate`: time one AllReduce of one algorithm with one engine.
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <ostream>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/json.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/engine.hpp"

namespace collsim {
namespace {

double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

StartMode parse_start(const std::string& text) {
  if (text == "eager") return StartMode::Eager;
  if (text == "barrier") return StartMode::Barrier;
  throw ConfigError(fmt::format("simulate: --start '{}' is not one of eager, barrier", text));
}

}  // namespace

int simulate_command(const Args& args, std::ostream& out) {
  const auto wall_start = std::chrono::steady_clock::now();
  ArgParser parser("simulate", "Simulate one AllReduce and report its completion time.");
  parser.option("algo", "-a", "NAME", "algorithm: " + algorithm_names())
      .option("n", "-n", "N", "number of ranks (>= 2)")
      .option("size", "-s", "SIZE", "buffer per rank, e.g. 1GiB", "1GiB")
      .option("alpha", "", "TIME", "end-to-end latency of one message", "3us")
      .option("bandwidth", "", "BW", "per-GPU bandwidth per direction, e.g. 450GiBps", "450GiBps")
      .option("gamma", "", "TIME_PER_BYTE", "reduction cost in seconds per byte", "0")
      .option("delay", "", "TIME", "delay of the straggler", "0")
      .option("straggler", "", "RANK", "the late rank (default n-1)")
      .option("start", "", "eager|barrier", "how phases start when ranks arrive late", "barrier")
      .option("engine", "", "NAME", "closed_form, replay or simgrid", "closed_form")
      .option("pipeline-chunks", "", "K", "trees: pipeline depth in chunks (0 = default)", "0")
      .flag("json", "print one JSON object instead of a table");
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  AlgorithmOptions options;
  options.n = static_cast<Rank>(parse_unsigned(parser.get("n"), "-n"));
  if (auto s = parser.get_optional("straggler")) options.straggler = static_cast<Rank>(parse_unsigned(*s, "--straggler"));
  options.pipeline_chunks = static_cast<std::uint32_t>(parse_unsigned(parser.get("pipeline-chunks"), "--pipeline-chunks"));
  RunConfig config;
  config.size_bytes = parse_size_bytes(parser.get("size"), "--size");
  config.start = parse_start(parser.get("start"));
  LinkModel link;
  link.latency_s = parse_duration_s(parser.get("alpha"), "--alpha");
  link.bandwidth_Bps = parse_bandwidth_Bps(parser.get("bandwidth"), "--bandwidth");
  link.gamma_s_per_byte = parse_duration_s(parser.get("gamma"), "--gamma");
  const double delay_s = parse_duration_s(parser.get("delay"), "--delay");
  auto engine = make_engine(parser.get("engine"));

  const Schedule schedule = generate_schedule(parser.get("algo"), options);
  config.topology.name = "nvswitch";
  config.topology.kind = TopologyKind::NvSwitch;
  config.topology.n = options.n;
  config.topology.link = link;
  config.arrival_s.assign(options.n, 0.0);
  config.arrival_s[options.straggler.value_or(options.n - 1)] = delay_s;
  const RunResult result = engine->run(schedule, config);

  // nccl-tests definitions, computed on the time after the last arrival: the bandwidth the
  // collective achieves once everyone is present (the StragglAR paper reports s / (t - d)).
  const double algbw_GBps = result.time_after_last_arrival_s > 0 ? config.size_bytes / result.time_after_last_arrival_s / 1e9 : 0.0;
  const double busbw_GBps = algbw_GBps * 2.0 * (options.n - 1) / options.n;
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  if (parser.flag_set("json")) {
    out << fmt::format(
        "{{\"algorithm\":{},\"n\":{},\"size_bytes\":{},\"engine\":{},\"start\":\"{}\",\"delay_s\":{},"
        "\"straggler\":{},\"time_s\":{},\"time_after_last_arrival_s\":{},\"algbw_GBps\":{},\"busbw_GBps\":{},"
        "\"bandwidth_basis\":\"time_after_last_arrival_s\",\"transfers\":{},\"wall_s\":{},\"peak_rss_bytes\":{}}}\n",
        json_string(schedule.algorithm), options.n, json_number(config.size_bytes), json_string(engine->name()),
        start_mode_name(config.start), json_number(delay_s), options.straggler.value_or(options.n - 1),
        json_number(result.time_s), json_number(result.time_after_last_arrival_s), json_number(algbw_GBps),
        json_number(busbw_GBps), result.transfers, json_number(wall_s), json_number(peak_rss_bytes()));
  } else {
    out << fmt::format("{} n={} size={} engine={} start={} delay={}\n", schedule.algorithm, options.n,
                       format_size(config.size_bytes), engine->name(), start_mode_name(config.start), format_duration(delay_s));
    out << fmt::format("  time (first arrival to last finish): {}\n", format_duration(result.time_s));
    out << fmt::format("  time after the last arrival:         {}\n", format_duration(result.time_after_last_arrival_s));
    out << fmt::format("  algbw {:.2f} GB/s, busbw {:.2f} GB/s (on the time after the last arrival)\n", algbw_GBps, busbw_GBps);
    out << fmt::format("  {} transfers, wall {}\n", result.transfers, format_duration(wall_s));
  }
  return 0;
}

}  // namespace collsim
