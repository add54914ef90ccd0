// `collsim schedule`: print a generated schedule as a table, JSON, or statistics.
#include <fmt/format.h>

#include <chrono>
#include <ostream>

#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/json.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

std::string chunk_label(const Transfer& t) {
  return t.chunk_count == 1 ? fmt::format("c{}", t.chunk_begin)
                            : fmt::format("c{}-{}", t.chunk_begin, t.chunk_begin + t.chunk_count - 1);
}

// One round as "a<->b c1/c2" for swaps (a sends c1, b sends c2) and "a->b c" for one-way
// transfers, the notation of the StragglAR reference; '+' marks a reduce at the receiver.
std::string format_round(std::span<const Transfer> round) {
  std::vector<bool> used(round.size(), false);
  std::string line;
  const auto mark = [](const Transfer& t) { return t.op == Op::Reduce ? "+" : ""; };
  for (std::size_t i = 0; i < round.size(); ++i) {
    if (used[i]) continue;
    const Transfer& a = round[i];
    std::string item;
    for (std::size_t j = i + 1; j < round.size(); ++j) {
      const Transfer& b = round[j];
      if (!used[j] && b.src == a.dst && b.dst == a.src) {
        used[j] = true;
        item = fmt::format("{}<->{} {}{}/{}{}", a.src, a.dst, mark(a), chunk_label(a), mark(b), chunk_label(b));
        break;
      }
    }
    if (item.empty()) item = fmt::format("{}->{} {}{}", a.src, a.dst, mark(a), chunk_label(a));
    line += (line.empty() ? "" : "; ") + item;
  }
  return line;
}

void print_text(const Schedule& s, std::ostream& out) {
  out << fmt::format("{} n={} chunks={} ports={}{}{}  ('+' = reduce at the receiver)\n", s.algorithm, s.n,
                     s.num_chunks, s.ports, s.straggler >= 0 ? fmt::format(" straggler={}", s.straggler) : "",
                     s.num_switch_ranks > 0 ? fmt::format(" switch_ranks={}..{}", s.n, s.num_ranks() - 1) : "");
  for (const Phase& p : s.phases) {
    out << fmt::format("phase {} ({} rounds, {} transfers)\n", p.name(), p.num_rounds(), p.num_transfers());
    for (std::size_t r = 0; r < p.num_rounds(); ++r) {
      out << fmt::format("  {:>4}: {}\n", r, format_round(p.round(r)));
    }
  }
}

void print_json(const Schedule& s, std::ostream& out) {
  out << fmt::format("{{\"algorithm\":{},\"n\":{},\"num_chunks\":{},\"straggler\":{},\"ports\":{},"
                     "\"num_switch_ranks\":{},\"phases\":[",
                     json_string(s.algorithm), s.n, s.num_chunks, s.straggler, s.ports, s.num_switch_ranks);
  for (std::size_t p = 0; p < s.phases.size(); ++p) {
    const Phase& phase = s.phases[p];
    out << fmt::format("{}{{\"name\":{},\"rounds\":[", p ? "," : "", json_string(phase.name()));
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      out << (r ? ",[" : "[");
      bool first = true;
      for (const Transfer& t : phase.round(r)) {
        out << fmt::format("{}{{\"src\":{},\"dst\":{},\"chunk_begin\":{},\"chunk_count\":{},\"op\":\"{}\"}}",
                           first ? "" : ",", t.src, t.dst, t.chunk_begin, t.chunk_count, op_name(t.op));
        first = false;
      }
      out << "]";
    }
    out << "]}";
  }
  out << "]}\n";
}

}  // namespace

int schedule_command(const Args& args, std::ostream& out) {
  ArgParser parser("schedule", "Generate an AllReduce schedule and print it.");
  parser.option("algo", "-a", "NAME", "algorithm: " + algorithm_names())
      .option("n", "-n", "N", "number of ranks (>= 2)")
      .option("straggler", "", "RANK", "the expected straggler (straggler-aware algorithms)")
      .option("pipeline-chunks", "", "K",
              "pipelined algorithms (trees, nvls): pipeline depth in chunks (0 = the algorithm's default)", "0")
      .option("late-ranks", "", "K", "stragglar_online: ranks expected late (1..n-1)", "1")
      .option("gpus-per-node", "", "G", "hierarchical algorithms: GPUs per node (n must be a multiple)")
      .option("format", "", "text|json|stats", "output format", "text")
      .option("max-schedule-memory", "", "SIZE",
              "refuse an -n whose schedule is estimated to need more memory (at most this machine's memory)",
              format_size(kDefaultScheduleMemoryLimit_bytes));
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  AlgorithmOptions options;
  options.n = parse_u32(parser.get("n"), "-n");
  if (auto s = parser.get_optional("straggler")) options.straggler = parse_u32(*s, "--straggler");
  options.pipeline_chunks = parse_u32(parser.get("pipeline-chunks"), "--pipeline-chunks");
  options.late_ranks = parse_u32(parser.get("late-ranks"), "--late-ranks");
  if (auto g = parser.get_optional("gpus-per-node")) {
    // 0 was read as "not given" and the error asked for the option that was there.
    options.gpus_per_node = parse_u32(*g, "--gpus-per-node");
    if (options.gpus_per_node == 0) throw ConfigError("schedule: --gpus-per-node 0: a node has at least 1 GPU");
  }
  if (options.straggler && options.n >= 2 && *options.straggler >= options.n) {
    throw ConfigError(fmt::format("schedule: --straggler {} is not a rank of n = {} (0..{})", *options.straggler, options.n,
                                  options.n - 1));
  }
  if (options.straggler && !find_algorithm(parser.get("algo")).schedule_depends_on_straggler()) {
    throw ConfigError(fmt::format("schedule: --straggler {} does not apply: the schedule of '{}' does not depend on "
                                  "which rank is late", *options.straggler, parser.get("algo")));
  }
  // As in simulate: options that only some rows read are refused for the others.
  const AlgorithmInfo& row = find_algorithm(parser.get("algo"));
  if (parser.flag_set("late-ranks") && !row.relabel_at_run_time) {
    throw ConfigError(fmt::format("schedule: --late-ranks {} applies only to algorithms that pick the late ranks at run "
                                  "time (stragglar_online), not '{}'", parser.get("late-ranks"), parser.get("algo")));
  }
  if (options.pipeline_chunks != 0 && row.default_pipeline_chunks == 0 && !row.chosen_per_run) {
    throw ConfigError(fmt::format("schedule: --pipeline-chunks {} applies only to pipelined algorithms (see 'collsim "
                                  "algorithms', column pipeline), not '{}'", options.pipeline_chunks, parser.get("algo")));
  }
  const std::string format = parser.get("format");
  if (format != "text" && format != "json" && format != "stats") {
    throw ConfigError(fmt::format("schedule: --format '{}' is not one of text, json, stats", format));
  }
  // As in simulate: a mistyped -n or depth is refused at once, naming it, not after gigabytes.
  const double memory_limit_bytes = memory_limit_option_bytes(parser.get("max-schedule-memory"), parser.flag_set("max-schedule-memory"));
  if (options.n >= 2) {  // smaller n: generate_schedule's own error
    const auto estimate = estimate_schedule(parser.get("algo"), options);
    if (estimate && schedule_bytes(estimate->transfers) > memory_limit_bytes) {
      throw ConfigError(fmt::format("schedule: -n {}{} makes a {} schedule of about {:.3g} transfers, {} (estimated), above "
                                    "--max-schedule-memory {}", options.n, depth_clause(parser.get("algo"), options.pipeline_chunks),
                                    parser.get("algo"), estimate->transfers, rough_size(schedule_bytes(estimate->transfers)),
                                    parser.get("max-schedule-memory")));
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  const Schedule s = generate_schedule(parser.get("algo"), options);
  const double generate_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (format == "text") {
    print_text(s, out);
  } else if (format == "json") {
    print_json(s, out);
  } else {
    const auto t1 = std::chrono::steady_clock::now();
    const bool verified = verify_schedule(s).empty();
    const double verify_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    out << fmt::format("{{\"algorithm\":{},\"n\":{},\"num_chunks\":{},\"phases\":[", json_string(s.algorithm), s.n, s.num_chunks);
    for (std::size_t p = 0; p < s.phases.size(); ++p) {
      out << fmt::format("{}{{\"name\":{},\"rounds\":{},\"transfers\":{}}}", p ? "," : "",
                         json_string(s.phases[p].name()), s.phases[p].num_rounds(), s.phases[p].num_transfers());
    }
    out << fmt::format("],\"rounds\":{},\"transfers\":{},\"memory_bytes\":{},\"generate_s\":{},\"verify_s\":{},\"verified\":{}}}\n",
                       s.num_rounds(), s.num_transfers(), s.memory_bytes(), json_number(generate_s),
                       json_number(verify_s), verified ? "true" : "false");
  }
  return 0;
}

}  // namespace collsim
