// `collsim verify`: the verifier plus the reference executor over algorithms and rank counts.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <ostream>
#include <unordered_set>

#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"
#include "collsim/experiments/args.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/models/error.hpp"

namespace collsim {

int verify_command(const Args& args, std::ostream& out) {
  ArgParser parser("verify", "Check schedules with the symbolic verifier and the CPU reference executor.");
  parser.option("algo", "-a", "all|NAME[,NAME...]", "algorithms to check", "all")
      .option("n", "-n", "RANGE", "rank counts: '2..64', '4,8,16' or '8'", "2..64")
      .option("straggler", "", "RANK", "expected straggler (default n-1)")
      .option("elements", "", "K", "elements per chunk in the reference executor", "1")
      .option("gpus-per-node", "", "G", "node size for hierarchical algorithms (they check every n that G divides)");
  if (!parser.parse(args)) {
    out << parser.help();
    return 0;
  }
  std::vector<std::string> names;
  const std::string algo = parser.get("algo");
  if (algo == "all") {
    for (const auto& a : all_algorithms()) names.emplace_back(a.name);
  } else {
    std::size_t start = 0;
    while (start <= algo.size()) {
      const auto comma = algo.find(',', start);
      std::string name = algo.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      find_algorithm(name);  // reject unknown names before running anything
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  auto ns = parse_uint_list(parser.get("n"), "--n");
  // A value given twice ('-n 8,8', '2..8,4') is checked once: the report counts pairs, not words.
  {
    std::vector<unsigned long long> unique;
    std::unordered_set<unsigned long long> seen;
    for (const auto n : ns) {
      if (seen.insert(n).second) unique.push_back(n);
    }
    ns = std::move(unique);
  }
  for (const auto n : ns) {
    // As everywhere else: n < 2 is an error, not a skipped pair that leaves "0 passed" and exit 0.
    if (n < 2) throw ConfigError(fmt::format("verify: --n {} is not supported (an AllReduce needs n >= 2)", n));
    if (n > std::numeric_limits<Rank>::max()) {
      throw ConfigError(fmt::format("verify: --n {} is too large (at most {})", n, std::numeric_limits<Rank>::max()));
    }
  }
  const auto elements = parse_unsigned(parser.get("elements"), "--elements");
  if (elements == 0) throw ConfigError("verify: --elements must be at least 1");
  std::uint32_t gpus_per_node = 0;
  if (auto g = parser.get_optional("gpus-per-node")) {
    gpus_per_node = parse_u32(*g, "--gpus-per-node");
    if (gpus_per_node == 0) throw ConfigError("verify: --gpus-per-node 0: a node has at least 1 GPU");
  }
  std::optional<Rank> straggler;
  if (auto s = parser.get_optional("straggler")) {
    const auto rank = parse_unsigned(*s, "--straggler");
    // As in `schedule`: a rank outside some n is an error, not a silently skipped case.
    const auto smallest = std::find_if(ns.begin(), ns.end(), [](unsigned long long n) { return n >= 2; });
    if (smallest != ns.end() && rank >= *smallest) {
      throw ConfigError(fmt::format("verify: --straggler {} is not a rank of n = {} (ranks 0..{})", rank, *smallest,
                                    *smallest - 1));
    }
    straggler = static_cast<Rank>(rank);
  }

  constexpr double kVerifyLimitBytes = 4.0 * (1ull << 30);  // simulate's default --max-schedule-memory
  // Refused before anything runs, as simulate refuses it: -n 100000 ran out of memory, and a
  // range up to it ran for hours first. A schedule grows with n: the largest n decides.
  const auto largest_n = static_cast<Rank>(*std::max_element(ns.begin(), ns.end()));
  for (const auto& name : names) {
    const AlgorithmOptions options{largest_n, std::nullopt, 0, gpus_per_node};
    if (const auto transfers = estimate_transfers(name, options); transfers && schedule_bytes(*transfers) > kVerifyLimitBytes) {
      throw ConfigError(fmt::format("verify: {} at n = {} needs about {} for its schedule, above {}; lower --n", name,
                                    largest_n, rough_size(schedule_bytes(*transfers)), rough_size(kVerifyLimitBytes)));
    }
  }
  std::size_t passed = 0, failed = 0, skipped = 0;
  std::string first_skip;  // why the first skipped pair was skipped, for the error when all were
  for (const auto& name : names) {
    const AlgorithmInfo& info = find_algorithm(name);
    for (const auto n64 : ns) {
      const auto n = static_cast<Rank>(n64);
      NConstraintContext context;
      if (gpus_per_node > 0) context.gpus_per_node = gpus_per_node;
      if (const std::string reason = info.unsupported_reason(n, context); !reason.empty()) {
        if (skipped++ == 0) first_skip = fmt::format("{} at n = {}: {}", name, n, reason);
        continue;
      }
      // Refused before anything is built, as simulate refuses it: -n 100000 or --elements 10^9
      // ran out of memory (the schedule, then a buffer per rank of chunks x elements doubles).
      const AlgorithmOptions options{n, straggler, 0, gpus_per_node};
      const Schedule s = generate_schedule(name, options);
      const double buffers_bytes = static_cast<double>(s.n) * static_cast<double>(s.num_chunks) *
                                   static_cast<double>(elements) * sizeof(double);
      if (buffers_bytes > kVerifyLimitBytes) {
        throw ConfigError(fmt::format("verify: {} at n = {} with --elements {} needs about {} for the reference "
                                      "executor's buffers ({} ranks x {} chunks x {} elements), above {}; lower --elements "
                                      "or --n",
                                      name, n, elements, rough_size(buffers_bytes), s.n, s.num_chunks, elements,
                                      rough_size(kVerifyLimitBytes)));
      }
      const auto diags = verify_schedule(s, 5);
      const auto ref = execute_reference(s, elements);
      if (diags.empty() && ref.correct) {
        ++passed;
        out << fmt::format("ok    {:<28} n={:<5} rounds={:<6} transfers={}\n", name, n, s.num_rounds(), s.num_transfers());
      } else {
        ++failed;
        out << fmt::format("FAIL  {:<28} n={:<5} {}\n", name, n,
                           diags.empty() ? "reference executor: " + ref.first_mismatch : format_diagnostic(s, diags[0]));
      }
    }
  }
  if (passed + failed == 0) {
    // "0 passed, 0 failed" and exit 0 read as success with nothing checked.
    throw ConfigError(
        fmt::format("verify: no (algorithm, n) pair given is supported, so nothing was checked ({} "
                    "skipped; {}{})",
                    skipped, skipped > 1 ? "the first, " : "", first_skip));
  }
  if (skipped > 0) out << fmt::format("({} unsupported (algorithm, n) pairs skipped)\n", skipped);
  out << fmt::format("{} passed, {} failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace collsim
