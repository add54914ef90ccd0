// `collsim calibrate FILE... --out MODEL.yaml`: fit the link model to nccl-tests logs and to
// collsim-cuda measurement CSVs, through the schedules that produced them, and cross-predict.
//
// Every measured row becomes (cost coefficients of its schedule's critical path, measured time);
// see schedule_cost.hpp. The fit is the one of models/calibration.hpp. Rows of the collectives
// in `fit_on` are fitted; the others are predicted with the fitted parameters through their own
// schedules (e.g. fit reduce_scatter on 4 ranks, predict all_reduce on 8), which is the test
// of the model: a curve fitted per collective could not do that.
//
// On a topology with several link classes (e.g. a cluster: "nvlink" inside a node, "network"
// between nodes) the coefficients are per class and the fit is fit_link_classes(): one (alpha,
// beta) per class the fitted rows cross, plus gamma. A class no fitted row crosses is reported as
// not identified and gets no parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/calibration.hpp"
#include "collsim/models/collective.hpp"
#include "collsim/models/formats/model_file.hpp"

namespace collsim {

/// Which nccl-tests time a row contributes. `min` (default) of out-of-place and in-place: both
/// run the same schedule, and interference only ever adds time, so the minimum is the cleaner
/// sample (the shared 8-GPU log has a 68 us out-of-place outlier at 32 B next to 13.5 us in-place).
enum class LogTime { Min, OutOfPlace, InPlace };

/// "min", "out_of_place", "in_place".
const char* log_time_name(LogTime time);
/// Parses the names above. Throws ConfigError naming the text and the known names.
LogTime parse_log_time(std::string_view name);

struct CalibrationOptions {
  std::string algorithm = "ring";     ///< schedule explaining nccl-tests logs and native NCCL rows of a CSV
  /// Topology the schedules run on (resolve_topology: nvswitch, full_mesh, a configs/topologies
  /// name or a YAML file), built for each measured n. Its link classes are what is fitted: one
  /// (alpha, beta) per class the data identify; its own link values are only the starting point
  /// of the critical-path search (and stay in place for classes the data do not identify).
  std::string topology = "nvswitch";
  /// 1..3; > 1 adds the protocol-aware model (min over regimes: LL, LL128, Simple). 0 = as many
  /// as the fitted sizes support (3 for a full nccl-tests sweep; 1 on multi-class topologies).
  std::uint32_t regimes = 0;
  bool fit_gamma = true;              ///< fit gamma when the data identify it
  /// Fit the launch overhead (once per fused collective, once per round for p2p_rounds rows);
  /// false keeps the old alpha-beta(-gamma) fit with alpha charged per hop only.
  bool fit_launch = true;
  LogTime time = LogTime::Min;
  std::vector<Collective> fit_on;     ///< collectives fitted; empty = every input
  std::vector<Collective> predict;    ///< collectives cross-predicted; empty = every input not fitted
  /// Input files whose rows are predicted, never fitted, whatever their collective: a
  /// leave-one-out check holds out one log. Each names an input by its name in the report
  /// (CalibrationInput::file), the path as given, or another path to the same file.
  std::vector<std::string> hold_out;
  std::optional<Collective> collective;  ///< override for every nccl-tests log
  std::optional<std::uint32_t> nranks;   ///< override for every nccl-tests log
  /// Called once per (algorithm, n) the fit will build schedules for, before any is built, with
  /// the topology's node size and the file:line of the first measurement needing it; throws to refuse (the CLI refuses what
  /// would not fit in memory: --nranks 100000 was killed by the kernel). Empty = no check.
  std::function<void(const std::string& algorithm, std::uint32_t n, std::uint32_t gpus_per_node, const std::string& where)>
      check_schedule_size;
  std::string command;                ///< recorded in the model's provenance (the CLI passes its argv)
  std::string name;                   ///< model name; default: stem of out_model, else "calibrated"
  std::filesystem::path out_model;    ///< model YAML to write; empty = none
  std::filesystem::path out_csv;      ///< measured-vs-predicted CSV; empty = <out_model stem>_fit.csv
                                      ///< next to out_model, or none without out_model
};

/// One input file as read.
struct CalibrationInput {
  std::string file;              ///< name in the outputs: the file name, or the path as given when
                                 ///< another input has the same file name
  std::string path;              ///< path as given
  std::string format;            ///< "nccl-tests" or "collsim-csv"
  std::string collective;        ///< collective name, "mixed" for a CSV of several
  std::uint32_t n = 0;           ///< ranks (0 for a CSV with several n)
  std::size_t rows = 0;          ///< measurements used (CSV: after grouping iterations)
  std::size_t skipped = 0;       ///< not used: size-0 rows; CSV: iterations with delay_s > 0 and
                                 ///< reduce_kernel points
  std::string how;               ///< how collective and nranks were found
  std::string fnv1a64;
  std::vector<std::string> warnings;
};

/// One measurement with its schedule, coefficients and predictions.
struct CalibrationPoint {
  std::string source;            ///< the input's CalibrationInput::file
  std::size_t line = 0;          ///< 1-based line (first line of a CSV group)
  Collective collective = Collective::AllReduce;
  std::string algorithm;         ///< schedule that explains it
  /// Explained by what NCCL would run under the model being fitted (--algo nccl, a row whose
  /// table entry is chosen_per_run): `algorithm` holds the choice, a fixed point of the fit.
  bool chosen_by_nccl = false;
  std::int64_t straggler = -1;   ///< straggler rank the schedule is built around (-1: default)
  /// How the measured run was launched: Fused for nccl-tests and native NCCL rows, P2pRounds for
  /// collsim schedules run by collsim-cuda (one NCCL group per round).
  ExecutionStyle execution = ExecutionStyle::Fused;
  /// The protocol it ran with, when its log names NCCL_PROTO: fitted and predicted in that
  /// protocol's regime only.
  std::optional<Protocol> protocol = std::nullopt;
  std::uint32_t n = 0;
  /// GPUs one host thread drove (nccl-tests -g; see NcclLog::gpus_per_thread). collsim-cuda CSVs
  /// count 1: their gated runs enqueue every launch before the gate opens, so no GPU waits for
  /// the host to reach it.
  std::uint32_t gpus_per_thread = 1;
  double size_bytes = 0;         ///< nccl-tests size column / CSV size_bytes
  double measured_s = 0;         ///< nccl-tests: per LogTime; CSV: median over iterations
  CostCoefficients coefficients;  ///< summed over link classes (the single-class view)
  ClassCostCoefficients class_coefficients;  ///< per link class of the topology
  bool fitted = false;           ///< true: used by the fit; false: cross-predicted
  double predicted_s = 0;        ///< primary model (regimes if > 1, else the single fit)
  double rel_error = 0;          ///< (predicted - measured) / measured
  std::uint32_t regime = 0;
  double predicted_single_s = 0; ///< single alpha-beta(-gamma) fit
  double rel_error_single = 0;
};

/// Relative errors of one size range.
struct RangeErrors {
  std::string label;             ///< e.g. "64 KiB..16 MiB"
  ErrorStats stats;
};

/// Relative errors of one (input, collective, n) group, overall and per size range.
struct SourceErrors {
  std::string source;
  Collective collective = Collective::AllReduce;
  std::uint32_t n = 0;
  bool fitted = false;
  ErrorStats overall;            ///< primary model
  ErrorStats overall_single;     ///< single fit
  std::vector<RangeErrors> ranges;  ///< primary model, by kSizeRanges
};

struct CalibrationReport {
  CalibrationOptions options;
  std::vector<CalibrationInput> inputs;
  std::vector<std::string> link_classes;  ///< link class names of options.topology
  FitResult single;                    ///< the K = 1 fit (ModelFile::link); empty when class_fit is set
  /// The per-class fit, for a topology with several link classes (regimes are then not fitted).
  std::optional<ClassFitResult> class_fit;
  std::optional<FitResult> regime_fit; ///< the K > 1 fit when regimes > 1
  std::uint32_t regimes = 1;           ///< regimes fitted (options.regimes, or the automatic choice)
  std::vector<CalibrationPoint> points;
  ErrorStats fit_stats;                ///< primary model over the fitted points
  std::vector<SourceErrors> sources;   ///< per (input, collective, n); fitted groups first
  ModelFile model;                     ///< what is (or would be) written
  std::vector<std::string> notes;
  std::filesystem::path model_path;    ///< written model file, empty if none
  std::filesystem::path csv_path;      ///< written CSV, empty if none
};

/// Size ranges of the per-range error report: latency-bound, transition, bandwidth-bound.
struct SizeRange {
  const char* label;
  double min_size_bytes;  ///< inclusive
  double max_size_bytes;  ///< exclusive
};
std::span<const SizeRange> size_ranges();

/// Reads every file (format detected: a CSV whose header starts with "algorithm", else an
/// nccl-tests log), fits, cross-predicts, and writes the model YAML and the CSV atomically when
/// asked. Throws ConfigError for unreadable or malformed inputs (file and line named), no file,
/// options out of range (regimes, an algorithm that is not registered), fit_on and predict
/// overlapping or matching no input, or a fit that is not determined; an unknown or unusable
/// topology, regimes > 1 on a topology with several link classes, or a cross-predicted row
/// whose critical path crosses a link class the fitted rows do not identify; ScheduleError when
/// the algorithm cannot explain an input (unsupported n, no such phase).
CalibrationReport run_calibration(std::span<const std::filesystem::path> files, const CalibrationOptions& options);

/// The measured-vs-predicted table as CSV, columns:
/// source,line,collective,algorithm,n,size_bytes,measured_s,predicted_s,rel_error,
/// predicted_single_s,rel_error_single,role,regime
std::string calibration_csv(const CalibrationReport& report);

/// Human-readable report: inputs, parameters, per-row table, median/max error, cross-prediction.
std::string format_calibration_report(const CalibrationReport& report);

}  // namespace collsim
