// The simgrid engine's process boundary: validation in the caller's process, the simulation in
// a forked child (SimGrid 3.32 supports one engine per process), the result back over a pipe.
#include "collsim/sim/simgrid_engine.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "child_process.hpp"
#include "execution_core.hpp"
#include "collsim/models/error.hpp"
#include "collsim/sim/run_checks.hpp"
#include "simgrid_simulation.hpp"

namespace collsim {
namespace {

// Pipe protocol: one status byte, then either the result or an error kind and message.
enum class Frame : std::uint8_t { Result = 0, ConfigError = 1, ScheduleError = 2, OtherError = 3 };

static_assert(std::is_trivially_copyable_v<TransferRecord>, "trace records cross the pipe as raw bytes");

void write_error(int fd, Frame kind, const std::string& message) {
  detail::write_value(fd, kind);
  detail::write_value<std::uint64_t>(fd, message.size());
  detail::write_all(fd, message.data(), message.size());
}

void write_result(int fd, const RunResult& result) {
  detail::write_value(fd, Frame::Result);
  detail::write_value<std::uint64_t>(fd, result.finish_s.size());
  detail::write_all(fd, result.finish_s.data(), result.finish_s.size() * sizeof(double));
  detail::write_value<std::uint64_t>(fd, result.transfers);
  detail::write_value<std::uint64_t>(fd, result.trace.size());
  detail::write_all(fd, result.trace.data(), result.trace.size() * sizeof(TransferRecord));
}

// The child's half: any exception becomes an error frame, rethrown with its type by the parent.
void child_run(int fd, const Schedule& schedule, const RunConfig& config, const std::vector<double>& arrival_s,
               const std::vector<double>& gate_s) {
  try {
    write_result(fd, detail::simulate_with_simgrid(schedule, config, arrival_s, gate_s));
  } catch (const ConfigError& e) {
    write_error(fd, Frame::ConfigError, e.what());
  } catch (const ScheduleError& e) {
    write_error(fd, Frame::ScheduleError, e.what());
  } catch (const std::exception& e) {
    write_error(fd, Frame::OtherError, e.what());
  }
}

RunResult read_result(int fd, std::size_t n) {
  const auto frame = detail::read_value<Frame>(fd);
  if (frame != Frame::Result) {
    const auto size = detail::read_value<std::uint64_t>(fd);
    std::string message(size, '\0');
    detail::read_exact(fd, message.data(), size);
    if (frame == Frame::ConfigError) throw ConfigError(message);
    if (frame == Frame::ScheduleError) throw ScheduleError(message);
    throw InternalError(fmt::format("simgrid engine: {}", message));
  }
  RunResult result;
  const auto ranks = detail::read_value<std::uint64_t>(fd);
  COLLSIM_ASSERT(ranks == n, fmt::format("{} finish times for {} ranks", ranks, n));
  result.finish_s.resize(ranks);
  detail::read_exact(fd, result.finish_s.data(), ranks * sizeof(double));
  result.transfers = detail::read_value<std::uint64_t>(fd);
  const auto records = detail::read_value<std::uint64_t>(fd);
  result.trace.resize(records);
  detail::read_exact(fd, result.trace.data(), records * sizeof(TransferRecord));
  return result;
}

class SimGridEngine final : public Engine {
 public:
  std::string_view name() const override { return "simgrid"; }
  bool builds_event_index(const Topology& /*topology*/, bool /*shares_ports*/) const override { return true; }

  RunResult run(const Schedule& schedule, const RunConfig& config) override {
    const detail::RunPlan plan(schedule, config);
    const Schedule& run = plan.schedule();
    const std::vector<double>& arrival_s = plan.arrival_s();
    for (std::size_t p = 0; p < run.phases.size(); ++p) {
      const Phase& phase = run.phases[p];
      for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
        for (const Transfer& t : phase.round(r)) check_transfer(run, t, p, r);
      }
    }

    RunResult result;
    if (run.num_transfers() == 0) {
      result.finish_s = arrival_s;
    } else {
      detail::run_in_child_process(
          "simgrid engine", [&](int fd) { child_run(fd, run, config, arrival_s, plan.gate_s()); },
          [&](int fd) { result = read_result(fd, run.n); });
    }
    result.engine = "simgrid";
    summarize_run(result, arrival_s);
    return result;
  }
};

}  // namespace

std::unique_ptr<Engine> make_simgrid_engine() { return std::make_unique<SimGridEngine>(); }

}  // namespace collsim
