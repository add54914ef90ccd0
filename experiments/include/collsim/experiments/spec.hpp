// Experiment specs: the YAML files under configs/experiments/ that describe a study, parsed into
// plain structs, validated once, and written back with every default filled in.
//
// Schema (every key but `name`, `algorithms` and `n` optional; units as in units.hpp). Keys
// marked "axis" take one value or a list; a list is a sweep axis and the study runs the
// cartesian product of all axes.
//
//   name: smoke                 # [A-Za-z0-9_.-]+, the default output directory results/<name>/
//   description: text
//   algorithms: [stragglar, ring] | all            # axis; ring always runs as the baseline
//   n: [8, 64] | "4..16"                           # axis; integers >= 2
//   sizes: [1MiB, 1GiB]                            # axis; bytes per rank, > 0 (default 1GiB)
//   topology: nvswitch | dgx_h100 | path.yaml      # axis (default nvswitch)
//   link: {alpha: 3us, bandwidth: 450GiBps, gamma: 0}   # or {model: fitted.yaml}; used by the
//                                                  # nvswitch and full_mesh shorthands
//   delays: [0, 1ms, 5ms]                          # axis; constant delay of the straggler(s)
//   arrival: {...} | [{...}, ...]                  # axis; arrival models (arrival_yaml.hpp
//                                                  # format) with an optional `label`
//   start: barrier | eager                         # axis (default barrier)
//   engine: replay | closed_form | simgrid | auto  # axis (default replay); auto = replay
//                                                  # (kept for specs from when it meant simgrid
//                                                  # on oversubscribed fabrics)
//   trials: 1                                      # Monte Carlo trials per point, >= 1
//                                                  # (default 1; with {model: trace, file: F}
//                                                  # arrivals, the longest trace's iteration
//                                                  # count: trial t replays iteration t mod count)
//   seed: 1                                        # 64-bit seed of every random draw
//   pipeline_chunks: 0                             # trees: pipeline depth (0 = default)
//   late_ranks: 1                                  # stragglar_online: ranks expected late, >= 1
//   agreement_cost: 6us                            # stragglar_online: time the present ranks
//                                                  # take to agree on who is late (default:
//                                                  # 2 x the alpha between ranks 0 and n-1)
//   skip_unsupported: false                        # skip (algorithm, n) pairs an algorithm
//                                                  # does not support instead of failing
//   plot: plots/x.py | [a.py, b.py]                # run as `/usr/bin/python3 SCRIPT DIR` after the
//                                                  # result files are written (paths relative to
//                                                  # the spec file)
//   collsim_version: 0.1.0                         # informational (written by collsim)
//
// `delays` without `arrival` means one straggler, rank n-1, late by each delay. `delays` with
// `arrival` replaces the delay of every straggler of every (stragglers-model) arrival model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/algorithms/schedule.hpp"
#include "collsim/models/arrival.hpp"
#include "collsim/models/link_model.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {

struct ModelFile;

/// One value of the topology axis.
struct TopologyChoice {
  std::string label;   ///< CSV column: the name as written, or the file stem of a path
  std::string spec;    ///< what resolve_topology() gets: a name, or an absolute file path
};

/// One value of the arrival axis (after crossing with `delays`).
struct ArrivalChoice {
  std::string label;              ///< CSV column `arrival`
  /// Set when the arrival comes from `delays`: every straggler is late by exactly this much.
  std::optional<double> delay_s;
  /// True for the `delays` shorthand without `arrival`: one straggler at rank n-1 (depends on
  /// n, so `model` is built per n by arrival_for()).
  bool last_rank_straggler = false;
  ArrivalSpec model;              ///< unused when last_rank_straggler
};

/// The default baseline every speedup is relative to.
inline constexpr std::string_view kBaselineAlgorithm = "ring";

struct ExperimentSpec {
  std::string name;
  std::string description;
  std::vector<std::string> algorithms;   ///< registry names, ring included after validate()
  std::vector<Rank> n;
  std::vector<double> sizes_bytes;
  std::vector<TopologyChoice> topologies;
  LinkModel link;                        ///< alpha/bandwidth/gamma, or the model file's single fit
  std::string link_model_file;           ///< absolute path when `link: {model: FILE}`, else ""
  std::shared_ptr<const ModelFile> link_model;  ///< the parsed model file (size regimes), or null
  std::vector<ArrivalChoice> arrivals;
  /// The `delays` axis when it is crossed with `arrival` models (then `arrivals` holds each model
  /// once per delay, model-major, under the model's label); empty otherwise. resolved_yaml()
  /// writes the two keys back as they were, since the expanded list repeats labels.
  std::vector<double> crossed_delays_s;
  std::vector<StartMode> starts;
  std::vector<std::string> engines;     ///< as written ("auto" included)
  /// The engine each (topology, engine) pair runs, [topology][engine]: engines[e] with "auto"
  /// resolved for that topology (resolve_engine_name). Filled by validate().
  std::vector<std::vector<std::string>> resolved_engines;
  std::uint32_t trials = 1;
  std::uint64_t seed = 1;
  std::uint32_t pipeline_chunks = 0;
  std::uint32_t late_ranks = 1;               ///< AlgorithmOptions::late_ranks
  std::optional<double> agreement_s;          ///< RunConfig::agreement_s (nullopt = default)
  /// `reshare_interval: DURATION`: replay's approximate mode, RunConfig::reshare_interval_s
  /// (0, the default: exact).
  double reshare_interval_s = 0;
  /// `execution: fused|p2p_rounds` and `launch: DURATION`; unset: the model file's execution
  /// defaults when the link is a model file, else fused with no launch overhead (pure alpha-beta).
  std::optional<ExecutionStyle> execution;
  std::optional<double> launch_s;
  /// `gpus_per_thread: G`: one host thread launches each kernel on G GPUs in turn; link_model
  /// is then driven_by_one_thread(file, G). 1 (default): one GPU per process.
  std::uint32_t gpus_per_thread = 1;
  bool skip_unsupported = false;
  std::vector<std::string> plots;        ///< absolute paths of plot scripts
  /// The algorithm every speedup is relative to (`baseline:`, default ring). Flat ring does not
  /// fit in memory at 16,384 GPUs, so cluster studies name a hierarchical one instead.
  std::string baseline{kBaselineAlgorithm};
  /// True when validate() appended the baseline because the spec did not list it.
  bool baseline_added = false;

  /// Where the spec came from (for messages) and the 1-based line of each key path
  /// ("n", "n[2]", "link.alpha", ...). Empty for specs built in code.
  std::string source;
  std::map<std::string, int, std::less<>> lines;

  /// "file:line: " for a key path when known, else "" (used to prefix error messages).
  std::string where(std::string_view key_path) const;
  /// The engine that runs engine axis value `engine` on topology axis value `topology` (the
  /// `engine` column of the result files). Precondition: validate() ran, indices in range.
  const std::string& engine_at(std::size_t engine, std::size_t topology) const;
};

/// Known engine names (availability in this build is checked when a run starts); "auto" is
/// replay.
inline constexpr std::string_view kEngineNames[] = {"closed_form", "replay", "simgrid", "auto"};

/// Parses a spec from YAML text. `source` names it in messages; relative file paths inside
/// (topology files, model files) are resolved against `base_dir`. Does not call validate().
/// Throws ConfigError ("source:line: 'key.path': problem") for YAML syntax errors, unknown or
/// duplicated keys, wrong types, empty sweep lists, and malformed values (units, negatives).
ExperimentSpec parse_spec(std::string_view yaml_text, std::string_view source,
                          const std::filesystem::path& base_dir);

/// Reads and parses a spec file (relative paths resolve against the file's directory) and
/// validates it. Throws ConfigError for an unreadable file and everything parse_spec() and
/// validate() throw.
ExperimentSpec load_spec(const std::filesystem::path& file, bool check_plot_scripts = true);

/// Checks the parsed spec and fills defaults: known algorithm names (and support of every n
/// unless skip_unsupported), n >= 2, sizes > 0, known engine names, loadable topologies that fit
/// every n, arrival models valid for every n, trials >= 1, no value listed twice in an axis (nor
/// an engine twice on one topology once "auto" is resolved); resolves the engine of every
/// topology (resolved_engines) and appends ring as the baseline when missing. Throws
/// ConfigError naming key, value and line. Values are compared after unit parsing (`[1ms,
/// 0.001s]` is a value listed twice). `check_plot_scripts` false (`run --no-plot`) skips the
/// check that every plot script exists.
void validate(ExperimentSpec& spec, bool check_plot_scripts = true);

/// The link parameters for buffers of `size_bytes`: spec.link, or the model file's regime for
/// that size when the file has size regimes.
LinkModel link_at(const ExperimentSpec& spec, double size_bytes);

/// The execution costs of a run of `size_bytes`: the spec's `execution`/`launch` where set, else
/// the model file's defaults for that size (ModelFile::execution_for_size), else fused and 0.
ExecutionCosts execution_at(const ExperimentSpec& spec, double size_bytes);

/// Topology `index` of the spec for n ranks and buffers of `size_bytes`: resolve_topology with
/// link_at, then, when the spec has a model file, apply_model (every link class set from the
/// model). Throws ConfigError as resolve_topology and apply_model do (a model whose link
/// classes do not match the topology's).
Topology topology_at(const ExperimentSpec& spec, std::size_t index, Rank n, double size_bytes);

/// What an algorithm's constraint on n sees at topology axis value `index` and n: the node size
/// of that topology (a cluster's GPUs per node), so hierarchical algorithms run on clusters, and
/// whether its switch reduces (nvls runs only where it does).
/// Throws as topology_at does.
NConstraintContext node_context_at(const ExperimentSpec& spec, std::size_t index, Rank n);

/// The arrival model of `choice` for n ranks (builds the rank n-1 straggler of the shorthand).
ArrivalSpec arrival_for(const ArrivalChoice& choice, Rank n);

/// The resolved spec as YAML: every default filled in, the seed, the collsim version, the link
/// parameters actually used and each arrival model in full. Parsing it again gives the same study.
std::string resolved_yaml(const ExperimentSpec& spec);

/// The collsim version compiled in (the CMake project version).
std::string_view collsim_version();
/// The build compiled in: the git commit of the source tree, with "-dirty-" and a hash of the
/// uncommitted changes when there are any; "unknown" when built without git. It changes whenever
/// the code may produce other results, which the version does not.
std::string_view collsim_build_id();

}  // namespace collsim
