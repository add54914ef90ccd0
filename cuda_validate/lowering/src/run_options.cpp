#include "collsim/cuda_validate/run_options.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <optional>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/units.hpp"

namespace collsim::cuda_validate {
namespace {

constexpr std::size_t kMaxSizes = 256;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = text.find(separator, start);
    items.push_back(text.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return items;
    start = pos + 1;
  }
}

std::uint64_t parse_unsigned(std::string_view text, std::string_view flag) {
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) {
    throw ConfigError(fmt::format("{}: '{}' is not a non-negative integer", flag, text));
  }
  return value;
}

std::uint64_t parse_one_size(std::string_view text) {
  // Bare byte counts as in nccl-tests (-b 1001); the checks below name the rules.
  const double bytes = parse_size_bytes(text, "--sizes", BareNumber::BaseUnit);
  if (bytes < 4 || bytes != std::floor(bytes) || bytes > 1e15) {
    throw ConfigError(fmt::format("--sizes: '{}' must be a whole number of bytes, at least 4B", text));
  }
  const auto value = static_cast<std::uint64_t>(bytes);
  if (value % 4 != 0) {
    throw ConfigError(fmt::format("--sizes: '{}' = {} bytes is not a multiple of 4 bytes (buffers hold floats)",
                                  text, value));
  }
  return value;
}

MicroBenchmark parse_micro(std::string_view name) {
  if (name == "p2p") return MicroBenchmark::P2p;
  if (name == "reduce") return MicroBenchmark::Reduce;
  if (name == "reduce_scatter") return MicroBenchmark::ReduceScatter;
  if (name == "empty") return MicroBenchmark::Empty;
  throw ConfigError(
      fmt::format("--micro: unknown micro-benchmark '{}' (known: p2p, reduce, reduce_scatter, empty, all)", name));
}

std::vector<std::string> parse_algorithms(std::string_view text) {
  std::vector<std::string> names;
  if (text == "none") return names;
  for (std::string_view name : split(text, ',')) {
    if (name.empty()) throw ConfigError(fmt::format("--algo: empty name in '{}'", text));
    if (name != kNcclAllReduceName) {
      const AlgorithmInfo* info = nullptr;
      try {
        info = &find_algorithm(name);
      } catch (const ConfigError& e) {
        throw ConfigError(fmt::format("--algo: {}; or '{}' for native ncclAllReduce", e.what(), kNcclAllReduceName));
      }
      if (info->needs_switch_reduction) {
        throw ConfigError(fmt::format("--algo: {} reduces in the NVSwitch, which collsim-cuda cannot run (it issues "
                                      "only GPU-to-GPU transfers, no multimem/NVLS); '{}' runs NCCL's own choice",
                                      name, kNcclAllReduceName));
      }
    }
    names.emplace_back(name);
  }
  return names;
}

std::string default_micro_out(std::string_view out) {
  if (out == "-") return std::string(out);
  const std::string_view stem = out.ends_with(".csv") ? out.substr(0, out.size() - 4) : out;
  return fmt::format("{}_micro.csv", stem);
}

}  // namespace

std::string_view micro_benchmark_name(MicroBenchmark micro) {
  switch (micro) {
    case MicroBenchmark::P2p:
      return "p2p";
    case MicroBenchmark::Reduce:
      return "reduce_kernel";
    case MicroBenchmark::ReduceScatter:
      return "reduce_scatter_nccl";
    case MicroBenchmark::Empty:
      return "empty_timed_run";
  }
  return "unknown";
}

std::string_view launch_name(bool gated) { return gated ? "gated" : "ungated"; }

void check_nccl_algo(const RunOptions& options, bool uses_reduce_scatter) {
  if (options.nccl_algo.empty() || options.nccl_algo.find(':') != std::string::npos || !uses_reduce_scatter) return;
  throw ConfigError(fmt::format(
      "NCCL_ALGO={} applies to every NCCL collective, including the ncclReduceScatter of StragglAR's phase 1 "
      "(--phase1 nccl) and of --micro reduce_scatter (NCCL has no Tree ReduceScatter; Ring would change StragglAR's "
      "phase 1 too): use the per-collective form, e.g. NCCL_ALGO=allreduce:{} (NCCL >= 2.24), or measure --algo "
      "nccl in a separate run",
      options.nccl_algo, options.nccl_algo));
}

void check_nccl_algo_version(const RunOptions& options, std::string_view nccl_version) {
  if (options.nccl_algo.find(':') == std::string::npos) return;
  unsigned major = 0;
  unsigned minor = 0;
  const std::size_t dot = nccl_version.find('.');
  if (dot == std::string_view::npos) return;
  const std::string_view rest = nccl_version.substr(dot + 1);
  const auto [p1, e1] = std::from_chars(nccl_version.data(), nccl_version.data() + dot, major);
  const auto [p2, e2] = std::from_chars(rest.data(), rest.data() + rest.size(), minor);
  if (e1 != std::errc() || e2 != std::errc()) return;
  if (major > 2 || (major == 2 && minor >= 24)) return;
  throw ConfigError(fmt::format("NCCL_ALGO={}: the per-collective form needs NCCL >= 2.24, this is NCCL {}; "
                                "unset NCCL_ALGO for the schedules and measure --algo nccl in a separate run",
                                options.nccl_algo, nccl_version));
}

std::vector<std::uint64_t> parse_size_list(std::string_view text) {
  std::vector<std::uint64_t> sizes;
  for (std::string_view item : split(text, ',')) {
    const std::size_t dots = item.find("..");
    if (dots == std::string_view::npos) {
      sizes.push_back(parse_one_size(item));
    } else {
      std::string_view hi_text = item.substr(dots + 2);
      std::uint64_t factor = 2;
      if (const std::size_t colon = hi_text.find(':'); colon != std::string_view::npos) {
        factor = parse_unsigned(hi_text.substr(colon + 1), "--sizes (range factor)");
        hi_text = hi_text.substr(0, colon);
        if (factor < 2) throw ConfigError(fmt::format("--sizes: range factor in '{}' must be at least 2", item));
      }
      const std::uint64_t lo = parse_one_size(item.substr(0, dots));
      const std::uint64_t hi = parse_one_size(hi_text);
      if (lo > hi) throw ConfigError(fmt::format("--sizes: range '{}' runs backwards ({} > {} bytes)", item, lo, hi));
      for (std::uint64_t s = lo; s <= hi; s *= factor) {
        sizes.push_back(s);
        if (sizes.size() > kMaxSizes) break;
        if (s > hi / factor) break;
      }
    }
    if (sizes.size() > kMaxSizes) {
      throw ConfigError(fmt::format("--sizes: '{}' gives more than {} sizes", text, kMaxSizes));
    }
  }
  return sizes;
}

std::vector<double> parse_delay_list(std::string_view text) {
  std::vector<double> delays;
  for (std::string_view item : split(text, ',')) {
    const double delay = parse_duration_s(item, "--delays", BareNumber::BaseUnit);
    if (delay > kMaxDelay_s) {
      throw ConfigError(fmt::format("--delays: '{}' exceeds {} s (did you forget a unit such as ms?)", item,
                                    kMaxDelay_s));
    }
    delays.push_back(delay);
  }
  return delays;
}

RunOptions parse_run_options(std::span<const std::string> args) {
  RunOptions options;
  options.algorithms = parse_algorithms("stragglar,ring,recursive_halving_doubling,nccl");
  options.sizes_bytes = parse_size_list("1MiB..1GiB");
  options.delays_s = {0.0};
  std::optional<std::uint64_t> straggler;
  std::uint64_t gpus = 8;

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return options;
    }
    if (arg == "--gate" || arg == "--no-gate") {
      options.launch = arg == "--gate" ? LaunchMode::Gated : LaunchMode::Ungated;
      continue;
    }
    if (!arg.starts_with("--")) {
      throw ConfigError(fmt::format("unexpected argument '{}' (options start with --; see --help)", arg));
    }
    std::string_view flag = arg;
    std::string_view value;
    if (const std::size_t eq = arg.find('='); eq != std::string_view::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else {
      if (i + 1 >= args.size()) throw ConfigError(fmt::format("option {} needs a value", flag));
      value = args[++i];
    }
    if (flag == "--algo") {
      options.algorithms = parse_algorithms(value);
    } else if (flag == "--gpus") {
      gpus = parse_unsigned(value, "--gpus");
      if (gpus < 2 || gpus > 8) {
        throw ConfigError(fmt::format("--gpus: {} is outside 2..8 (one node, one process)", value));
      }
    } else if (flag == "--sizes") {
      options.sizes_bytes = parse_size_list(value);
    } else if (flag == "--delays") {
      options.delays_s = parse_delay_list(value);
    } else if (flag == "--straggler") {
      straggler = parse_unsigned(value, "--straggler");
    } else if (flag == "--iters") {
      const std::uint64_t iters = parse_unsigned(value, "--iters");
      if (iters < 1 || iters > 1'000'000) throw ConfigError(fmt::format("--iters: {} is outside 1..1000000", value));
      options.iters = static_cast<std::uint32_t>(iters);
    } else if (flag == "--warmup") {
      const std::uint64_t warmup = parse_unsigned(value, "--warmup");
      if (warmup > 1'000'000) throw ConfigError(fmt::format("--warmup: {} is outside 0..1000000", value));
      options.warmup = static_cast<std::uint32_t>(warmup);
    } else if (flag == "--phase1") {
      if (value == "nccl") {
        options.phase1 = Phase1Mode::Nccl;
      } else if (value == "schedule") {
        options.phase1 = Phase1Mode::Schedule;
      } else {
        throw ConfigError(fmt::format("--phase1: '{}' is neither 'nccl' nor 'schedule'", value));
      }
    } else if (flag == "--timeout") {
      const double timeout = parse_duration_s(value, "--timeout");
      if (timeout < 1.0 || timeout > 3600.0) {
        throw ConfigError(fmt::format("--timeout: '{}' is outside 1s..3600s", value));
      }
      options.timeout_s = timeout;
    } else if (flag == "--launch") {
      if (value == "gated") {
        options.launch = LaunchMode::Gated;
      } else if (value == "ungated") {
        options.launch = LaunchMode::Ungated;
      } else if (value == "both") {
        options.launch = LaunchMode::Both;
      } else {
        throw ConfigError(fmt::format("--launch: '{}' is none of 'gated', 'ungated', 'both'", value));
      }
    } else if (flag == "--micro") {
      options.micro.clear();
      if (value == "all") {
        options.micro = {MicroBenchmark::P2p, MicroBenchmark::Reduce, MicroBenchmark::ReduceScatter,
                         MicroBenchmark::Empty};
      } else if (value != "none") {
        for (std::string_view name : split(value, ',')) options.micro.push_back(parse_micro(name));
      }
    } else if (flag == "--out") {
      if (value.empty()) throw ConfigError("--out: empty path");
      options.out = std::string(value);
    } else if (flag == "--micro-out") {
      if (value.empty()) throw ConfigError("--micro-out: empty path");
      options.micro_out = std::string(value);
    } else {
      throw ConfigError(fmt::format("unknown option '{}' (see --help)", flag));
    }
  }

  options.gpus = static_cast<Rank>(gpus);
  options.straggler = static_cast<Rank>(straggler.value_or(gpus - 1));
  if (straggler && *straggler >= gpus) {
    throw ConfigError(fmt::format("--straggler: rank {} is out of range for --gpus {} (valid: 0..{})", *straggler,
                                  gpus, gpus - 1));
  }
  if (options.algorithms.empty() && options.micro.empty()) {
    throw ConfigError("nothing to run: --algo none and no --micro");
  }
  if (options.micro_out.empty()) options.micro_out = default_micro_out(options.out);
  if (options.out == "-" && options.micro_out == "-" && !options.algorithms.empty() && !options.micro.empty()) {
    throw ConfigError("--out - and --micro-out - would mix two CSVs on standard output; give --micro-out FILE");
  }
  return options;
}

std::string run_options_usage() {
  return R"(usage: collsim-cuda [options]

Runs AllReduce schedules from the collsim registry on 2-8 GPUs of one node with CUDA + NCCL
(one process, one stream per GPU), plus native ncclAllReduce, and writes one CSV row per
measured iteration. Every run is validated; a wrong result fails the program.

  --algo LIST      registry algorithms and/or 'nccl' (native ncclAllReduce; NCCL_ALGO from the
                   environment applies), or 'none'
                   (default: stragglar,ring,recursive_halving_doubling,nccl)
  --gpus N         number of GPUs, devices 0..N-1, 2..8 (default 8)
  --sizes LIST     buffer sizes: '64MiB', '1MiB..4GiB' (x2 steps), '1MiB..1GiB:4' (x4 steps),
                   comma-separated; multiples of 4 bytes (default 1MiB..1GiB)
  --delays LIST    straggler delays, e.g. '0,1ms,5ms' (default 0; at most 10s)
  --straggler R    rank that is late, 0..N-1 (default N-1)
  --iters N        measured iterations per configuration (default 20)
  --warmup N       unmeasured iterations before them (default 5)
  --phase1 MODE    StragglAR phase 1: 'nccl' = ncclReduceScatter among the ready ranks
                   (sizes are rounded down to a multiple of 16*(N-1) bytes), 'schedule' = the
                   schedule's own ring rounds (default nccl)
  --micro LIST     micro-benchmarks p2p,reduce,reduce_scatter,empty or 'all' (default none)
  --launch MODE    'gated' (default): the GPUs are held by a kernel spinning on a host flag
                   until the host has enqueued the whole run, so time_s is device time only;
                   'ungated': host enqueue time included; 'both': each iteration twice
  --gate, --no-gate  shorthands for --launch gated / --launch ungated
  --timeout T      a run that has not finished T after its delay is a hang: NCCL's
                   communicators are aborted and the program exits with 5 (default 60s)
  --out FILE       AllReduce CSV, '-' for standard output (default measurements.csv)
  --micro-out FILE micro-benchmark CSV, same columns (default: --out with _micro before .csv)
  --help           this text

CSV columns: algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,
launch,nccl_algo,nccl_proto,device,driver_version,nccl_version (see cuda_validate/README.md).
Micro-benchmark rows are named p2p, reduce_kernel (n = 1), reduce_scatter_nccl (n = N-1) and
empty_timed_run (n = 1..N). NCCL_ALGO must use the per-collective form (allreduce:tree) when
the run issues an ncclReduceScatter. The CSVs are written to a temporary file and renamed at
the end, so a failed run leaves the previous files as they were.

Exit codes: 0 success, 1 CUDA/NCCL/file error or a broken CUDA installation (driver older than
the runtime, ...), 2 bad command line, unsupported algorithm/n or NCCL_ALGO, 3 no CUDA device
(no driver or no GPU) or fewer than --gpus, 4 a result failed validation, 5 the GPUs did not
finish a run within the deadline or NCCL reported an asynchronous error (communicators aborted).
)";
}

}  // namespace collsim::cuda_validate
