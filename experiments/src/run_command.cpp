// `collsim run SPEC [--out DIR] [--quiet] [--no-resume] [--dry-run]`: run a study and write its
// result files.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <ostream>

#include "collsim/experiments/args.hpp"
#include "collsim/experiments/arrival_trace_cli.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/experiments/commands.hpp"
#include "collsim/experiments/mpi_split.hpp"
#include "collsim/experiments/output.hpp"
#include "collsim/experiments/output_path.hpp"
#include "collsim/experiments/plot_script.hpp"
#include "collsim/experiments/progress.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/experiments/runner.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/experiments/study_plan.hpp"
#include "collsim/experiments/sweep.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

// Where a plot script's output goes when it fails.
std::filesystem::path plot_log_path(const std::filesystem::path& dir, const std::string& script) {
  return dir / (std::filesystem::path(script).stem().string() + ".plot.log");
}

// Estimates are rough: print them with a unit a person reads at a glance.
std::string rough_duration(double s) { return s >= 3600 ? fmt::format("{:.1f} h", s / 3600) : format_duration(s); }

// The estimate counts the event-driven index wherever the engine may build it, so it can be high
// by up to the index's size where replay takes its one-sweep path.
std::string refusal_of(const StudyPlan& plan, const RunMemoryLimit& limit) {
  // Without the option the limit is already the machine's memory, which no option may pass.
  return run_memory_refusal(plan, limit, "run",
                            limit.from_option ? "lower its n or raise --max-run-memory (at most to this machine's memory)"
                                              : "lower its n");
}

}  // namespace

namespace {

// Under mpirun every rank meets the same bad input: only rank 0 reports it. Rank 0 prints the
// error before telling the others, so the job never ends before the line is out. A rank that
// fails alone (its own file system) reports with its rank and ends the job.
template <class Setup>
bool agreed_setup(WorkSplit& split, Setup&& setup) {
  if (split.size() == 1) {
    setup();
    return true;
  }
  std::string failure;
  try {
    setup();
  } catch (const InternalError&) {
    throw;
  } catch (const Error& e) {
    failure = e.what();
  }
  const bool root = split.rank() == 0;
  if (root && !failure.empty()) std::cerr << fmt::format("collsim: error: {}\n", one_line_message(failure)) << std::flush;
  std::string root_status = root ? (failure.empty() ? "ok" : "failed") : "";
  split.broadcast(root_status);
  if (root_status == "failed") return false;
  if (!failure.empty()) {
    std::cerr << fmt::format("collsim: error (rank {}): {}\n", split.rank(), one_line_message(failure)) << std::flush;
    split.abort(kExitBadInput);
  }
  return true;
}

}  // namespace

int run_command(const Args& args, std::ostream& out) {
  ArgParser parser("run",
                   "Run an experiment study (a YAML spec, see configs/experiments/) and write results.csv, "
                   "summary.csv, timing.csv and config.resolved.yaml. An interrupted run started again skips "
                   "the finished work. Under mpirun the work is spread over the ranks; rank 0 writes the files.");
  parser.positional("SPEC", "experiment spec file (YAML)")
      .option("out", "-o", "DIR", "output directory (default: results/<spec name>)")
      .flag("quiet", "no progress and no summary table")
      .flag("no-resume", "ignore a checkpoint of an earlier interrupted run")
      .flag("no-plot", "do not run the spec's plot scripts (nor check that they exist)")
      .option("plot-timeout", "", "TIME", "stop a plot script that runs longer (the results are kept)",
              fmt::format("{:g}s", kPlotTimeout_s))
      .flag("dry-run", "check the spec and resolve every point (topologies, engines), print the counts and estimates, "
                       "write nothing; exit 2 if the run would be refused (--max-run-memory)")
      .option("max-run-memory", "", "SIZE",
              "refuse a study whose largest run is estimated to need more memory (default and largest value: this "
              "machine's memory; per process under mpirun)");
  std::unique_ptr<WorkSplit> split = make_work_split();
  const bool root = split->rank() == 0;
  bool help = false;
  ExperimentSpec spec;
  std::optional<SweepGrid> grid_storage;
  std::filesystem::path dir;
  std::filesystem::path made_dir;  // the outermost directory of --out this run made (empty: none)
  double plot_timeout_s = kPlotTimeout_s;
  RunMemoryLimit memory_limit;
  const bool setup_ok = agreed_setup(*split, [&] {
    if (!parser.parse(args)) {
      help = true;
      return;
    }
    if (parser.positionals().size() != 1) {
      throw ConfigError(fmt::format("run: expected one SPEC file, got {}", parser.positionals().size()));
    }
    plot_timeout_s = parse_duration_s(parser.get("plot-timeout"), "--plot-timeout");
    if (!(plot_timeout_s > 0)) throw ConfigError("run: --plot-timeout must be positive");
    spec = load_spec(parser.positionals().front(), !parser.flag_set("no-plot"));
    if (root) {
      for (const ArrivalChoice& a : spec.arrivals) {
        if (a.model.trace) print_trace_warnings(*a.model.trace, std::cerr);
      }
    }
    grid_storage.emplace(spec);
    memory_limit = run_memory_limit(parser.get_optional("max-run-memory"));
    if (!parser.flag_set("dry-run")) {
      const std::string refusal = refusal_of(plan_study(*grid_storage), memory_limit);
      if (!refusal.empty()) throw ConfigError(refusal);
    }
    // Without --out the directory comes from the spec's name: say so, not "--out" (a 100,000-
    // character name was reported as "--out '...': File name too long").
    const std::optional<std::string> out_option = parser.get_optional("out");
    const std::string out_label = out_option ? "--out" : "the output directory (no --out: results/<the spec's name>)";
    dir = output_dir_option(out_option.value_or("results/" + spec.name), "run", out_label);
    // Rerunning a study from its own config.resolved.yaml writes the re-resolution back in place.
    {
      const std::filesystem::path spec_file = parser.positionals().front();
      std::error_code ec;
      if (spec_file.filename() == "config.resolved.yaml" &&
          std::filesystem::equivalent(std::filesystem::absolute(spec_file).parent_path(), dir, ec)) {
        allow_rewrite_of(spec_file);
      }
    }
    if (root && !parser.flag_set("dry-run")) {
      std::error_code ec;
      for (std::filesystem::path d = std::filesystem::absolute(dir, ec).lexically_normal();
           !d.empty() && !std::filesystem::exists(d, ec); d = d.parent_path()) {
        made_dir = d;
        if (d == d.parent_path()) break;
      }
      prepare_output_dir(dir, "run", out_label);
      check_study_output_files(dir, "run", out_label);
      // A failing plot script's log is written after the run: one named like an input (a trace
      // saved as p.plot.log) was emptied by it.
      for (const auto& script : spec.plots) {
        const std::filesystem::path log = plot_log_path(dir, script);
        try {
          check_not_an_input(log);
        } catch (const ConfigError& e) {
          throw ConfigError(fmt::format("run: --out '{}': {} (plot script {} writes its error log there)", dir.string(),
                                        e.what(), script));
        }
      }
    }
  });
  if (!setup_ok) return kExitBadInput;
  if (help) {
    if (root) out << parser.help();
    return 0;
  }
  const bool quiet = parser.flag_set("quiet");
  const SweepGrid& grid = *grid_storage;
  if (parser.flag_set("dry-run")) {
    const StudyPlan plan = plan_study(grid);
    if (root) {
      out << fmt::format("dry run {}: {} points ({} active) x {} trial{} = {} runs in {} work units; {} topolog{} "
                         "built; engines: {}; {} plot script{}; nothing written\n",
                         spec.name, plan.points, plan.active_points, spec.trials, spec.trials == 1 ? "" : "s",
                         plan.runs, plan.work_units, plan.topologies, plan.topologies == 1 ? "y" : "ies",
                         fmt::join(plan.engines, ", "), spec.plots.size(), spec.plots.size() == 1 ? "" : "s");
      out << fmt::format("estimated: {} runs, CPU time {} (rough; more on congested fabrics), checkpoint journal "
                         "up to {}, largest schedule {}, largest run {} (its schedule and the engine's index where it builds one)\n",
                         plan.runs, rough_duration(plan.cpu_s), rough_size(plan.journal_bytes),
                         rough_size(plan.max_schedule_bytes), rough_size(plan.max_run_bytes));
    }
    // The counts and estimate are printed first (a dry run is where one reads them), then the
    // exit code says what the run would do, so `run --dry-run S && run S` never starts a refused run.
    const std::string refusal = refusal_of(plan, memory_limit);
    if (refusal.empty()) return 0;
    if (root) out << fmt::format("the run would be refused: {}\n", refusal);
    return kExitBadInput;
  }
  if (root) {
    remove_stale_temporaries(dir);
    if (parser.flag_set("no-resume")) {
      std::error_code ec;
      std::filesystem::remove(checkpoint_path(dir), ec);
    }
    if (!quiet) {
      out << fmt::format("run {}: {} points x {} trial{} on {} process{}{} -> {}\n", spec.name,
                         grid.num_active_points(), spec.trials, spec.trials == 1 ? "" : "s", split->size(),
                         split->size() == 1 ? "" : "es",
                         spec.baseline_added ? fmt::format(" ({} added as the baseline)", spec.baseline) : "", dir.string());
      out.flush();
    }
  }
  Progress progress(std::cerr, Progress::style_for_stderr(), "run " + spec.name);
  RunnerOptions options;
  options.checkpoint_dir = dir;
  options.progress = root && !quiet ? &progress : nullptr;
  options.split = split.get();

  StudyResult result;
  std::error_code journal_ec;
  const bool journal_existed = root && std::filesystem::exists(checkpoint_path(dir), journal_ec);
  try {
    result = run_study(grid, options);
  } catch (const std::exception& e) {
    // Bad input met only at run time (a draw past the hour, an engine that cannot run a point)
    // is exit 2, and exit 2 writes nothing: the journal this run started goes, and the output
    // directory it made if nothing else is in it. An interrupted run, or one that resumed an
    // earlier journal, keeps it for the next run.
    const bool bad_input =
        dynamic_cast<const ConfigError*>(&e) != nullptr || dynamic_cast<const ScheduleError*>(&e) != nullptr;
    if (root && bad_input && !journal_existed) {
      std::error_code ec;
      std::filesystem::remove(checkpoint_path(dir), ec);
      // Up from --out, each directory this run made, while it is empty.
      std::filesystem::path d = std::filesystem::absolute(dir, ec).lexically_normal();
      while (!made_dir.empty() && std::filesystem::is_empty(d, ec) && std::filesystem::remove(d, ec) && d != made_dir) {
        d = d.parent_path();
      }
    }
    if (split->size() > 1) {
      // The other ranks may wait for this one forever: report here and end the whole job.
      std::cerr << fmt::format("collsim: error (rank {}): {}\n", split->rank(), one_line_message(e.what()));
      std::cerr.flush();
      split->abort(2);
    }
    throw;
  }
  if (!root) return 0;

  write_study_outputs(dir, grid, result);
  std::error_code ec;
  std::filesystem::remove(checkpoint_path(dir), ec);

  std::uint64_t transfers = 0;
  double peak_rss = 0;
  for (const auto& p : result.points) {
    transfers += p.transfers;
    peak_rss = std::max(peak_rss, p.peak_rss_bytes);
  }
  if (quiet) {
    out << fmt::format("wrote {}\n", dir.string());
  } else {
    out << fmt::format("wrote {}/{{results.csv, summary.csv, timing.csv, config.resolved.yaml}}\n", dir.string());
    out << text_summary(grid, result);
    out << fmt::format("wall {}, {} transfers simulated, peak RSS {}", format_duration(result.wall_s), transfers,
                       format_size(peak_rss));
    if (result.units_resumed > 0) {
      out << fmt::format(", {} of {} work units resumed from the checkpoint", result.units_resumed, result.units_total);
    }
    if (result.checkpoint_discarded) {
      out << ", nothing resumed: the checkpoint there was of another study or collsim build";
    }
    out << "\n";
  }
  if (parser.flag_set("no-plot")) return 0;
  int status = 0;
  for (const auto& script : spec.plots) {
    out.flush();
    std::string error;
    const std::string dir_arg = dir.string();
    PlotOutput output;
    output.quiet = quiet;
    output.timeout_s = plot_timeout_s;
    output.error_log = plot_log_path(dir, script).string();
    const int rc = run_plot_script_logged(script, std::span(&dir_arg, 1), output, error);
    if (rc != 0) {
      // The results are complete and kept; only the figure is missing (README, "Exit codes").
      std::cerr << fmt::format("collsim: warning: plot script {} failed ({}); the results in {} are complete\n",
                               script, error, dir.string());
      status = kExitPlotFailed;
    } else if (!quiet) {
      out << fmt::format("plotted with {}\n", script);
    }
  }
  return status;
}

}  // namespace collsim
