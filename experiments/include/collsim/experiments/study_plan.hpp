// What a study would run, worked out without simulating anything: `collsim run --dry-run`.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/experiments/runner.hpp"
#include "collsim/experiments/sweep.hpp"

namespace collsim {

struct StudyPlan {
  std::size_t points = 0;          ///< the cartesian product of the axes
  std::size_t active_points = 0;   ///< points that run (not skipped as unsupported)
  std::size_t runs = 0;            ///< active points x trials (engine runs, before the no-delay references)
  std::size_t work_units = 0;      ///< blocks of trials handed to processes (make_units)
  std::size_t topologies = 0;      ///< distinct (topology, n, link) instances built
  std::vector<std::string> engines;  ///< the engines the points run, resolved ("auto" never), first use first
  /// Rough CPU time of the whole study (transfers per run, estimate_transfers, times the
  /// engine's cpu_s_per_transfer), seconds; a lower bound on congested fabrics.
  double cpu_s = 0;
  double journal_bytes = 0;          ///< size the checkpoint journal grows to (resource_estimate.hpp)
  double max_schedule_bytes = 0;     ///< memory of the largest schedule (estimated)
  /// Memory of the largest run: its schedule and, where its engine builds one on its topology,
  /// the event-driven index of it (run_bytes; estimated).
  double max_run_bytes = 0;
  std::string largest_run;           ///< which point that is: "ring at n = 16384 on T (replay)"
};

/// Resolves every active point of `grid` as run_study would before simulating it: builds its
/// topology (topology_at for its n and size), its arrival model, and the engine it runs
/// (through `factory`, or make_engine when empty, so an engine missing from this build fails).
/// Throws ConfigError naming the point's topology or engine when one cannot be built.
StudyPlan plan_study(const SweepGrid& grid, const EngineFactory& factory = {});

/// How much memory one run of a study may use: --max-run-memory's value (`option`, at most this
/// machine's memory: memory_cap_bytes, which throws ConfigError), else this machine's memory
/// (0 when unknown: no limit). `name` says where it comes from in a refusal.
struct RunMemoryLimit {
  double bytes = 0;
  std::string name;  ///< "--max-run-memory 4GiB" or "this machine's 23.4 GiB of memory"
  bool from_option = false;
};
RunMemoryLimit run_memory_limit(const std::optional<std::string>& option);

/// Empty when the largest run of `plan` fits under `limit`; else the refusal, for `command`
/// (run, advise) ending with `remedy` (what the user can change). Why refuse: a run that cannot
/// fit grows for minutes and ends in "out of memory", naming nothing, or in the OOM killer.
std::string run_memory_refusal(const StudyPlan& plan, const RunMemoryLimit& limit, std::string_view command,
                               std::string_view remedy);

}  // namespace collsim
