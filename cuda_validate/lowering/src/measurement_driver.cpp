#include "collsim/cuda_validate/measurement_driver.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <functional>
#include <optional>

#include "collsim/algorithms/registry.hpp"
#include "collsim/cuda_validate/measurement_csv.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace collsim::cuda_validate {
namespace {

constexpr std::size_t kBytesPerElement = sizeof(float);

// One configuration: what to call and how to label its rows.
struct Configuration {
  std::string algorithm;
  std::optional<Collective> collective;  ///< nullopt: a local kernel, no collective
  Rank n = 0;
  std::uint64_t size_bytes = 0;
  double delay_s = 0.0;
  std::int64_t straggler = -1;
  std::function<IterationResult(bool gated)> run;
};

class Driver {
 public:
  Driver(const RunOptions& options, MeasurementBackend& backend, std::ostream* csv, std::ostream* micro_csv,
         std::ostream& log)
      : options_(options), backend_(backend), csv_(csv), micro_csv_(micro_csv), log_(log),
        info_(backend.device_info()) {
    COLLSIM_ASSERT(csv_ != nullptr || options_.algorithms.empty(), "AllReduce runs need a CSV stream");
    COLLSIM_ASSERT(micro_csv_ != nullptr || options_.micro.empty(), "micro-benchmarks need a CSV stream");
  }

  DriverSummary run() {
    if (!options_.algorithms.empty()) fmt::print(*csv_, "{}\n", kMeasurementCsvHeader);
    const bool header_written = !options_.algorithms.empty() && micro_csv_ == csv_;
    if (!options_.micro.empty() && !header_written) fmt::print(*micro_csv_, "{}\n", kMeasurementCsvHeader);
    for (const std::string& algorithm : options_.algorithms) {
      if (algorithm == kNcclAllReduceName) {
        run_nccl();
      } else {
        run_registry_algorithm(algorithm);
      }
    }
    for (MicroBenchmark micro : options_.micro) run_micro(micro);
    return summary_;
  }

 private:
  void skip(const std::string& line) {
    fmt::print(log_, "collsim-cuda: {}\n", line);
    summary_.skipped.push_back(line);
  }

  // Elements for `size` cut into multiples of `multiple`, or 0 (logged) when none fit.
  std::size_t usable_count(std::uint64_t size, std::size_t multiple, const std::string& what) {
    if (size / kBytesPerElement >= multiple) return element_count(size, multiple, what);
    skip(fmt::format("{}: size {} skipped (fewer than {} floats)", what, format_size(static_cast<double>(size)),
                     multiple));
    return 0;
  }

  void run_nccl() {
    for (std::uint64_t size : options_.sizes_bytes) {
      const std::size_t count = usable_count(size, 1, std::string(kNcclAllReduceName));
      if (count == 0) continue;
      for (double delay : options_.delays_s) {
        measure(Configuration{std::string(kNcclAllReduceName), Collective::AllReduce, options_.gpus,
                              count * kBytesPerElement, delay, options_.straggler, [=, this](bool gated) {
                                return backend_.run_nccl_allreduce(options_.gpus, count, options_.straggler, delay,
                                                                   gated);
                              }});
      }
    }
  }

  void run_registry_algorithm(const std::string& algorithm) {
    Schedule schedule = generate_schedule(algorithm, AlgorithmOptions{options_.gpus, options_.straggler, 0});
    if (find_algorithm(algorithm).relabel_at_run_time) {
      // The GPUs have no arrival word yet: the harness knows which rank it delays, so the
      // schedule is relabelled here for that rank, as the engines would (without the agreement).
      std::vector<Rank> order;
      for (Rank r = 0; r < options_.gpus; ++r) {
        if (r != options_.straggler) order.push_back(r);
      }
      order.push_back(options_.straggler);
      schedule.relabel(run_time_relabelling(schedule, order));
    }
    // ncclReduceScatter needs equal blocks, and each block must start on 16 bytes like the
    // chunks of chunk_split.hpp: round to whole 16-byte units per chunk in that mode.
    const LoweringOptions probe = lowering_options_for(options_, schedule, 0);
    const std::size_t multiple =
        probe.nccl_reduce_scatter_phase.empty() ? 1 : kChunkAlignElements * schedule.num_chunks;
    for (std::uint64_t size : options_.sizes_bytes) {
      const std::size_t count = usable_count(size, multiple, algorithm);
      if (count == 0) continue;
      const LoweredSchedule lowered = lower_schedule(schedule, lowering_options_for(options_, schedule, count));
      for (double delay : options_.delays_s) {
        measure(Configuration{algorithm, Collective::AllReduce, options_.gpus, count * kBytesPerElement, delay,
                              options_.straggler,
                              [&lowered, delay, this](bool gated) {
                                return backend_.run_schedule(lowered, options_.straggler, delay, gated);
                              }});
      }
    }
  }

  void run_micro(MicroBenchmark micro) {
    const std::string name(micro_benchmark_name(micro));
    std::vector<Rank> ready;
    for (Rank r = 0; r < options_.gpus; ++r) {
      if (r != options_.straggler) ready.push_back(r);
    }
    if (micro == MicroBenchmark::Empty) {
      // One frame per participant count: every time_s carries the frame of its own n.
      for (Rank n = 1; n <= options_.gpus; ++n) {
        std::vector<Rank> ranks(n);
        for (Rank r = 0; r < n; ++r) ranks[r] = r;
        measure(Configuration{name, std::nullopt, n, kBytesPerElement, 0.0, -1,
                              [ranks, this](bool gated) { return backend_.run_empty(ranks, gated); }});
      }
      return;
    }
    if (micro == MicroBenchmark::ReduceScatter && ready.size() < 2) {
      skip(fmt::format("{}: skipped, a ReduceScatter needs 2 ready ranks and --gpus {} --straggler {} leaves {}", name,
                       options_.gpus, options_.straggler, ready.size()));
      return;
    }
    for (std::uint64_t size : options_.sizes_bytes) {
      // Blocks on 16-byte boundaries, as the chunks of the schedules.
      const std::size_t multiple = micro == MicroBenchmark::ReduceScatter ? kChunkAlignElements * ready.size() : 1;
      const std::size_t count = usable_count(size, multiple, name);
      if (count == 0) continue;
      if (micro == MicroBenchmark::P2p) {
        measure(Configuration{name, Collective::SendRecv, 2, count * kBytesPerElement, 0.0, -1,
                              [=, this](bool gated) { return backend_.run_p2p(count, gated); }});
      } else if (micro == MicroBenchmark::Reduce) {
        measure(Configuration{name, std::nullopt, 1, count * kBytesPerElement, 0.0, -1,
                              [=, this](bool gated) { return backend_.run_reduce_kernel(count, gated); }});
      } else {
        measure(Configuration{name, Collective::ReduceScatter, static_cast<Rank>(ready.size()),
                              count * kBytesPerElement, 0.0, -1,
                              [=, this](bool gated) { return backend_.run_reduce_scatter(ready, count, gated); }});
      }
    }
  }

  void measure(const Configuration& config) {
    std::ostream& out = config.collective == Collective::AllReduce ? *csv_ : *micro_csv_;
    ++summary_.configurations;
    const std::string label = fmt::format("{} n={} size={} delay={}", config.algorithm, config.n,
                                          format_size(static_cast<double>(config.size_bytes)),
                                          format_duration(config.delay_s));
    std::vector<MeasurementRow> rows;
    std::vector<bool> launches;
    if (options_.launch != LaunchMode::Ungated) launches.push_back(true);
    if (options_.launch != LaunchMode::Gated) launches.push_back(false);
    const std::uint32_t total = options_.warmup + options_.iters;
    for (std::uint32_t i = 0; i < total; ++i) {
      for (bool gated : launches) {
        const IterationResult result = config.run(gated);
        if (result.mismatches != 0) {
          const std::string failure = fmt::format(
              "WRONG RESULT {} ({} iteration {}, {}): {} mismatching elements, first: {}", label,
              i < options_.warmup ? "warm-up" : "measured", i < options_.warmup ? i : i - options_.warmup,
              launch_name(gated), result.mismatches, result.first_mismatch);
          fmt::print(log_, "collsim-cuda: {}\n", failure);
          summary_.failures.push_back(failure);
          return;
        }
        if (i < options_.warmup) continue;
        MeasurementRow row;
        row.algorithm = config.algorithm;
        row.n = config.n;
        row.size_bytes = config.size_bytes;
        row.delay_s = config.delay_s;
        row.straggler = config.straggler;
        row.iteration = i - options_.warmup;
        row.time_s = result.time_s;
        row.launch = std::string(launch_name(gated));
        row.nccl_algo = options_.nccl_algo;
        row.nccl_proto = options_.nccl_proto;
        row.device = info_.device;
        row.driver_version = info_.driver_version;
        row.nccl_version = info_.nccl_version;
        compute_bandwidths(row, config.collective);
        rows.push_back(std::move(row));
      }
    }
    for (const MeasurementRow& row : rows) fmt::print(out, "{}\n", format_measurement_csv_row(row));
    out.flush();
    summary_.rows += rows.size();

    // The progress line summarises the first launch mode (gated unless --launch ungated).
    std::vector<const MeasurementRow*> sorted;
    for (const auto& row : rows) {
      if (row.launch == rows.front().launch) sorted.push_back(&row);
    }
    std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->time_s < b->time_s; });
    const MeasurementRow& median = *sorted[sorted.size() / 2];
    fmt::print(log_, "{:<60} median {:>12}  min {:>12}  algbw {:8.2f} GB/s  busbw {:8.2f} GB/s\n", label,
               format_duration(median.time_s), format_duration(sorted.front()->time_s), median.algbw_GBps,
               median.busbw_GBps);
  }

  const RunOptions& options_;
  MeasurementBackend& backend_;
  std::ostream* csv_;
  std::ostream* micro_csv_;
  std::ostream& log_;
  DeviceInfo info_;
  DriverSummary summary_;
};

}  // namespace

LoweringOptions lowering_options_for(const RunOptions& options, const Schedule& schedule, std::size_t count) {
  LoweringOptions lowering;
  lowering.count = count;
  if (options.phase1 == Phase1Mode::Nccl && has_ready_reduce_scatter(schedule)) {
    lowering.nccl_reduce_scatter_phase = std::string(kReadyReduceScatterPhase);
  }
  return lowering;
}

std::size_t element_count(std::uint64_t size_bytes, std::size_t multiple, std::string_view what) {
  const std::size_t elements = size_bytes / kBytesPerElement / multiple * multiple;
  if (elements == 0) {
    throw ConfigError(fmt::format("{}: size {} bytes holds fewer than {} float elements", what, size_bytes, multiple));
  }
  return elements;
}

void check_schedules(const RunOptions& options) {
  bool uses_reduce_scatter = false;
  for (MicroBenchmark micro : options.micro) uses_reduce_scatter |= micro == MicroBenchmark::ReduceScatter;
  for (const std::string& algorithm : options.algorithms) {
    if (algorithm == kNcclAllReduceName) continue;
    const Schedule schedule = generate_schedule(algorithm, AlgorithmOptions{options.gpus, options.straggler, 0});
    const LoweringOptions lowering =
        lowering_options_for(options, schedule, kChunkAlignElements * schedule.num_chunks);
    const LoweredSchedule lowered = lower_schedule(schedule, lowering);
    uses_reduce_scatter |= !lowered.collectives.empty();
  }
  check_nccl_algo(options, uses_reduce_scatter);
}

DriverSummary run_measurements(const RunOptions& options, MeasurementBackend& backend, std::ostream* csv,
                               std::ostream* micro_csv, std::ostream& log) {
  return Driver(options, backend, csv, micro_csv, log).run();
}

}  // namespace collsim::cuda_validate
