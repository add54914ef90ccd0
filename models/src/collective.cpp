#include "collsim/models/collective.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "text.hpp"

namespace collsim {

const char* collective_name(Collective collective) {
  switch (collective) {
    case Collective::AllReduce: return "all_reduce";
    case Collective::ReduceScatter: return "reduce_scatter";
    case Collective::AllGather: return "all_gather";
    case Collective::SendRecv: return "sendrecv";
  }
  return "unknown";
}

Collective parse_collective(std::string_view name, std::string_view what) {
  std::string_view base = text::trim(name);
  if (base.size() > 5 && base.substr(base.size() - 5) == "_perf") base.remove_suffix(5);
  for (const Collective c : kCollectives) {
    if (base == collective_name(c)) return c;
  }
  throw ConfigError(fmt::format("{}: unknown or unsupported collective '{}' (known: all_reduce, reduce_scatter, "
                                "all_gather, sendrecv)",
                                what, quote_excerpt(name)));
}

double bus_factor(Collective collective, std::uint64_t n) {
  if (n == 0) throw ConfigError(fmt::format("bus factor of {}: n = 0 ranks (must be at least 1)", collective_name(collective)));
  const auto ranks = static_cast<double>(n);
  switch (collective) {
    case Collective::AllReduce: return 2.0 * (ranks - 1.0) / ranks;
    case Collective::ReduceScatter:
    case Collective::AllGather: return (ranks - 1.0) / ranks;
    case Collective::SendRecv: return 1.0;
  }
  return 1.0;
}

}  // namespace collsim
