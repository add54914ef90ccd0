#include "collsim/experiments/arrival_trace_cli.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "collsim/models/formats/arrival_trace.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

void add_arrival_trace_options(ArgParser& parser) {
  parser
      .option("arrival-trace", "", "FILE",
              "replay observed arrivals: CSV iteration,rank,arrival_s or NCCL Inspector verbose JSON")
      .option("iteration", "", "K", "with --arrival-trace: only the iteration labelled K (default all)");
}

std::optional<ArrivalSpec> arrival_trace_from_flags(const ArgParser& parser, std::optional<std::uint32_t> n,
                                                    std::string_view command,
                                                    std::initializer_list<std::string_view> conflicts) {
  const auto file = parser.get_optional("arrival-trace");
  const auto iteration = parser.get_optional("iteration");
  if (!file) {
    if (iteration) throw ConfigError(fmt::format("{}: --iteration {} needs --arrival-trace FILE", command, *iteration));
    return std::nullopt;
  }
  for (std::string_view other : conflicts) {
    if (parser.get_optional(other)) {
      throw ConfigError(fmt::format("{}: give either --arrival-trace or --{}, not both", command, other));
    }
  }
  ArrivalSpec spec;
  spec.model = ArrivalModel::Trace;
  spec.trace_file = std::filesystem::absolute(*file).lexically_normal().string();
  spec.trace = std::make_shared<const ArrivalTrace>(read_arrival_trace(*file, n));
  if (iteration) spec.reduce_to_iteration(parse_unsigned(*iteration, "--iteration"));
  spec.validate(spec.trace->n, fmt::format("{} --arrival-trace", command));
  return spec;
}

}  // namespace collsim
