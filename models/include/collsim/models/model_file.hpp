// Fitted link models on disk: configs/models/<name>.yaml, written by `collsim calibrate` and read
// by `--model FILE` in simulate, run and advise.
//
//   format: collsim-link-model
//   version: 1
//   name: h100_nvswitch
//   link: {latency_s: 6.2e-06, bandwidth_Bps: 3.6e+11, gamma_s_per_byte: 0}   # required
//   regimes:                        # optional: protocol-aware model, time = min over regimes
//     - {min_size_bytes: 8, max_size_bytes: 1048576, latency_s: ..., bandwidth_Bps: ..., gamma_s_per_byte: ...}
//   provenance: {tool, command, algorithm, method, time_column, fit_on: [...], sources: [{file, format, collective, n, rows, fnv1a64}]}
//   fit: {median_abs_rel_error, max_abs_rel_error, rows: [{source, collective, algorithm, n, size_bytes,
//         measured_s, predicted_s, rel_error, role, regime}]}
//
// Only format, version and link are required, so a hand-written what-if model is three lines.
// Link values accept human units too ("3us", "450GBps"); unknown keys are rejected.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/calibration.hpp"
#include "collsim/models/link_model.hpp"

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
  std::string method;
  std::string time_column;   ///< which nccl-tests time was fitted: min, out_of_place, in_place
  std::vector<std::string> fit_on;  ///< collectives whose rows were fitted
  std::vector<ModelSource> sources;
};

struct ModelFile {
  std::string name;
  LinkModel link;                      ///< the single-regime fit; what engines use by default
  std::vector<FittedRegime> regimes;   ///< protocol-aware regimes, ascending sizes; may be empty
  ModelProvenance provenance;
  double median_abs_rel_error = 0;     ///< over the fitted rows, of the regime model if any
  double max_abs_rel_error = 0;
  std::vector<ModelFitRow> fit_rows;

  /// The link for a collective of `size_bytes`: `link` without regimes, else the regime whose
  /// fitted range holds the size (gaps split at the geometric mean, the ends extended).
  LinkModel link_for_size(double size_bytes) const;
};

/// The YAML text of `model` (deterministic: no time stamps, so regenerating gives no diff).
/// Throws ConfigError when a parameter is not finite or out of range (e.g. bandwidth <= 0).
std::string model_file_to_yaml(const ModelFile& model);

/// Writes the YAML atomically (temporary file + rename). Throws ConfigError as
/// model_file_to_yaml, or naming the path when it cannot be written.
void write_model_file(const ModelFile& model, const std::filesystem::path& path);

/// Parses a model file. `source` names it in messages. Throws ConfigError naming the source, the
/// 1-based line and the key path for: YAML syntax errors, unknown keys, missing required keys,
/// a wrong format or version, non-numeric or out-of-range values (latency < 0, bandwidth <= 0,
/// gamma < 0, regimes not ascending or overlapping).
ModelFile parse_model_file(std::string_view yaml_text, std::string_view source);

/// Reads a model file; `name` defaults to the file stem. Throws ConfigError when unreadable and
/// as parse_model_file.
ModelFile read_model_file(const std::filesystem::path& path);

}  // namespace collsim
