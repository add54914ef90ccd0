// `collsim advise`: rank the algorithms for one topology, size and arrival model, and say which
// one to use.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>
#include <ostream>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/advise.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/experiments/arrival_flags.hpp"
#include "collsim/experiments/arrival_trace_cli.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

bool is_deterministic(const ArrivalChoice& a) {
  if (a.last_rank_straggler) return true;
  const ArrivalSpec& m = a.model;
  if (m.jitter && !(m.jitter->kind() == DistributionKind::Constant)) return false;
  if (m.persistence != 1.0) return false;
  for (const auto& s : m.stragglers) {
    if (s.delay.kind() != DistributionKind::Constant) return false;
  }
  return true;
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    names.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return names;
}

}  // namespace

int advise_command(const Args& args, std::ostream& out) {
  ArgParser parser("advise",
                   "Rank the AllReduce algorithms by mean and p99 completion time for one topology, buffer size and "
                   "arrival model, find the critical straggler delay of stragglar against the best baseline, and say "
                   "which algorithm to use.");
  parser.option("topology", "-t", "NAME|FILE", "topology (nvswitch, full_mesh, a configs/topologies name, or a file)")
      .option("n", "-n", "N", "number of ranks (>= 2)")
      .option("size", "-s", "SIZE", "buffer per rank, e.g. 1GiB")
      .option("alpha", "", "TIME", "nvswitch/full_mesh: end-to-end latency of one message (default 3us)")
      .option("bandwidth", "", "BW", "nvswitch/full_mesh: per-GPU bandwidth per direction (default 450GiBps)")
      .option("gamma", "", "TIME_PER_BYTE", "reduction cost in seconds per byte (default 0)")
      .option("model", "", "FILE", "fitted link model file (instead of --alpha/--bandwidth/--gamma)")
      .option("spec", "", "FILE", "take the arrival model, link and defaults from an experiment spec")
      .option("algorithms", "", "LIST", "comma-separated algorithms to compare (default: all supporting n)")
      .option("engine", "", "NAME", "replay, closed_form, simgrid or auto (= replay; default replay)")
      .option("start", "", "eager|barrier", "how phases start when ranks arrive late (default barrier)")
      .option("execution", "", "fused|p2p_rounds",
              "fused: one launch per rank; p2p_rounds: a launch before every round (default: the model's, else fused)")
      .option("gpus-per-thread", "", "G",
              "one host thread launches each kernel on G GPUs in turn (nccl-tests -g G): each launch costs the "
              "model's launch plus G-1 times its launch per extra GPU (needs --model)")
      .option("launch", "", "DURATION", "launch overhead per kernel or NCCL group (default: the model's, else 0)")
      .option("trials", "", "K", "Monte Carlo trials (default 1 for fixed delays, 200 for random ones)")
      .option("seed", "", "X", "seed of the random draws (default 1)")
      .option("max-run-memory", "", "SIZE",
              "refuse when the largest run is estimated to need more memory (default and largest value: this "
              "machine's memory)")
      .flag("json", "print one JSON object instead of the table");
  add_arrival_trace_options(parser);
  declare_arrival_flags(parser);
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  if (!parser.positionals().empty()) throw ConfigError(fmt::format("advise: unexpected argument '{}'", parser.positionals().front()));

  AdviseRequest request;
  ExperimentSpec& spec = request.spec;
  bool trials_from_spec = false;
  if (auto file = parser.get_optional("spec")) {
    spec = load_spec(*file);
    trials_from_spec = true;
    if (spec.baseline_added) spec.algorithms.pop_back();
  } else {
    spec.name = "advise";
    spec.topologies = {{"nvswitch", "nvswitch"}};
    spec.engines = {"replay"};
    spec.starts = {StartMode::Barrier};
  }
  spec.name = "advise";
  spec.algorithms.clear();
  if (auto list = parser.get_optional("algorithms")) spec.algorithms = split_names(*list);
  if (auto n = parser.get_optional("n")) {
    const auto value = parse_unsigned(*n, "-n");
    if (value < 2 || value > (1u << 20)) throw ConfigError(fmt::format("advise: -n {} is not in 2..{}", value, 1u << 20));
    spec.n = {static_cast<Rank>(value)};
  }
  // A trace fixes n (its group size) unless -n or the spec gives one, which must then match.
  std::optional<ArrivalSpec> trace = arrival_trace_from_flags(
      parser, spec.n.empty() ? std::nullopt : std::optional<std::uint32_t>(spec.n.front()), "advise",
      {"arrival", "stragglers", "distribution", "delay", "straggler", "persistence"});
  if (trace && spec.n.empty()) spec.n = {trace->trace->n};
  if (spec.n.empty()) throw ConfigError("advise: -n N is required (or a --spec with one n, or an --arrival-trace)");
  if (auto s = parser.get_optional("size")) spec.sizes_bytes = {parse_size_bytes(*s, "--size")};
  if (spec.sizes_bytes.empty()) throw ConfigError("advise: --size SIZE is required (or a --spec with one size)");
  if (auto t = parser.get_optional("topology")) {
    const bool is_file = t->find('/') != std::string::npos || t->ends_with(".yaml") || t->ends_with(".yml");
    spec.topologies = {is_file ? TopologyChoice{std::filesystem::path(*t).stem().string(), std::filesystem::absolute(*t).string()}
                               : TopologyChoice{*t, *t}};
  }
  if (auto m = parser.get_optional("model")) {
    if (parser.get_optional("alpha") || parser.get_optional("bandwidth") || parser.get_optional("gamma")) {
      throw ConfigError("advise: give either --model or --alpha/--bandwidth/--gamma, not both");
    }
    auto file = std::make_shared<ModelFile>(read_model_file(*m));
    spec.link = file->link;
    spec.link_model_file = std::filesystem::absolute(*m).string();
    spec.link_model = std::move(file);
  }
  if (auto g = parser.get_optional("gpus-per-thread")) {
    const auto gpus = parse_unsigned(*g, "--gpus-per-thread");
    if (gpus == 0 || gpus > 1024) throw ConfigError(fmt::format("--gpus-per-thread: {} is not in 1..1024", gpus));
    if (!spec.link_model) throw ConfigError("advise: --gpus-per-thread needs --model (the launch per extra GPU comes from a calibrated model)");
    if (spec.gpus_per_thread != 1) throw ConfigError("advise: the spec already sets gpus_per_thread; give it once");
    spec.gpus_per_thread = static_cast<std::uint32_t>(gpus);
    spec.link_model = std::make_shared<ModelFile>(driven_by_one_thread(*spec.link_model, spec.gpus_per_thread));
  }
  // Once, wherever G came from: a spec checked its own n, which -n may have replaced.
  for (const Rank n : spec.n) {
    if (spec.gpus_per_thread <= n) continue;
    const std::string what = parser.get_optional("gpus-per-thread")
                                 ? fmt::format("--gpus-per-thread: {}", spec.gpus_per_thread)
                                 : fmt::format("gpus_per_thread: {} (--spec)", spec.gpus_per_thread);
    throw ConfigError(fmt::format("{} is more than the run's {} GPUs (-n)", what, n));
  }
  if (auto a = parser.get_optional("alpha")) spec.link.latency_s = parse_duration_s(*a, "--alpha");
  if (auto b = parser.get_optional("bandwidth")) spec.link.bandwidth_Bps = parse_bandwidth_Bps(*b, "--bandwidth");
  if (auto g = parser.get_optional("gamma")) spec.link.gamma_s_per_byte = parse_s_per_byte(*g, "--gamma");
  for (const char* flag : {"alpha", "bandwidth", "gamma"}) {
    if (parser.get_optional(flag) && !topology_uses_link(spec.topologies.front().spec)) {
      throw ConfigError(fmt::format("advise: --{} applies only to --topology nvswitch or full_mesh, not topology "
                                    "'{}' (it sets its own links)", flag, spec.topologies.front().label));
    }
  }
  if (parser.get_optional("alpha") || parser.get_optional("bandwidth") || parser.get_optional("gamma")) {
    spec.link_model.reset();
    spec.link_model_file.clear();
  }
  if (auto e = parser.get_optional("engine")) spec.engines = {*e};
  if (auto x = parser.get_optional("execution")) spec.execution = parse_execution_style(*x, "advise: --execution");
  if (auto l = parser.get_optional("launch")) spec.launch_s = parse_duration_s(*l, "--launch");
  if (auto s = parser.get_optional("start")) {
    spec.starts = {parse_start_mode(*s, "advise: --start")};
  }
  // A trace ranks the algorithms by their mean over its iterations: one trial per iteration.
  std::optional<std::uint32_t> trace_trials;
  if (trace) {
    ArrivalChoice choice;
    choice.model = std::move(*trace);
    if (auto j = parser.get_optional("jitter")) choice.model.jitter = parse_distribution_cli(*j, "--jitter");
    choice.label = choice.model.describe();
    trace_trials = static_cast<std::uint32_t>(std::min<std::size_t>(choice.model.trace->size(), 100'000'000));
    spec.arrivals = {std::move(choice)};
    spec.crossed_delays_s.clear();  // the spec's `delays` crossed arrivals that are gone
  } else if (auto model = arrival_from_flags(parser, spec.n.front(), "advise")) {
    ArrivalChoice choice;
    choice.model = std::move(*model);
    choice.label = choice.model.describe();
    spec.arrivals = {std::move(choice)};
    spec.crossed_delays_s.clear();
  } else if (spec.arrivals.empty()) {
    ArrivalChoice none;
    none.label = "fixed_delay";
    none.delay_s = 0.0;
    none.last_rank_straggler = true;
    spec.arrivals = {none};
  }
  // A study sweeps; advise answers for one point. An axis the flags left with several values
  // names the flag that picks one (the README's `--spec smoke.yaml` example gives --delay).
  const auto require_one = [](std::size_t count, std::string_view key, std::string_view flags) {
    if (count > 1) {
      throw ConfigError(fmt::format("advise: the spec sweeps {} values of '{}'; pick one with {}", count, key, flags));
    }
  };
  require_one(spec.n.size(), "n", "-n");
  require_one(spec.sizes_bytes.size(), "sizes", "--size");
  require_one(spec.topologies.size(), "topology", "--topology");
  require_one(spec.engines.size(), "engine", "--engine");
  require_one(spec.starts.size(), "start", "--start");
  require_one(spec.arrivals.size(), "delays/arrival", "--delay, --distribution, --stragglers or --arrival");
  if (auto k = parser.get_optional("trials")) {
    const auto value = parse_unsigned(*k, "--trials");
    if (value < 1 || value > 100'000'000) throw ConfigError(fmt::format("advise: --trials {} is not in 1..100000000", value));
    spec.trials = static_cast<std::uint32_t>(value);
  } else if (trace_trials) {
    spec.trials = *trace_trials;
  } else if (!trials_from_spec) {
    spec.trials = is_deterministic(spec.arrivals.front()) ? 1 : 200;
  }
  if (auto x = parser.get_optional("seed")) spec.seed = parse_unsigned(*x, "--seed");
  spec.lines.clear();
  spec.source = "advise";

  request.memory_limit = run_memory_limit(parser.get_optional("max-run-memory"));
  // A bar on a terminal only: in logs and pipes advise's output stays the answer alone.
  std::optional<Progress> progress;
  if (Progress::style_for_stderr() == Progress::Style::Bar) {
    progress.emplace(std::cerr, Progress::Style::Bar, "advise");
    request.progress = &*progress;
  }
  const AdviseResult result = advise(std::move(request));
  out << (parser.flag_set("json") ? advise_json(result) : advise_text(result));
  return 0;
}

}  // namespace collsim
