// The collectives collsim can explain with a schedule, their names (as nccl-tests spells them)
// and nccl-tests' bus-bandwidth factor, shared by the nccl-tests reader, the engines' metrics
// and collsim-cuda's measurement CSV.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace collsim {

enum class Collective : std::uint8_t { AllReduce, ReduceScatter, AllGather, SendRecv };

/// Every collective, in the order of the enum (for lookups by name).
inline constexpr std::array<Collective, 4> kCollectives{Collective::AllReduce, Collective::ReduceScatter,
                                                        Collective::AllGather, Collective::SendRecv};

/// "all_reduce", "reduce_scatter", "all_gather", "sendrecv".
const char* collective_name(Collective collective);

/// Parses a collective name: the names above, also with the nccl-tests "_perf" suffix.
/// Throws ConfigError naming `what` and the text, listing the known names.
Collective parse_collective(std::string_view name, std::string_view what = "collective");

/// busbw / algbw as nccl-tests computes it for `collective` on n ranks: AllReduce 2(n-1)/n,
/// ReduceScatter and AllGather (n-1)/n, SendRecv 1. Throws ConfigError for n == 0.
double bus_factor(Collective collective, std::uint64_t n);

}  // namespace collsim
