// collsim-cuda: runs collsim schedules and native NCCL on the GPUs of one node and writes the
// measurements CSV that `collsim calibrate` fits. See cuda_validate/README.md.
//
// Exit codes: 0 success; 1 CUDA, NCCL, file or internal error, or a broken CUDA installation
// (a driver older than the runtime, ...); 2 bad command line, an algorithm that does not support
// --gpus, or an NCCL_ALGO that would change a collective it was not meant for; 3 no CUDA device
// (no driver, no GPU) or fewer than --gpus; 4 a result failed validation (the CSV holds only the
// validated configurations); 5 the GPUs hung (no finish within --timeout) or NCCL reported an
// asynchronous error, and the communicators were aborted.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "collsim/cuda_validate/gpu_runner.hpp"
#include "collsim/cuda_validate/measurement_driver.hpp"
#include "collsim/cuda_validate/pending_file.hpp"
#include "collsim/cuda_validate/run_options.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitWrongResult = 4;
constexpr int kExitHang = 5;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

int run(const collsim::cuda_validate::RunOptions& options) {
  using namespace collsim::cuda_validate;
  // Each CSV is created only when something goes into it (so --algo none leaves no empty file),
  // as a temporary file renamed at the end: a failed run leaves the previous CSVs alone.
  std::optional<PendingFile> file;
  std::optional<PendingFile> micro_file;
  const auto open = [](std::optional<PendingFile>& f, const std::string& path, bool needed,
                       const char* flag) -> std::ostream* {
    if (!needed) return nullptr;
    if (path == "-") return &std::cout;
    f.emplace(path, flag);
    return &f->stream();
  };
  std::ostream* csv = open(file, options.out, !options.algorithms.empty(), "--out");
  std::ostream* micro_csv = open(micro_file, options.micro_out, !options.micro.empty(), "--micro-out");

  GpuRunner runner(options.gpus, options.timeout_s);
  const DeviceInfo info = runner.device_info();
  check_nccl_algo_version(options, info.nccl_version);
  fmt::print(std::cerr, "collsim-cuda: {} x {} (driver {}, NCCL {}), NCCL_ALGO={}, NCCL_PROTO={}, StragglAR phase 1: "
             "{}, launch: {}\n",
             options.gpus, info.device, info.driver_version, info.nccl_version,
             options.nccl_algo.empty() ? "(unset)" : options.nccl_algo,
             options.nccl_proto.empty() ? "(unset)" : options.nccl_proto,
             options.phase1 == Phase1Mode::Nccl ? "ncclReduceScatter" : "schedule rounds",
             options.launch == LaunchMode::Gated     ? "gated"
             : options.launch == LaunchMode::Ungated ? "ungated"
                                                     : "both");

  const DriverSummary summary = run_measurements(options, runner, csv, micro_csv, std::cerr);
  if (file) file->commit();
  if (micro_file) micro_file->commit();
  fmt::print(std::cerr, "collsim-cuda: wrote {} rows for {} configurations to {}{}{}\n", summary.rows,
             summary.configurations, csv != nullptr ? options.out : "",
             csv != nullptr && micro_csv != nullptr ? " and " : "", micro_csv != nullptr ? options.micro_out : "");
  if (!summary.skipped.empty()) {
    fmt::print(std::cerr, "collsim-cuda: {} configuration(s) skipped (listed above)\n", summary.skipped.size());
  }
  if (!summary.ok()) {
    fmt::print(std::cerr, "collsim-cuda: {} configuration(s) produced a WRONG RESULT; their rows were not written\n",
               summary.failures.size());
    return kExitWrongResult;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace collsim::cuda_validate;
  RunOptions options;
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    options = parse_run_options(args);
    if (options.help) {
      fmt::print("{}", run_options_usage());
      return 0;
    }
    options.nccl_algo = environment("NCCL_ALGO");
    options.nccl_proto = environment("NCCL_PROTO");
    check_schedules(options);
  } catch (const collsim::Error& e) {
    fmt::print(stderr, "collsim-cuda: {}\n", e.what());
    return kExitUsage;
  }

  const DeviceProbe probe = probe_devices();
  if (probe.outcome == DeviceProbe::Outcome::Broken) {
    fmt::print(stderr, "collsim-cuda: error: {}\n", probe.reason);
    return kExitError;
  }
  if (!probe.available()) {
    fmt::print(stderr, "collsim-cuda: no CUDA device available ({})\n", probe.reason);
    return kExitNoDevice;
  }
  if (probe.count < static_cast<int>(options.gpus)) {
    fmt::print(stderr, "collsim-cuda: only {} CUDA device(s) available, --gpus {} requested\n", probe.count,
               options.gpus);
    return kExitNoDevice;
  }

  try {
    return run(options);
  } catch (const GpuHangError& e) {
    fmt::print(stderr, "collsim-cuda: error: {}\n", e.what());
    return kExitHang;
  } catch (const collsim::Error& e) {
    fmt::print(stderr, "collsim-cuda: error: {}\n", e.what());
    return kExitError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "collsim-cuda: unexpected error: {}\n", e.what());
    return kExitError;
  }
}
