// `collsim simulate`: time one AllReduce of one algorithm with one engine.
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <ostream>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/experiments/arrival_flags.hpp"
#include "collsim/experiments/arrival_trace_cli.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/experiments/output_path.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/models/arrival.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/json.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/nccl_choice.hpp"
#include "collsim/sim/engine.hpp"
#include "collsim/sim/metrics.hpp"
#include "collsim/sim/sensitivity.hpp"
#include "collsim/sim/trace_writer.hpp"

namespace collsim {
namespace {

double peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) * 1024.0;  // Linux reports KiB
}

std::string json_array(const std::vector<double>& values) {
  std::string s = "[";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s.push_back(',');
    s.append(json_number(values[i]));
  }
  s.push_back(']');
  return s;
}

// Every iteration of a trace: one run each with the same schedule (built for --straggler, or the
// rank most often last), then the per-iteration times and their mean.
int simulate_iterations(const ArgParser& parser, const std::string& algorithm, const ArrivalSpec& arrival_spec,
                        AlgorithmOptions options, RunConfig config, std::uint64_t seed, std::ostream& out) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (parser.get_optional("trace")) {
    throw ConfigError("simulate: --trace records one run; with --arrival-trace add --iteration K");
  }
  if (parse_unsigned(parser.get("sensitivity"), "--sensitivity") > 0) {
    throw ConfigError(fmt::format("simulate: --sensitivity {} measures one run; with --arrival-trace add --iteration K",
                                  parser.get("sensitivity")));
  }
  ArrivalProcess process(arrival_spec, options.n, seed);
  if (!options.straggler) options.straggler = arrival_spec.schedule_straggler(arrival_spec.expected_stragglers());
  auto engine = make_engine(resolve_engine_name(parser.get("engine")));
  const Schedule schedule = generate_schedule(algorithm, options);
  const std::size_t count = arrival_spec.trace->size();
  std::vector<RunResult> results;
  std::vector<Arrivals> arrivals;
  double sum_time_s = 0, sum_after_s = 0, sum_delay_s = 0;
  for (std::size_t i = 0; i < count; ++i) {
    arrivals.push_back(process.at(i));
    config.arrival_s = arrivals.back().arrival_s;
    results.push_back(engine->run(schedule, config));
    sum_time_s += results.back().time_s;
    sum_after_s += results.back().time_after_last_arrival_s;
    sum_delay_s += results.back().last_arrival_s - results.back().first_arrival_s;
  }
  const double k = static_cast<double>(count);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const auto& labels = arrival_spec.trace->iterations;
  if (parser.flag_set("json")) {
    std::string rows;
    for (std::size_t i = 0; i < count; ++i) {
      const RunResult& r = results[i];
      rows += fmt::format("{}{{\"iteration\":{},\"last_rank\":{},\"delay_s\":{},\"time_s\":{},\"time_after_last_arrival_s\":{}}}",
                          i ? "," : "", labels[i], arrivals[i].stragglers.front(),
                          json_number(r.last_arrival_s - r.first_arrival_s), json_number(r.time_s),
                          json_number(r.time_after_last_arrival_s));
    }
    out << fmt::format(
        "{{\"algorithm\":{},\"n\":{},\"size_bytes\":{},\"topology\":{},\"engine\":{},\"start\":\"{}\",\"seed\":{},"
        "\"arrival\":{},\"expected_straggler\":{},\"iterations\":[{}],\"mean_delay_s\":{},\"mean_time_s\":{},"
        "\"mean_time_after_last_arrival_s\":{},\"wall_s\":{},\"peak_rss_bytes\":{}}}\n",
        json_string(schedule.algorithm), options.n, json_number(config.size_bytes), json_string(config.topology.name),
        json_string(engine->name()), start_mode_name(config.start), seed, json_string(arrival_spec.describe()),
        *options.straggler, rows, json_number(sum_delay_s / k), json_number(sum_time_s / k), json_number(sum_after_s / k),
        json_number(wall_s), json_number(peak_rss_bytes()));
    return 0;
  }
  out << fmt::format("{} n={} size={} topology={} engine={} start={}\n", schedule.algorithm, options.n,
                     format_size(config.size_bytes), config.topology.name, engine->name(), start_mode_name(config.start));
  const AlgorithmInfo& row = find_algorithm(schedule.algorithm);
  out << fmt::format("  arrivals: {}{}\n", arrival_spec.describe(),
                     row.relabel_at_run_time                ? std::string("; schedule relabelled at run time for the last arrivals")
                     : row.schedule_depends_on_straggler() ? fmt::format("; schedule built for rank {}", *options.straggler)
                                                            : std::string());
  out << fmt::format("  {:>10} {:>9} {:>14} {:>14} {:>16}\n", "iteration", "last rank", "last arrival", "time",
                     "after last arr.");
  for (std::size_t i = 0; i < count; ++i) {
    const RunResult& r = results[i];
    out << fmt::format("  {:>10} {:>9} {:>14} {:>14} {:>16}\n", labels[i], arrivals[i].stragglers.front(),
                       format_duration(r.last_arrival_s - r.first_arrival_s), format_duration(r.time_s),
                       format_duration(r.time_after_last_arrival_s));
  }
  out << fmt::format("  {:>10} {:>9} {:>14} {:>14} {:>16}\n", "mean", "", format_duration(sum_delay_s / k),
                     format_duration(sum_time_s / k), format_duration(sum_after_s / k));
  out << fmt::format("  {} iterations simulated, wall {}, peak RSS {:.0f} MiB\n", count, format_duration(wall_s),
                     peak_rss_bytes() / (1024.0 * 1024.0));
  return 0;
}

}  // namespace

int simulate_command(const Args& args, std::ostream& out) {
  const auto wall_start = std::chrono::steady_clock::now();
  ArgParser parser("simulate", "Simulate one AllReduce and report its completion time.");
  parser.option("algo", "-a", "NAME", "algorithm: " + algorithm_names())
      .option("n", "-n", "N", "number of ranks (>= 2; default: the --arrival-trace group size)")
      .option("size", "-s", "SIZE", "buffer per rank, e.g. 1GiB", "1GiB")
      .option("topology", "", "NAME|FILE", "nvswitch, full_mesh, a configs/topologies name or a YAML file", "nvswitch")
      .option("alpha", "", "TIME", "end-to-end latency of one message (nvswitch/full_mesh only; default 3us)")
      .option("bandwidth", "", "BW", "per-GPU bandwidth per direction (nvswitch/full_mesh only; default 450GiBps)")
      .option("gamma", "", "TIME_PER_BYTE", "reduction cost in seconds per byte (overrides the topology's)")
      .option("model", "", "FILE", "fitted link model YAML (collsim calibrate); sets alpha and bandwidth of every link class, and gamma (not with --alpha/--bandwidth/--gamma)")
      .option("seed", "", "N", "seed of every random draw", "1")
      .option("start", "", "eager|barrier", "how phases start when ranks arrive late", "barrier")
      .option("execution", "", "fused|p2p_rounds",
              "fused: one launch per rank; p2p_rounds: a launch before every round (StragglAR's executor; default: the "
              "model's, else fused)")
      .option("gpus-per-thread", "", "G",
              "one host thread launches each kernel on G GPUs in turn (nccl-tests -g G): each launch costs the "
              "model's launch plus G-1 times its launch per extra GPU (needs --model)",
              "1")
      .option("launch", "", "DURATION", "launch overhead per kernel or NCCL group (replay, simgrid; default: the model's, else 0)")
      .option("engine", "", "NAME", "closed_form, replay, simgrid or auto (= replay, which models every topology)", "replay")
      .option("pipeline-chunks", "", "K",
              "pipelined algorithms (trees, nvls): pipeline depth in chunks (0 = the algorithm's default)", "0")
      .option("late-ranks", "", "K", "stragglar_online: ranks expected late (1..n-1)", "1")
      .option("schedule-for", "", "RANK",
              "straggler-aware algorithms: build the schedule for RANK, whoever is late (default: --straggler, "
              "else the straggler with the largest median delay, else n-1)")
      .option("agreement-cost", "", "DURATION",
              "stragglar_online: time the present ranks take to agree on who is late (default: 2 x the alpha "
              "between ranks 0 and n-1)")
      .option("reshare-interval", "", "DURATION",
              "replay's approximate mode: after a bandwidth solve, flows that start or finish within DURATION wait "
              "for the next solve (e.g. 100ns; README \"Approximate mode\")",
              "0")
      .option("sensitivity", "", "K",
              "also run K times with every arrival moved by at most 1 ps and report how far the finish times move: "
              "the model's own precision for this run (about 1 ps when well-conditioned; README \"Exact, where "
              "the model is\")",
              "0")
      .option("trace", "", "FILE", "write a Chrome/Perfetto trace (open in ui.perfetto.dev)")
      .option("max-schedule-memory", "", "SIZE", "refuse an -n whose run (its ranks, the schedule, and the engine's index of it where it builds one) is estimated to need more memory (at most this machine's memory)",
              format_size(kDefaultScheduleMemoryLimit_bytes))
      .flag("json", "print one JSON object instead of a table");
  // --straggler is also the rank schedules are built for (default: the expected straggler with the
  // largest median delay, else n-1).
  declare_arrival_flags(parser);
  add_arrival_trace_options(parser);
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  AlgorithmOptions options;
  std::optional<std::uint32_t> n_flag;
  if (auto n = parser.get_optional("n")) n_flag = parse_u32(*n, "-n");
  const std::optional<ArrivalSpec> trace = arrival_trace_from_flags(parser, n_flag, "simulate", {"stragglers", "distribution", "arrival", "persistence", "delay"});
  if (!n_flag && !trace) throw ConfigError("simulate: option --n is required (or an --arrival-trace)");
  options.n = n_flag ? static_cast<Rank>(*n_flag) : static_cast<Rank>(trace->trace->n);
  if (options.n < 2) throw ConfigError(fmt::format("simulate: -n {} is too small (an AllReduce needs n >= 2)", options.n));
  const double memory_limit_bytes = memory_limit_option_bytes(parser.get("max-schedule-memory"), parser.flag_set("max-schedule-memory"));
  // Before the topology and arrivals are built: their per-rank memory alone would pass the limit.
  if (const double bytes = options.n * kRunBytesPerRank; bytes > memory_limit_bytes) {
    throw ConfigError(fmt::format("simulate: -n {} needs more than {} for its ranks alone (topology links, arrival "
                                  "and finish times), above --max-schedule-memory {}; lower -n or raise --max-schedule-memory",
                                  options.n, rough_size(bytes), parser.get("max-schedule-memory")));
  }
  if (auto s = parser.get_optional("straggler")) options.straggler = parse_u32(*s, "--straggler");
  if (options.straggler && *options.straggler >= options.n) {
    throw ConfigError(fmt::format("simulate: --straggler {} is not a rank of n = {} (0..{})", *options.straggler, options.n,
                                  options.n - 1));
  }
  options.pipeline_chunks = parse_u32(parser.get("pipeline-chunks"), "--pipeline-chunks");
  options.late_ranks = parse_u32(parser.get("late-ranks"), "--late-ranks");
  RunConfig config;
  config.size_bytes = parse_size_bytes(parser.get("size"), "--size");
  // As advise and specs: an AllReduce of nothing is a typo, not a latency measurement.
  if (config.size_bytes == 0) throw ConfigError("simulate: --size: size = 0 bytes must be positive");
  config.start = parse_start_mode(parser.get("start"), "simulate: --start");
  if (auto a = parser.get_optional("agreement-cost")) config.agreement_s = parse_duration_s(*a, "--agreement-cost");
  config.record_trace = parser.has("trace");
  config.reshare_interval_s = parse_duration_s(parser.get("reshare-interval"), "--reshare-interval");
  if (config.reshare_interval_s > 0) {
    const auto engine = make_engine(resolve_engine_name(parser.get("engine")));
    if (!engine->has_reshare_interval()) {
      throw ConfigError(fmt::format("--reshare-interval {}: the {} engine is exact and has no approximate mode (use --engine replay)",
                                    parser.get("reshare-interval"), engine->name()));
    }
  }
  if (auto t = parser.get_optional("trace")) {
    output_file_option(*t, "simulate", "--trace");
    // The trace is written after the run: named like an input, it replaced that file.
    for (const char* input : {"arrival-trace", "model", "topology"}) {
      if (auto file = parser.get_optional(input)) {
        check_not_same_file(*t, "simulate", "--trace", *file, fmt::format("the --{} file", input));
      }
    }
  }
  const auto seed = parse_unsigned(parser.get("seed"), "--seed");
  const auto sensitivity_runs = parse_unsigned(parser.get("sensitivity"), "--sensitivity");
  if (sensitivity_runs > kMaxSensitivityRuns) {
    throw ConfigError(fmt::format("--sensitivity: {} is not in 0..{} (each is a whole run)", sensitivity_runs,
                                  kMaxSensitivityRuns));
  }

  // A flag that cannot apply is an error naming both, never silently ignored.
  const std::string topology = parser.get("topology");
  for (const char* flag : {"alpha", "bandwidth", "gamma"}) {
    if (!parser.get_optional(flag)) continue;
    if (parser.get_optional("model")) {
      throw ConfigError(fmt::format("simulate: give either --model or --{}, not both (the model file sets alpha, "
                                    "bandwidth and gamma)", flag));
    }
    if (std::string_view(flag) != "gamma" && !topology_uses_link(topology)) {
      throw ConfigError(fmt::format("simulate: --{} applies only to --topology nvswitch or full_mesh, not --topology "
                                    "'{}' (it sets its own links)", flag, topology));
    }
  }
  LinkModel link;
  if (auto a = parser.get_optional("alpha")) link.latency_s = parse_duration_s(*a, "--alpha");
  if (auto b = parser.get_optional("bandwidth")) link.bandwidth_Bps = parse_bandwidth_Bps(*b, "--bandwidth");
  std::optional<ModelFile> model;
  if (auto m = parser.get_optional("model")) {
    model = read_model_file(*m);
    link = model->link_for_size(config.size_bytes);
  }
  if (const auto gpus = parse_unsigned(parser.get("gpus-per-thread"), "--gpus-per-thread"); gpus != 1) {
    if (gpus == 0 || gpus > 1024) throw ConfigError(fmt::format("--gpus-per-thread: {} is not in 1..1024", gpus));
    if (gpus > options.n) {
      throw ConfigError(fmt::format("--gpus-per-thread: {} is more than the run's {} GPUs (-n)", gpus, options.n));
    }
    if (!model) throw ConfigError("simulate: --gpus-per-thread needs --model (the launch per extra GPU comes from a calibrated model)");
    model = driven_by_one_thread(*model, static_cast<std::uint32_t>(gpus));
  }
  config.topology = resolve_topology(topology, options.n, link);
  if (model) apply_model(*model, config.size_bytes, config.topology);
  // Flags override the model file's execution defaults; without either, fused and no launch.
  if (model) config.execution = model->execution_for_size(config.size_bytes);
  if (auto x = parser.get_optional("execution")) config.execution.style = parse_execution_style(*x, "simulate: --execution");
  if (auto l = parser.get_optional("launch")) config.execution.launch_s = parse_duration_s(*l, "--launch");
  if (auto g = parser.get_optional("gamma")) config.topology.link.gamma_s_per_byte = parse_s_per_byte(*g, "--gamma");
  // `nccl`: the candidate and protocol NCCL's tuner would pick for this size, topology and model,
  // run fused with that protocol's link and launch.
  std::string algorithm = parser.get("algo");
  std::optional<NcclChoice> nccl;
  if (find_algorithm(algorithm).chosen_per_run) {
    nccl = choose_nccl(options.n, config.size_bytes, config.topology, model ? &*model : nullptr, config.execution);
    algorithm = nccl->algorithm;
    config.topology = nccl->topology;
    config.execution = nccl->execution;
  }

  const std::optional<ArrivalSpec> from_flags = trace ? std::nullopt : arrival_from_flags(parser, options.n, "simulate");
  // The algorithm as the user named it, and NCCL's choice when that is `nccl`.
  const std::string named_algorithm =
      parser.get("algo") == algorithm ? fmt::format("'{}'", algorithm)
                                      : fmt::format("'{}' (NCCL's choice here: {})", parser.get("algo"), algorithm);
  // A schedule built for another rank than the late one: what a wrong guess of the straggler costs.
  if (auto text = parser.get_optional("schedule-for")) {
    const auto rank = parse_unsigned(*text, "--schedule-for");
    if (rank >= options.n) {
      throw ConfigError(fmt::format("simulate: --schedule-for {} is not a rank of n = {} (0..{})", rank, options.n, options.n - 1));
    }
    if (!find_algorithm(algorithm).schedule_depends_on_straggler()) {
      throw ConfigError(fmt::format("simulate: --schedule-for {} applies only to algorithms whose schedule depends on the "
                                    "late rank, not {}", rank, named_algorithm));
    }
    // Without a delay (or with a trace) --straggler too only names the schedule's rank.
    if (parser.get_optional("straggler") && !from_flags) {
      throw ConfigError("simulate: give either --straggler or --schedule-for, not both (without --delay or "
                        "--distribution, --straggler only names the rank the schedule is built for)");
    }
    options.straggler = static_cast<Rank>(rank);
  }
  // Options read only by some rows: given for another algorithm they would change nothing.
  const AlgorithmInfo& row = find_algorithm(algorithm);
  for (const char* flag : {"late-ranks", "agreement-cost"}) {
    if (parser.flag_set(flag) && !row.relabel_at_run_time) {
      throw ConfigError(fmt::format("simulate: --{} {} applies only to algorithms that pick the late ranks at run "
                                    "time (stragglar_online), not {}",
                                    flag, parser.get(flag), named_algorithm));
    }
  }
  if (options.pipeline_chunks != 0 && row.default_pipeline_chunks == 0 && !find_algorithm(parser.get("algo")).chosen_per_run) {
    throw ConfigError(fmt::format("simulate: --pipeline-chunks {} applies only to pipelined algorithms (see 'collsim "
                                  "algorithms', column pipeline), not {}",
                                  options.pipeline_chunks, named_algorithm));
  }
  // Without a delay (or with a trace) --straggler only names the schedule's rank: a no-op for
  // algorithms whose schedule does not depend on it, which the CLI refuses rather than ignores.
  if (auto r = parser.get_optional("straggler"); r && !from_flags && !find_algorithm(algorithm).schedule_depends_on_straggler()) {
    throw ConfigError(fmt::format("simulate: --straggler {} without --delay or --distribution only names the rank a "
                                  "straggler-aware schedule is built for, and the schedule of {} does not depend on it "
                                  "(add --delay to make rank {} late)", *r, named_algorithm, *r));
  }
  ArrivalSpec arrival_spec = trace ? *trace : from_flags.value_or(ArrivalSpec{});
  if (trace) {
    if (auto j = parser.get_optional("jitter")) arrival_spec.jitter = parse_distribution_cli(*j, "--jitter");
    if (trace->trace->size() > 1) {
      return simulate_iterations(parser, algorithm, arrival_spec, options, config, seed, out);
    }
  }
  const Arrivals arrivals = make_arrivals(arrival_spec, options.n, 0, seed);
  config.arrival_s = arrivals.arrival_s;
  // Straggler-aware schedules are built for the expected straggler (of several, the one with the
  // largest median delay: ArrivalSpec::schedule_slot).
  if (!options.straggler) options.straggler = arrival_spec.schedule_straggler(arrivals.expected_stragglers);

  auto engine = make_engine(resolve_engine_name(parser.get("engine")));
  if (sensitivity_runs > 0 && !engine->takes_any_arrivals()) {
    throw ConfigError(fmt::format("simulate: --sensitivity {} moves every rank's arrival, which the {} engine does not "
                                  "model (use --engine replay or simgrid)",
                                  sensitivity_runs, engine->name()));
  }
  options.gpus_per_node = gpus_per_node_of(config.topology);
  options.nodes_per_leaf = nodes_per_leaf_of(config.topology);
  // Hierarchical rows take their node size from the topology: named here, as `run` and `advise`
  // do, since the topology is what the user must change.
  if (row.hierarchical) {
    if (const std::string why = row.unsupported_reason(options.n, topology_context(config.topology)); !why.empty()) {
      throw ConfigError(fmt::format("simulate: algorithm '{}' does not support n = {} on topology '{}' ({})", algorithm,
                                    options.n, parser.get("topology"), why));
    }
  }
  set_sizing(options, config.topology, config.size_bytes);
  // Estimated before generating: a mistyped -n must fail at once, naming -n, not grow to
  // gigabytes and end in "out of memory". On a fabric where the event-driven path may run, the
  // engine's index of the rank-rounds counts too (as large as the schedule on a ring).
  if (const auto estimate = estimate_schedule(algorithm, options)) {
    const bool index = engine->builds_event_index(config.topology, estimate->shares_ports);
    if (const double bytes = run_bytes(*estimate, index); bytes > memory_limit_bytes) {
      const std::string index_part =
          index ? fmt::format(" plus the {} engine's index of it on {}, {} in all", engine->name(),
                              parser.get("topology"), rough_size(bytes))
                : std::string();
      const std::string depth = depth_clause(algorithm, options.pipeline_chunks);
      throw ConfigError(fmt::format("simulate: -n {}{} makes a {} schedule of about {:.3g} transfers, {}{} "
                                    "(estimated), above --max-schedule-memory {}; lower -n{} or raise --max-schedule-memory",
                                    options.n, depth, parser.get("algo"), estimate->transfers,
                                    rough_size(schedule_bytes(estimate->transfers)), index_part,
                                    parser.get("max-schedule-memory"), depth.empty() ? "" : " or --pipeline-chunks"));
    }
  }
  const Schedule schedule = generate_schedule(algorithm, options);
  // Per-rank idle times need the transfer trace; keep it for JSON output unless it would be huge.
  constexpr std::size_t kMaxTracedTransfers = 4'000'000;
  config.record_trace = config.record_trace || (parser.flag_set("json") && schedule.num_transfers() <= kMaxTracedTransfers);
  const RunResult result = engine->run(schedule, config);
  std::optional<double> hidden;  // undefined with nobody late
  const double delay_s = result.last_arrival_s - result.first_arrival_s;
  if (delay_s > 0) {
    RunConfig no_delay = config;
    no_delay.arrival_s.assign(options.n, 0.0);
    no_delay.record_trace = false;
    hidden = hidden_delay_fraction(engine->run(schedule, no_delay).time_s, result.time_s, delay_s);
  }
  // The latest-arriving rank (lowest on a tie), as in results.csv; the schedule's rank is
  // expected_straggler.
  const auto straggler = static_cast<Rank>(std::max_element(config.arrival_s.begin(), config.arrival_s.end()) -
                                           config.arrival_s.begin());
  // A schedule relabelled at run time was built for whoever arrived last, not for --straggler.
  const Rank expected_straggler =
      find_algorithm(parser.get("algo")).relabel_at_run_time ? straggler : options.straggler.value_or(options.n - 1);
  const RunMetrics metrics = compute_metrics(result, config.arrival_s, config.size_bytes, options.n);
  if (auto path = parser.get_optional("trace")) write_chrome_trace(*path, schedule, result, config.arrival_s, config.size_bytes);

  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  // After the wall time: it is this run's (and the one without delay that hidden needs).
  const Sensitivity sensitivity =
      sensitivity_runs > 0 ? measure_sensitivity(*engine, schedule, config, result.finish_s, sensitivity_runs, seed) : Sensitivity{};
  if (parser.flag_set("json")) {
    out << fmt::format(
        "{{\"algorithm\":{},\"n\":{},\"size_bytes\":{},\"topology\":{},\"engine\":{},\"start\":\"{}\","
        "\"nccl_algorithm\":{},\"nccl_protocol\":{},\"execution\":\"{}\",\"launch_s\":{},\"seed\":{},"
        "\"arrival\":{},\"straggler\":{},\"expected_straggler\":{},\"delay_s\":{},\"time_s\":{},\"time_after_last_arrival_s\":{},"
        "\"hidden_delay_fraction\":{},\"algbw_GBps\":{},\"busbw_GBps\":{},\"bandwidth_basis\":\"time_after_last_arrival_s\","
        "\"arrival_s\":{},\"finish_s\":{},\"idle_s\":{},\"transfers\":{},\"reshare_interval_s\":{},\"sensitivity_runs\":{},\"sensitivity\":{},\"sensitivity_s\":{},"
        "\"wall_s\":{},\"peak_rss_bytes\":{}}}\n",
        json_string(parser.get("algo")), options.n, json_number(config.size_bytes), json_string(config.topology.name),
        json_string(engine->name()), start_mode_name(config.start), nccl ? json_string(nccl->algorithm) : "null",
        nccl ? json_string(nccl->protocol) : "null", execution_style_name(config.execution.style),
        json_number(config.execution.launch_s), seed, json_string(arrival_spec.describe()),
        straggler, expected_straggler, json_number(delay_s), json_number(result.time_s), json_number(result.time_after_last_arrival_s),
        hidden ? json_number(*hidden) : "null", json_number(metrics.algbw_GBps), json_number(metrics.busbw_GBps), json_array(config.arrival_s),
        json_array(result.finish_s), json_array(metrics.idle_s), result.transfers, json_number(config.reshare_interval_s),
        sensitivity_runs, sensitivity_runs > 0 ? json_number(sensitivity.relative) : "null",
        sensitivity_runs > 0 ? json_number(sensitivity.absolute_s) : "null",
        json_number(wall_s),
        json_number(peak_rss_bytes()));
  } else {
    out << fmt::format("{} n={} size={} topology={} engine={} start={}", parser.get("algo"), options.n,
                       format_size(config.size_bytes), config.topology.name, engine->name(), start_mode_name(config.start));
    if (nccl) out << fmt::format(" (NCCL's choice: {} with protocol {})", nccl->algorithm, nccl->protocol);
    if (config.reshare_interval_s > 0) {
      out << fmt::format(" reshare_interval={} (approximate)", format_duration(config.reshare_interval_s));
    }
    if (config.execution.launch_s > 0) {
      out << fmt::format(" execution={} launch={}", execution_style_name(config.execution.style),
                         format_duration(config.execution.launch_s));
    }
    out << "\n";
    out << fmt::format("  arrivals: {} (last arrival {})\n", arrival_spec.describe(), format_duration(delay_s));
    if (find_algorithm(algorithm).schedule_depends_on_straggler()) {
      out << fmt::format("  schedule built for rank {}\n", expected_straggler);
    }
    out << fmt::format("  time (first arrival to last finish): {}\n", format_duration(result.time_s));
    out << fmt::format("  time after the last arrival:         {}\n", format_duration(result.time_after_last_arrival_s));
    if (hidden) out << fmt::format("  share of the delay hidden:           {:.1f} %\n", 100.0 * *hidden);
    out << fmt::format("  algbw {:.2f} GB/s, busbw {:.2f} GB/s (on the time after the last arrival)\n", metrics.algbw_GBps,
                       metrics.busbw_GBps);
    if (sensitivity_runs > 0) {
      out << fmt::format("  sensitivity: {} runs with the arrivals moved by up to 1 ps finish up to {:.1e} ({}) from this one{}\n",
                         sensitivity_runs, sensitivity.relative, format_duration(sensitivity.absolute_s),
                         sensitivity.amplified() ? "; the model amplifies tiny differences here, so read the times to that precision"
                                                 : "");
    }
    out << fmt::format("  {} transfers simulated, wall {}, peak RSS {:.0f} MiB\n", result.transfers, format_duration(wall_s),
                       peak_rss_bytes() / (1024.0 * 1024.0));
  }
  return 0;
}

}  // namespace collsim
