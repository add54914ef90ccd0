#include "collsim/experiments/output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/atomic_file.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/formats/csv.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/engine.hpp"
#include "collsim/sim/nccl_choice.hpp"

namespace collsim {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr const char* kResultFiles[] = {"results.csv", "summary.csv", "timing.csv", "config.resolved.yaml"};

// Shortest round-trip form; empty for undefined values.
std::string num(double value) { return std::isfinite(value) ? fmt::format("{}", value) : std::string(); }

// The columns every file shares, describing the point.
std::string point_columns(const SweepGrid& grid, const Point& p, bool with_arrival) {
  const ExperimentSpec& spec = grid.spec();
  std::string text = fmt::format("{},{},{},{},{},{}", spec.algorithms[p.algorithm], spec.n[p.n],
                                 num(spec.sizes_bytes[p.size]), csv_field(spec.topologies[p.topology].label),
                                 spec.engine_at(p.engine, p.topology), start_mode_name(spec.starts[p.start]));
  if (with_arrival) {
    text += ',';
    text += csv_field(spec.arrivals[p.arrival].label);
  }
  return text;
}

std::vector<double> times_of(const PointResult& p) {
  std::vector<double> times;
  times.reserve(p.trials.size());
  for (const auto& t : p.trials) times.push_back(t.time_s);
  return times;
}

std::string describe_scenario(const SweepGrid& grid, const Point& p, double mean_delay_s) {
  const ExperimentSpec& spec = grid.spec();
  std::string text = fmt::format("n={} {} {}", spec.n[p.n], format_size(spec.sizes_bytes[p.size]),
                                 spec.topologies[p.topology].label);
  if (spec.engines.size() > 1 || spec.engines.front() == kAutoEngine) text += " " + spec.engine_at(p.engine, p.topology);
  if (spec.starts.size() > 1) text += fmt::format(" {}", start_mode_name(spec.starts[p.start]));
  if (spec.arrivals.size() > 1 && !spec.arrivals[p.arrival].last_rank_straggler) {
    text += " " + spec.arrivals[p.arrival].label;
  }
  return text + (mean_delay_s > 0 ? fmt::format(" delay {}", format_duration(mean_delay_s)) : std::string(" no delay"));
}

std::string speedup_column_suffix(const ExperimentSpec& spec) {
  // Ring keeps its historical column names; any other baseline is spelled generically so that
  // no column claims to be relative to ring when it is not.
  return spec.baseline == kBaselineAlgorithm ? "ring" : "baseline";
}

}  // namespace

double percentile(std::span<const double> values, double p) {
  COLLSIM_ASSERT(!values.empty(), "percentile of no samples");
  COLLSIM_ASSERT(p >= 0 && p <= 100, "percentile outside [0, 100]");
  std::vector<double> sorted(values.begin(), values.end());
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[rank == 0 ? 0 : rank - 1];
}

SampleStats summarize(std::span<const double> values) {
  COLLSIM_ASSERT(!values.empty(), "statistics of no samples");
  SampleStats s;
  s.count = values.size();
  s.min = *std::min_element(values.begin(), values.end());
  s.max = *std::max_element(values.begin(), values.end());
  double excess = 0;
  for (double v : values) excess += v - s.min;
  s.mean = s.min + excess / static_cast<double>(values.size());
  s.p50 = percentile(values, 50);
  s.p99 = percentile(values, 99);
  return s;
}

std::vector<std::vector<double>> speedups_vs_baseline(const SweepGrid& grid, const StudyResult& result) {
  std::vector<std::vector<double>> speedups(result.points.size());
  for (std::size_t i = 0; i < result.points.size(); ++i) {
    const PointResult& p = result.points[i];
    if (!p.active) continue;
    const PointResult& ring = result.points[grid.baseline(i)];
    speedups[i].assign(p.trials.size(), kNaN);
    for (std::size_t t = 0; t < p.trials.size() && t < ring.trials.size(); ++t) {
      if (p.trials[t].time_s > 0) speedups[i][t] = ring.trials[t].time_s / p.trials[t].time_s;
    }
  }
  return speedups;
}

// "nccl_algorithm,nccl_protocol" of a point: what `nccl` ran there (the runner's choice, which
// depends only on the point), empty for every other algorithm.
std::string nccl_columns(const SweepGrid& grid, const Point& p) {
  const ExperimentSpec& spec = grid.spec();
  if (!find_algorithm(spec.algorithms[p.algorithm]).chosen_per_run) return ",";
  const Rank n = spec.n[p.n];
  const double size = spec.sizes_bytes[p.size];
  const NcclChoice choice =
      choose_nccl(n, size, topology_at(spec, p.topology, n, size), spec.link_model.get(), execution_at(spec, size));
  return fmt::format("{},{}", choice.algorithm, choice.protocol);
}

std::string results_csv(const SweepGrid& grid, const StudyResult& result) {
  const ExperimentSpec& spec = grid.spec();
  const auto speedups = speedups_vs_baseline(grid, result);
  std::string out = fmt::format(
      "algorithm,n,size_bytes,topology,engine,start,delay_s,trial,seed,time_s,time_after_last_arrival_s,"
      "speedup_vs_{},arrival,straggler,straggler_moved,algbw_GBps,busbw_GBps,hidden_delay_fraction,transfers,"
      "nccl_algorithm,nccl_protocol\n",
      speedup_column_suffix(spec));
  for (std::size_t i = 0; i < result.points.size(); ++i) {
    const PointResult& pr = result.points[i];
    if (!pr.active) continue;
    const Point p = grid.point(i);
    const Rank n = spec.n[p.n];
    const double size = spec.sizes_bytes[p.size];
    const std::string prefix = point_columns(grid, p, false);
    const std::string arrival = csv_field(spec.arrivals[p.arrival].label);
    const std::uint64_t seed = arrival_seed(spec.seed, p.arrival, n);
    const std::string nccl = nccl_columns(grid, p);
    for (std::size_t t = 0; t < pr.trials.size(); ++t) {
      const TrialResult& r = pr.trials[t];
      const double algbw = r.time_after_last_arrival_s > 0 ? size / r.time_after_last_arrival_s / 1e9 : kNaN;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      const double hidden = r.delay_s > 0 ? (pr.time_no_delay_s + r.delay_s - r.time_s) / r.delay_s : kNaN;
      fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", prefix, num(r.delay_s),
                     t, seed, num(r.time_s), num(r.time_after_last_arrival_s), num(speedups[i][t]), arrival,
                     r.straggler, r.straggler_moved ? 1 : 0, num(algbw), num(busbw), num(hidden), r.transfers, nccl);
    }
  }
  return out;
}

std::string summary_csv(const SweepGrid& grid, const StudyResult& result) {
  const auto speedups = speedups_vs_baseline(grid, result);
  std::vector<double> mean_time(result.points.size(), kNaN);
  for (std::size_t i = 0; i < result.points.size(); ++i) {
    if (result.points[i].active) mean_time[i] = summarize(times_of(result.points[i])).mean;
  }
  const std::string suffix = speedup_column_suffix(grid.spec());
  std::string out = fmt::format(
      "point,algorithm,n,size_bytes,topology,engine,start,arrival,trials,mean_delay_s,mean_time_s,p50_time_s,"
      "p99_time_s,min_time_s,max_time_s,mean_time_after_last_arrival_s,p99_time_after_last_arrival_s,"
      "mean_speedup_vs_{0},speedup_of_mean_vs_{0},rank_by_mean\n",
      suffix);
  for (std::size_t i = 0; i < result.points.size(); ++i) {
    const PointResult& pr = result.points[i];
    if (!pr.active) continue;
    const Point p = grid.point(i);
    std::vector<double> delays, after;
    for (const auto& t : pr.trials) {
      delays.push_back(t.delay_s);
      after.push_back(t.time_after_last_arrival_s);
    }
    const SampleStats time = summarize(times_of(pr));
    const SampleStats after_stats = summarize(after);
    std::vector<double> finite_speedups;
    for (double s : speedups[i]) {
      if (std::isfinite(s)) finite_speedups.push_back(s);
    }
    const double mean_speedup = finite_speedups.empty() ? kNaN : summarize(finite_speedups).mean;
    const double ring_mean = mean_time[grid.baseline(i)];
    std::size_t rank = 1;
    for (std::size_t a = 0; a < grid.num_algorithms(); ++a) {
      const std::size_t other = grid.with_algorithm(i, a);
      if (other != i && mean_time[other] < time.mean) ++rank;
    }
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", i,
                   point_columns(grid, p, true), pr.trials.size(), num(summarize(delays).mean), num(time.mean),
                   num(time.p50), num(time.p99), num(time.min), num(time.max), num(after_stats.mean),
                   num(after_stats.p99), num(mean_speedup), num(time.mean > 0 ? ring_mean / time.mean : kNaN), rank);
  }
  return out;
}

std::string timing_csv(const SweepGrid& grid, const StudyResult& result) {
  std::string out =
      "point,algorithm,n,size_bytes,topology,engine,start,arrival,trials,wall_s,generate_s,transfers,"
      "transfers_per_s,peak_rss_bytes,resumed\n";
  for (std::size_t i = 0; i < result.points.size(); ++i) {
    const PointResult& pr = result.points[i];
    if (!pr.active) continue;
    const double rate = pr.wall_s > 0 ? static_cast<double>(pr.transfers) / pr.wall_s : kNaN;
    fmt::format_to(std::back_inserter(out), "{},{},{},{},{},{},{},{},{}\n", i, point_columns(grid, grid.point(i), true),
                   pr.trials.size(), num(pr.wall_s), num(pr.generate_s), pr.transfers, num(rate),
                   num(pr.peak_rss_bytes), pr.resumed ? 1 : 0);
  }
  return out;
}

void write_study_outputs(const std::filesystem::path& dir, const SweepGrid& grid, const StudyResult& result) {
  COLLSIM_ASSERT(result.complete, "only the process holding every result writes files");
  // Build everything first: an error in any file then leaves no new file behind.
  const std::string contents[] = {results_csv(grid, result), summary_csv(grid, result), timing_csv(grid, result),
                                  resolved_yaml(grid.spec())};
  // The output directory is the one thing collsim creates (README: `run --out` may create it).
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ConfigError(fmt::format("cannot create the output directory '{}': {}", dir.string(), ec.message()));
  // All checked before any is written: the fourth could be an input (a trace the spec names).
  for (const char* name : kResultFiles) writable_destination(dir / name);
  for (std::size_t i = 0; i < std::size(kResultFiles); ++i) {
    write_file_atomically((dir / kResultFiles[i]).string(), contents[i]);
  }
}

void check_study_output_files(const std::filesystem::path& dir, std::string_view command, std::string_view option) {
  namespace fs = std::filesystem;
  const std::string shown = quote_excerpt(dir.string(), 200);
  std::error_code ec;
  for (const char* file : kResultFiles) {
    if (fs::is_directory(dir / file, ec)) {
      throw ConfigError(fmt::format("{}: {} '{}': '{}' there is a directory, where the run writes its {} (move it "
                                    "away or choose another {})",
                                    command, option, shown, file, file, option));
    }
    try {
      writable_destination(dir / file);  // not the spec or a file it names, a pipe or a device
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}: {} '{}': {}", command, option, shown, e.what()));
    }
  }
  const fs::path journal = checkpoint_path(dir);
  const fs::file_status status = fs::symlink_status(journal, ec);
  if (!ec && fs::exists(status) && !fs::is_regular_file(status)) {
    throw ConfigError(fmt::format("{}: {} '{}': '{}' there is not a regular file ({}), where the run keeps its "
                                  "checkpoint journal (remove it)",
                                  command, option, shown, journal.filename().string(),
                                  fs::is_directory(status)   ? "a directory"
                                  : fs::is_symlink(status)   ? "a symbolic link"
                                  : fs::is_fifo(status)      ? "a FIFO"
                                  : fs::is_character_file(status) || fs::is_block_file(status) ? "a device"
                                                                                               : "a special file"));
  }
  // The journal is removed when the run completes: a spec (or a file it names) saved under that
  // name was deleted by its own run.
  try {
    check_not_an_input(journal);
  } catch (const ConfigError& e) {
    throw ConfigError(fmt::format("{}: {} '{}': {} (the run keeps its checkpoint journal there and removes it at the end)",
                                  command, option, shown, e.what()));
  }
}

void remove_stale_temporaries(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    for (const char* file : kResultFiles) {
      if (name.starts_with(std::string(file) + ".tmp.")) std::filesystem::remove(entry.path(), ec);
    }
  }
}

std::string text_summary(const SweepGrid& grid, const StudyResult& result, std::size_t max_scenarios) {
  const ExperimentSpec& spec = grid.spec();
  std::string out = fmt::format("Best algorithm per point ({} trial{} each, mean time; speedup = {} time / time):\n",
                                spec.trials, spec.trials == 1 ? "" : "s", spec.baseline);
  std::size_t shown = 0;
  for (std::size_t s = 0; s < grid.num_scenarios(); ++s) {
    struct Entry {
      std::size_t algorithm;
      SampleStats time;
    };
    std::vector<Entry> entries;
    double mean_delay = 0;
    for (std::size_t a = 0; a < grid.num_algorithms(); ++a) {
      const std::size_t index = s * grid.num_algorithms() + a;
      const PointResult& pr = result.points[index];
      if (!pr.active) continue;
      entries.push_back({a, summarize(times_of(pr))});
      std::vector<double> delays;
      for (const auto& t : pr.trials) delays.push_back(t.delay_s);
      mean_delay = summarize(delays).mean;
    }
    if (entries.empty()) continue;
    if (shown == max_scenarios) {
      out += fmt::format("  ... {} more, see summary.csv\n", grid.num_scenarios() - shown);
      break;
    }
    ++shown;
    std::stable_sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) { return x.time.mean < y.time.mean; });
    const std::size_t first = s * grid.num_algorithms();
    // The baseline may be skipped at this point (skip_unsupported): then no ratio is printed.
    const PointResult& base = result.points[grid.baseline(first)];
    const double base_mean = base.active ? summarize(times_of(base)).mean : kNaN;
    const auto versus = [&](const Entry& e) {
      return std::isfinite(base_mean) ? fmt::format("{:.2f}x vs {}", base_mean / e.time.mean, spec.baseline) : std::string();
    };
    const Entry& best = entries.front();
    const std::string p99 = spec.trials > 1 ? fmt::format("p99 {}", format_duration(best.time.p99)) : std::string();
    const std::string best_versus = versus(best);
    const std::string detail = p99.empty() || best_versus.empty() ? p99 + best_versus : p99 + ", " + best_versus;
    out += fmt::format("  {}: {} {}{}", describe_scenario(grid, grid.point(first), mean_delay),
                       spec.algorithms[best.algorithm], format_duration(best.time.mean),
                       detail.empty() ? std::string() : " (" + detail + ")");
    if (entries.size() > 1) {
      const std::string next_versus = versus(entries[1]);
      out += fmt::format("; next {}{}", spec.algorithms[entries[1].algorithm], next_versus.empty() ? "" : " " + next_versus);
    }
    out += "\n";
  }
  return out;
}

}  // namespace collsim
