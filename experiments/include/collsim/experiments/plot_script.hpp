// Running the Python plot scripts of plots/ from the CLI (`collsim run`, `collsim calibrate`).
#pragma once

#include <filesystem>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

namespace collsim {

/// The interpreter plot scripts run with: Debian's /usr/bin/python3 (which sees
/// python3-matplotlib) when it exists, else `python3` from PATH.
std::string plot_python();

/// How long a plot script may run before it is stopped (`collsim run --plot-timeout` changes it).
inline constexpr double kPlotTimeout_s = 300.0;

/// Runs `plot_python() SCRIPT ARGS...` and waits for it, at most timeout_s (then kills it); the
/// script's output goes straight to ours. Returns its exit status, or -1 with `error` set when it
/// could not be started, was killed by a signal or timed out. Never throws for a failing script:
/// a missing figure must not lose results.
int run_plot_script(const std::string& script, std::span<const std::string> args, std::string& error,
                    double timeout_s = kPlotTimeout_s);

/// plots/`name` in the source tree, ready to run; or nullopt after one line `note: no plot (...)`
/// on `out` when the script is missing or plot_python() cannot import matplotlib. For commands
/// whose results are complete without the figure (calibrate, arrivals).
std::optional<std::filesystem::path> available_plot_script(std::string_view name, std::ostream& out);

/// True when plot_python() can import `module` (e.g. "matplotlib"); its error output is
/// discarded, so a missing module costs the caller one line of explanation, not a traceback.
bool plot_python_has_module(std::string_view module);

/// Where a plot script's output goes when run by run_plot_script_logged.
struct PlotOutput {
  bool quiet = false;      ///< discard the script's standard output (`--quiet`)
  std::string error_log;   ///< file that receives its standard error (a traceback is kept, not shown)
  double timeout_s = kPlotTimeout_s;  ///< stopped after this long (`collsim run --plot-timeout`)
};

/// As run_plot_script, with the output routed per `output`. On failure `error` says why in one
/// line, quoting the last line the script wrote to its error log (e.g. the exception).
int run_plot_script_logged(const std::string& script, std::span<const std::string> args, const PlotOutput& output,
                           std::string& error);

}  // namespace collsim
