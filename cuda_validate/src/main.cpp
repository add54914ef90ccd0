// collsim-cuda: runs collsim schedules and native NCCL on the GPUs of one node and writes the
// measurements CSV that `collsim calibrate` fits. See cuda_validate/README.md.
//
// Exit codes: 0 success; 1 CUDA, NCCL, file or internal error; 2 bad command line, or an
// algorithm that does not support --gpus; 3 no CUDA device available (or fewer than --gpus);
// 4 a result failed validation (the CSV holds only the validated configurations).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "collsim/cuda_validate/gpu_runner.hpp"
#include "collsim/cuda_validate/measurement_driver.hpp"
#include "collsim/cuda_validate/run_options.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoDevice = 3;
constexpr int kExitWrongResult = 4;

int run(const collsim::cuda_validate::RunOptions& options) {
  using namespace collsim::cuda_validate;
  // Each CSV is opened only when something goes into it (so --algo none leaves no empty file).
  std::ofstream file;
  std::ofstream micro_file;
  const auto open = [](std::ofstream& f, const std::string& path, bool needed, const char* flag) -> std::ostream* {
    if (!needed) return nullptr;
    if (path == "-") return &std::cout;
    f.open(path);
    if (!f) throw collsim::ConfigError(fmt::format("{}: cannot open '{}' for writing", flag, path));
    return &f;
  };
  std::ostream* csv = open(file, options.out, !options.algorithms.empty(), "--out");
  std::ostream* micro_csv = open(micro_file, options.micro_out, !options.micro.empty(), "--micro-out");

  GpuRunner runner(options.gpus, options.gate);
  const DeviceInfo info = runner.device_info();
  const char* nccl_algo = std::getenv("NCCL_ALGO");
  fmt::print(std::cerr, "collsim-cuda: {} x {} (driver {}, NCCL {}), NCCL_ALGO={}, StragglAR phase 1: {}{}\n",
             options.gpus, info.device, info.driver_version, info.nccl_version,
             nccl_algo != nullptr ? nccl_algo : "(unset)",
             options.phase1 == Phase1Mode::Nccl ? "ncclReduceScatter" : "schedule rounds",
             options.gate ? ", gated launch" : "");

  const DriverSummary summary = run_measurements(options, runner, csv, micro_csv, std::cerr);
  for (auto [f, path] : {std::pair{&file, &options.out}, std::pair{&micro_file, &options.micro_out}}) {
    if (!f->is_open()) continue;
    f->close();
    if (f->fail()) throw collsim::ConfigError(fmt::format("writing '{}' failed", *path));
  }
  fmt::print(std::cerr, "collsim-cuda: wrote {} rows for {} configurations to {}{}{}\n", summary.rows,
             summary.configurations, csv != nullptr ? options.out : "",
             csv != nullptr && micro_csv != nullptr ? " and " : "", micro_csv != nullptr ? options.micro_out : "");
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
    check_schedules(options);
  } catch (const collsim::Error& e) {
    fmt::print(stderr, "collsim-cuda: {}\n", e.what());
    return kExitUsage;
  }

  const DeviceProbe probe = probe_devices();
  if (!probe.available()) {
    fmt::print(stderr, "collsim-cuda: no CUDA device available ({})\n", probe.reason());
    return kExitNoDevice;
  }
  if (probe.count < static_cast<int>(options.gpus)) {
    fmt::print(stderr, "collsim-cuda: only {} CUDA device(s) available, --gpus {} requested\n", probe.count,
               options.gpus);
    return kExitNoDevice;
  }

  try {
    return run(options);
  } catch (const collsim::Error& e) {
    fmt::print(stderr, "collsim-cuda: error: {}\n", e.what());
    return kExitError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "collsim-cuda: unexpected error: {}\n", e.what());
    return kExitError;
  }
}
