#include "collsim/experiments/arrival_trace_cli.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "collsim/models/formats/arrival_trace.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

void add_trace_reading_options(ArgParser& parser) {
  parser
      .option("communicator", "", "ID",
              "NCCL Inspector traces: only the collectives of this communicator (header.id), when a file holds several")
      .flag("skip-incomplete", "drop trace iterations that lack a rank (and an unfinished last JSON line) instead of "
                               "refusing the trace");
}

ArrivalTraceOptions trace_options_from_flags(const ArgParser& parser, std::string_view command,
                                             std::string_view file_option) {
  ArrivalTraceOptions options;
  options.communicator = parser.get_optional("communicator");
  options.skip_incomplete = parser.flag_set("skip-incomplete");
  // (An empty --communicator never gets here: ArgParser refuses empty values.)
  const char* given = options.communicator ? "communicator" : options.skip_incomplete ? "skip-incomplete" : nullptr;
  if (!file_option.empty() && given) {
    throw ConfigError(fmt::format("{}: --{} needs --{} FILE", command, given, file_option));
  }
  return options;
}

void print_trace_warnings(const ArrivalTrace& trace, std::ostream& err) {
  for (const std::string& w : trace.warnings) err << fmt::format("collsim: warning: {}: {}\n", trace.source, w);
}

void add_arrival_trace_options(ArgParser& parser) {
  parser
      .option("arrival-trace", "", "FILE",
              "replay observed arrivals: CSV iteration,rank,arrival_s or NCCL Inspector verbose JSON")
      .option("iteration", "", "K", "with --arrival-trace: only the iteration labelled K (default all)");
  add_trace_reading_options(parser);
}

std::optional<ArrivalSpec> arrival_trace_from_flags(const ArgParser& parser, std::optional<std::uint32_t> n,
                                                    std::string_view command,
                                                    std::initializer_list<std::string_view> conflicts) {
  const auto file = parser.get_optional("arrival-trace");
  const auto iteration = parser.get_optional("iteration");
  if (!file) {
    if (iteration) throw ConfigError(fmt::format("{}: --iteration {} needs --arrival-trace FILE", command, *iteration));
    trace_options_from_flags(parser, command, "arrival-trace");  // refuses the reading options alone
    return std::nullopt;
  }
  if (file->empty()) throw ConfigError(fmt::format("{}: --arrival-trace needs a file name", command));
  const ArrivalTraceOptions options = trace_options_from_flags(parser, command, "");
  for (std::string_view other : conflicts) {
    if (parser.get_optional(other)) {
      throw ConfigError(fmt::format("{}: give either --arrival-trace or --{}, not both", command, other));
    }
  }
  ArrivalSpec spec;
  spec.model = ArrivalModel::Trace;
  spec.trace_file = std::filesystem::absolute(*file).lexically_normal().string();
  spec.trace = std::make_shared<const ArrivalTrace>(read_arrival_trace(*file, n, options));
  spec.trace_options = options;
  print_trace_warnings(*spec.trace, std::cerr);
  if (iteration) spec.reduce_to_iteration(parse_unsigned(*iteration, "--iteration"));
  spec.validate(spec.trace->n, fmt::format("{} --arrival-trace", command));
  return spec;
}

}  // namespace collsim
