// Fitted link models on disk: configs/models/<name>.yaml, written by `collsim calibrate` and read
// by `--model FILE` in simulate, run and advise.
//
//   format: collsim-link-model
//   version: 2                      # version 1 files (no execution, terms, launch_s) still load
//   name: h100_nvswitch
//   execution: {style: fused, launch_s: 1.7e-05}   # optional: defaults of runs with this model
//   terms:                          # optional: where each term came from (fitted or a named prior)
//     launch_s: {origin: fitted}
//     latency_s: {origin: prior, source: "NCCL src/graph/tuning.cc ..."}
//   link: {latency_s: 6.2e-06, bandwidth_Bps: 3.6e+11, gamma_s_per_byte: 0}   # single-class model
//   # or, for a model fitted on a topology with several link classes (see topology.hpp), instead of link:
//   link_classes:                   # one entry per class the data identified
//     nvlink: {latency_s: 3.1e-06, bandwidth_Bps: 3.6e+11}
//     network: {latency_s: 9.8e-06, bandwidth_Bps: 4.6e+10}
//   gamma_s_per_byte: 0             # shared by every class (only with link_classes)
//   unidentified_classes: ["network"]  # classes of the calibration topology the data did not identify
//   regimes:                        # optional: protocol-aware model, time = min over regimes
//     - {protocol: LL, min_size_bytes: 8, max_size_bytes: 1048576, latency_s: ..., bandwidth_Bps: ...,
//        gamma_s_per_byte: ..., launch_s: ...}   # protocol and launch_s optional (version 2)
//   provenance: {tool, command, algorithm, topology (optional), method, time_column, fit_on: [...], sources: [{file, format, collective, n, rows, fnv1a64}]}
//   fit: {median_abs_rel_error, max_abs_rel_error, rows: [{source, collective, algorithm, n, size_bytes,
//         measured_s, predicted_s, rel_error, role, regime}]}
//
// Only format, version and link (or link_classes) are required, so a hand-written what-if model
// is three lines. Link values accept human units too ("3us", "450GBps"); unknown keys are rejected.
// A single-class model (`link`) describes the class "nvlink", the one class of nvswitch, full_mesh
// and dgx1 topologies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/calibration.hpp"
#include "collsim/models/link_model.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

/// One input of the fit.
struct ModelSource {
  std::string file;          ///< file name as given to calibrate
  std::string format;        ///< "nccl-tests" or "collsim-csv"
  std::string collective;    ///< collective name, or "mixed" for a CSV of several
  std::uint32_t n = 0;       ///< ranks (0 when mixed)
  std::size_t rows = 0;      ///< rows used
  std::string fnv1a64;       ///< FNV-1a 64-bit hash of the file bytes, 16 hex digits
};

/// One row of the measured-vs-predicted table.
struct ModelFitRow {
  std::string source;
  std::string collective;
  std::string algorithm;     ///< schedule that explains the row
  std::uint32_t n = 0;
  double size_bytes = 0;
  double measured_s = 0;
  double predicted_s = 0;
  double rel_error = 0;      ///< (predicted - measured) / measured
  std::string role;          ///< "fit" (used by the fit) or "predict" (cross-prediction)
  std::uint32_t regime = 0;
};

struct ModelProvenance {
  std::string tool;
  std::string command;       ///< the command line that produced the file (may be empty)
  std::string algorithm;     ///< schedule the fit went through, e.g. "ring"
  std::string topology;      ///< calibrate --topology when not the default nvswitch ("" otherwise)
  std::string method;
  std::string time_column;   ///< which nccl-tests time was fitted: min, out_of_place, in_place
  std::vector<std::string> fit_on;  ///< collectives whose rows were fitted
  std::vector<ModelSource> sources;
};

/// The fitted parameters of one link class of a multi-class model.
struct ModelLinkClass {
  std::string name;          ///< e.g. "nvlink", "network"
  double latency_s = 0;      ///< alpha of the class, seconds (>= 0)
  double bandwidth_Bps = 0;  ///< 1/beta of the class, bytes per second (> 0)
  std::size_t line = 0;      ///< 1-based line of the entry in the file it was read from (0: not read)
};

/// Where one term of the model came from: fitted to the data, or a documented prior.
struct ModelTerm {
  std::string name;     ///< launch_s, latency_s, bandwidth_Bps or gamma_s_per_byte
  std::string origin;   ///< "fitted" or "prior"
  std::string source;   ///< for a prior: where the value comes from (may be empty when fitted)
};

struct ModelFile {
  std::string name;
  /// Execution defaults of runs with this model: style, and the launch overhead of one kernel
  /// or NCCL group (regimes with their own launch_s override it per size). Absent: fused, 0.
  ExecutionCosts execution;
  bool has_execution = false;          ///< the file sets `execution`
  std::vector<ModelTerm> terms;        ///< provenance of each term (empty in version 1 files)
  /// The single-regime fit; what engines use by default. For a multi-class model: the first
  /// class's alpha and bandwidth and the shared gamma (never written; link_classes is).
  LinkModel link;
  /// Per-class parameters (multi-class model); empty for a single-class model, which has `link`.
  std::vector<ModelLinkClass> link_classes;
  /// Classes of the calibration topology that the data did not identify (multi-class models).
  std::vector<std::string> unidentified_classes;
  std::string source;                  ///< file it was read from (for messages); "" when built in memory
  std::vector<FittedRegime> regimes;   ///< protocol-aware regimes, ascending sizes; may be empty
  ModelProvenance provenance;
  double median_abs_rel_error = 0;     ///< over the fitted rows, of the regime model if any
  double max_abs_rel_error = 0;
  std::vector<ModelFitRow> fit_rows;

  /// The link for a collective of `size_bytes`: `link` without regimes, else the regime whose
  /// fitted range holds the size (gaps split at the geometric mean, the ends extended).
  LinkModel link_for_size(double size_bytes) const;
  /// The execution costs for a collective of `size_bytes`: `execution`, with the launch of the
  /// regime link_for_size() picks when the model has regimes with a launch.
  ExecutionCosts execution_for_size(double size_bytes) const;
};

/// `model` as runs see it when one host thread launches every kernel on `gpus_per_thread` GPUs
/// in turn (nccl-tests -g G, or one process driving a whole server): each launch then costs
/// launch_s + (G - 1) x launch_per_extra_gpu_s of its regime (README, Calibration), the default
/// execution's launch that of the first regime. The calibrated launch is that of one GPU per
/// thread, which is what runs charge otherwise. Throws ConfigError for G = 0, or G > 1 with a
/// model that has no regimes (the term is recorded per regime; without it G would change
/// nothing silently).
ModelFile driven_by_one_thread(const ModelFile& model, std::uint32_t gpus_per_thread);

/// The YAML text of `model` (deterministic: no time stamps, so regenerating gives no diff).
/// Throws ConfigError when a parameter is not finite or out of range (e.g. bandwidth <= 0).
std::string model_file_to_yaml(const ModelFile& model);

/// Writes the YAML atomically (temporary file + rename). Throws ConfigError as
/// model_file_to_yaml, or naming the path when it cannot be written.
void write_model_file(const ModelFile& model, const std::filesystem::path& path);

/// Parses a model file. `source` names it in messages. Throws ConfigError naming the source, the
/// 1-based line and the key path for: YAML syntax errors, unknown keys, missing required keys,
/// a wrong format or version, non-numeric or out-of-range values (latency < 0, bandwidth <= 0,
/// gamma < 0, regimes not ascending or overlapping), both or neither of link and link_classes,
/// gamma_s_per_byte or unidentified_classes without link_classes, regimes with link_classes, or
/// a class both fitted and listed as unidentified.
ModelFile parse_model_file(std::string_view yaml_text, std::string_view source);

/// Sets `topology`'s link classes from `model` for a collective of `size_bytes`: a single-class
/// model's link_for_size(size_bytes) is the class "nvlink"; a multi-class model gives each class
/// by name. gamma (topology.link.gamma_s_per_byte) comes from the model too.
/// The classes must match: throws ConfigError naming the model file, key and line for a model
/// class the topology does not have, and naming the model and topology for a topology class the
/// model has no parameters for (no fallback to `link` or to the topology's own values: a model
/// fitted on one node must not silently run a cluster with a guessed network; the message says
/// when the class was listed as unidentified by the calibration). Regimes apply only to
/// single-class models.
void apply_model(const ModelFile& model, double size_bytes, Topology& topology);

/// Reads a model file; `name` defaults to the file stem. Throws ConfigError when unreadable and
/// as parse_model_file.
ModelFile read_model_file(const std::filesystem::path& path);

}  // namespace collsim
