// `collsim algorithms`: the algorithm table (algorithms/registry.hpp) as an aligned text table
// or as JSON, so that scripts and plots read the list instead of keeping their own copy.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <ostream>
#include <string>
#include <vector>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/models/formats/json.hpp"

namespace collsim {
namespace {

const char* yes_no(bool value) { return value ? "yes" : "no"; }

std::string pipeline_text(const AlgorithmInfo& info) {
  return info.default_pipeline_chunks > 0 ? fmt::format("{}", info.default_pipeline_chunks) : std::string("-");
}

std::string algorithms_text() {
  constexpr std::size_t kColumns = 7;
  const std::array<std::string, kColumns> header{"name", "role", "straggler_aware", "hierarchical", "closed_form",
                                                 "pipeline", "supported n"};
  std::vector<std::array<std::string, kColumns>> rows;
  for (const AlgorithmInfo& info : all_algorithms()) {
    rows.push_back({std::string(info.name), algorithm_role_name(info.role), yes_no(info.straggler_aware),
                    yes_no(info.hierarchical), yes_no(info.has_closed_form()), pipeline_text(info),
                    std::string(info.supported_n)});
  }
  std::array<std::size_t, kColumns> width{};
  for (std::size_t c = 0; c < kColumns; ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  const auto line = [&](const std::array<std::string, kColumns>& cells) {
    std::string text;
    for (std::size_t c = 0; c < kColumns; ++c) {
      // The last column is not padded, so no line ends in spaces.
      text += c + 1 < kColumns ? fmt::format("{:<{}}  ", cells[c], width[c]) : cells[c];
    }
    return text + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  out += "\n";
  for (const AlgorithmInfo& info : all_algorithms()) {
    out += fmt::format("{}: {}\n  reference: {}\n", info.name, info.summary, info.reference);
  }
  return out;
}

std::string algorithms_json() {
  std::string out = "[";
  for (const AlgorithmInfo& info : all_algorithms()) {
    out += fmt::format(
        "{}\n  {{\"name\":{},\"summary\":{},\"reference\":{},\"role\":\"{}\",\"straggler_aware\":{},"
        "\"hierarchical\":{},\"needs_switch_reduction\":{},\"closed_form\":{},\"closed_form_any_late_rank\":{},"
        "\"relabel_at_run_time\":{},\"nccl_candidate\":{},\"nccl_simple_only\":{},\"chosen_per_run\":{},"
        "\"supported_n\":{},\"default_pipeline_chunks\":{}}}",
        out.size() > 1 ? "," : "", json_string(info.name), json_string(info.summary), json_string(info.reference),
        algorithm_role_name(info.role), info.straggler_aware, info.hierarchical, info.needs_switch_reduction,
        info.has_closed_form(), info.closed_form_any_late_rank, info.relabel_at_run_time, info.nccl_candidate,
        info.nccl_simple_only, info.chosen_per_run, json_string(info.supported_n),
        info.default_pipeline_chunks > 0 ? fmt::format("{}", info.default_pipeline_chunks) : std::string("null"));
  }
  return out + "\n]\n";
}

}  // namespace

int algorithms_command(const Args& args, std::ostream& out) {
  ArgParser parser("algorithms",
                   "Print the algorithm table: every AllReduce algorithm collsim knows, with its summary, paper "
                   "reference, role, whether it is straggler-aware or hierarchical, whether it has a closed form, its "
                   "default pipeline depth and the rank counts it supports.");
  parser.flag("json",
              "print a JSON list of objects {name, summary, reference, role, straggler_aware, hierarchical, "
              "needs_switch_reduction (runs only where the NVSwitch reduces: topology switch_reduction), closed_form, "
              "closed_form_any_late_rank, relabel_at_run_time, nccl_candidate (a row `nccl` picks among), "
              "nccl_simple_only (`nccl` prices it under Simple only), "
              "chosen_per_run (`nccl` itself), supported_n, default_pipeline_chunks (null: not "
              "pipelined)}");
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  out << (parser.flag_set("json") ? algorithms_json() : algorithms_text());
  return 0;
}

}  // namespace collsim
