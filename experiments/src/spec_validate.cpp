// validate() and resolved_yaml() of experiment specs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "collsim/algorithms/registry.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/topology.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/engine.hpp"

#ifndef COLLSIM_VERSION
#error "COLLSIM_VERSION must be defined by the build (the CMake project version)"
#endif

namespace collsim {
namespace {

std::string item(std::string_view key, std::size_t i, std::size_t count) {
  return count == 1 ? std::string(key) : fmt::format("{}[{}]", key, i);
}

// Location of axis value i: its own line when it was a list item, else the key's line.
std::string where_item(const ExperimentSpec& spec, std::string_view key, std::size_t i, std::size_t count) {
  const std::string path = item(key, i, count);
  if (spec.lines.find(path) != spec.lines.end()) return spec.where(path);
  return spec.where(key);
}

template <typename T, typename Show>
void reject_duplicates(const ExperimentSpec& spec, std::string_view key, const std::vector<T>& values, Show show) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (values[i] == values[j]) {
        throw ConfigError(fmt::format("{}{} = {} is listed twice in the sweep axis '{}'",
                                      where_item(spec, key, i, values.size()), item(key, i, values.size()),
                                      show(values[i]), key));
      }
    }
  }
}

void require_non_empty(const ExperimentSpec& spec, std::string_view key, std::size_t count) {
  if (count == 0) {
    throw ConfigError(fmt::format("{}'{}' is empty (a sweep axis needs at least one value)", spec.where(key), key));
  }
}

std::string number(double value) { return fmt::format("{}", value); }

// `engine: [auto, replay]` runs replay twice on a non-blocking topology: the rows would be
// indistinguishable, so it is an error like any value listed twice.
void reject_engine_twice(const ExperimentSpec& spec, std::size_t topology) {
  const auto& resolved = spec.resolved_engines[topology];
  for (std::size_t e = 0; e < resolved.size(); ++e) {
    for (std::size_t f = 0; f < e; ++f) {
      if (resolved[e] == resolved[f]) {
        throw ConfigError(fmt::format(
            "{}engine '{}' and engine '{}' both run {} on topology '{}' (auto is replay); list each engine "
            "once",
            where_item(spec, "engine", e, resolved.size()), spec.engines[f], spec.engines[e], resolved[e],
            spec.topologies[topology].label));
      }
    }
  }
}

// Two arrival axis values that describe the same arrivals run the same points twice, whatever
// their labels or spelling (`[1ms, 0.001s]`, two equal `arrival` maps): compare the parsed
// models, written back in their resolved form.
void reject_duplicate_arrivals(const ExperimentSpec& spec) {
  std::vector<std::string> resolved;
  for (const auto& a : spec.arrivals) {
    if (a.last_rank_straggler) {
      resolved.push_back(fmt::format("one straggler at rank n-1 late by {} s", number(a.delay_s.value_or(0.0))));
    } else {
      YAML::Emitter text;
      text << YAML::Flow << arrival_to_yaml(a.model);
      resolved.emplace_back(text.c_str());
    }
  }
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (resolved[i] != resolved[j]) continue;
      // The value's own line: a `delays` item, an `arrival` item, or (delays crossed with
      // arrival models) the `delays` key.
      const ArrivalChoice& a = spec.arrivals[i];
      const std::string key = a.delay_s ? "delays" : "arrival";
      const std::string where = a.last_rank_straggler || !a.delay_s ? where_item(spec, key, i, spec.arrivals.size())
                                                                     : spec.where(key);
      throw ConfigError(fmt::format("{}arrival '{}' and arrival '{}' are the same ({}): a value is listed twice in "
                                    "the sweep axis '{}'",
                                    where, spec.arrivals[j].label, a.label, resolved[i], key));
    }
  }
}

}  // namespace

std::string_view collsim_version() { return COLLSIM_VERSION; }

void validate(ExperimentSpec& spec, bool check_plot_scripts) {
  if (spec.name.empty() || spec.name == "." || spec.name == ".." ||
      !std::all_of(spec.name.begin(), spec.name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      })) {
    throw ConfigError(fmt::format("{}name = '{}' must be a non-empty word of letters, digits, '_', '-' or '.' "
                                  "(it names the output directory)", spec.where("name"), spec.name));
  }
  require_non_empty(spec, "algorithms", spec.algorithms.size());
  for (std::size_t i = 0; i < spec.algorithms.size(); ++i) {
    try {
      find_algorithm(spec.algorithms[i]);
    } catch (const ConfigError& e) {
      throw ConfigError(where_item(spec, "algorithms", i, spec.algorithms.size()) + e.what());
    }
  }
  reject_duplicates(spec, "algorithms", spec.algorithms, [](const std::string& s) { return s; });
  require_non_empty(spec, "n", spec.n.size());
  for (std::size_t i = 0; i < spec.n.size(); ++i) {
    if (spec.n[i] < 2) {
      throw ConfigError(fmt::format("{}n = {} is not supported (n must be at least 2)",
                                    where_item(spec, "n", i, spec.n.size()), spec.n[i]));
    }
  }
  reject_duplicates(spec, "n", spec.n, [](Rank v) { return std::to_string(v); });
  require_non_empty(spec, "sizes", spec.sizes_bytes.size());
  for (std::size_t i = 0; i < spec.sizes_bytes.size(); ++i) {
    const double s = spec.sizes_bytes[i];
    if (!(std::isfinite(s) && s > 0)) {
      throw ConfigError(fmt::format("{}size = {} bytes must be positive",
                                    where_item(spec, "sizes", i, spec.sizes_bytes.size()), s));
    }
  }
  reject_duplicates(spec, "sizes", spec.sizes_bytes, number);
  require_non_empty(spec, "start", spec.starts.size());
  reject_duplicates(spec, "start", spec.starts, [](StartMode m) { return std::string(start_mode_name(m)); });
  require_non_empty(spec, "engine", spec.engines.size());
  for (std::size_t i = 0; i < spec.engines.size(); ++i) {
    if (std::find(std::begin(kEngineNames), std::end(kEngineNames), spec.engines[i]) == std::end(kEngineNames)) {
      throw ConfigError(fmt::format("{}unknown engine '{}' (known: closed_form, replay, simgrid, auto)",
                                    where_item(spec, "engine", i, spec.engines.size()), spec.engines[i]));
    }
  }
  reject_duplicates(spec, "engine", spec.engines, [](const std::string& s) { return s; });
  if (spec.trials < 1) throw ConfigError(fmt::format("{}trials = {} must be at least 1", spec.where("trials"), spec.trials));
  if (!(spec.link.latency_s >= 0 && std::isfinite(spec.link.latency_s) && spec.link.bandwidth_Bps > 0 &&
        std::isfinite(spec.link.bandwidth_Bps) && spec.link.gamma_s_per_byte >= 0)) {
    throw ConfigError(fmt::format("{}link = {{alpha {} s, bandwidth {} B/s, gamma {} s/B}} needs alpha >= 0, "
                                  "bandwidth > 0, gamma >= 0", spec.where("link"), spec.link.latency_s,
                                  spec.link.bandwidth_Bps, spec.link.gamma_s_per_byte));
  }

  require_non_empty(spec, "topology", spec.topologies.size());
  // Compared as the files they load: `dgx_h100` and the path of configs/topologies/dgx_h100.yaml
  // ran twice under one label. The shorthands (nvswitch, full_mesh) are built from `link`, not
  // from their files, so they are their own names.
  std::vector<std::string> topo_files;
  for (const auto& t : spec.topologies) {
    if (topology_uses_link(t.spec)) {
      topo_files.push_back(t.spec);
      continue;
    }
    const std::filesystem::path file = topology_file(t.spec);
    std::error_code ec;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, ec);
    topo_files.push_back(ec ? file.lexically_normal().string() : canonical.string());
  }
  reject_duplicates(spec, "topology", topo_files, [&](const std::string& f) {
    const auto at = static_cast<std::size_t>(std::find(topo_files.begin(), topo_files.end(), f) - topo_files.begin());
    if (topology_uses_link(spec.topologies[at].spec)) return fmt::format("'{}'", spec.topologies[at].label);
    return fmt::format("'{}' (the file {})", spec.topologies[at].label, quote_excerpt(f, 200));
  });
  // The label names the rows of the result files: two topologies under one label (the nvswitch
  // shorthand and a file nvswitch.yaml elsewhere) gave rows nothing told apart.
  for (std::size_t i = 0; i < spec.topologies.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (spec.topologies[i].label != spec.topologies[j].label) continue;
      throw ConfigError(fmt::format(
          "{}topology[{}] and topology[{}] are both labelled '{}' in the result files, but "
          "load different topologies ({} and {}); give the file another name",
          where_item(spec, "topology", i, spec.topologies.size()), j, i, quote_excerpt(spec.topologies[i].label, 200),
          quote_excerpt(topo_files[j], 200), quote_excerpt(topo_files[i], 200)));
    }
  }
  spec.resolved_engines.assign(spec.topologies.size(), {});
  for (std::size_t i = 0; i < spec.topologies.size(); ++i) {
    for (Rank n : spec.n) {
      try {
        const Topology topology = topology_at(spec, i, n, spec.sizes_bytes.front());
        // The engine auto stands for does not depend on n: resolve once per topology.
        if (spec.resolved_engines[i].empty()) {
          for (const auto& engine : spec.engines) {
            spec.resolved_engines[i].emplace_back(resolve_engine_name(engine));
          }
        }
      } catch (const ConfigError& e) {
        throw ConfigError(fmt::format("{}topology '{}' with n = {}: {}",
                                      where_item(spec, "topology", i, spec.topologies.size()),
                                      quote_excerpt(spec.topologies[i].label, 200), n, e.what()));
      }
    }
    reject_engine_twice(spec, i);
    for (const std::string& engine : spec.resolved_engines[i]) {
      if (spec.reshare_interval_s > 0 && !make_engine(engine)->has_reshare_interval()) {
        throw ConfigError(fmt::format("{}{}: the {} engine is exact and has no approximate mode (use engine: replay)",
                                      spec.where("reshare_interval"), format_duration(spec.reshare_interval_s), engine));
      }
    }
  }

  require_non_empty(spec, "arrival", spec.arrivals.size());
  reject_duplicate_arrivals(spec);
  for (std::size_t i = 0; i < spec.arrivals.size(); ++i) {
    for (Rank n : spec.n) {
      try {
        arrival_for(spec.arrivals[i], n).validate(n, "arrival");
      } catch (const ConfigError& e) {
        const std::string key = spec.arrivals[i].last_rank_straggler ? "delays" : "arrival";
        throw ConfigError(fmt::format("{}arrival '{}' with n = {}: {}", spec.where(key),
                                      quote_excerpt(spec.arrivals[i].label, 200), n, e.what()));
      }
    }
  }

  reject_duplicates(spec, "plot", spec.plots, [](const std::string& s) { return s; });
  for (std::size_t i = 0; check_plot_scripts && i < spec.plots.size(); ++i) {
    if (const FileLookup script = look_up_file(spec.plots[i]); script.kind != FileLookup::Kind::Regular) {
      throw ConfigError(fmt::format("{}plot script '{}' {}{}", where_item(spec, "plot", i, spec.plots.size()),
                                    quote_excerpt(spec.plots[i], 200), script.why,
                                    script.kind == FileLookup::Kind::Directory ? " (give a Python script)" : ""));
    }
  }
  // The baseline joins the algorithms before the support check, so a hierarchical baseline
  // on a flat topology is refused like any listed algorithm.
  if (std::find(spec.algorithms.begin(), spec.algorithms.end(), spec.baseline) == spec.algorithms.end()) {
    spec.algorithms.push_back(spec.baseline);
    spec.baseline_added = true;
  }
  if (!spec.skip_unsupported) {
    for (std::size_t i = 0; i < spec.algorithms.size(); ++i) {
      const AlgorithmInfo& info = find_algorithm(spec.algorithms[i]);
      // Hierarchical rows see each topology's node size, switch-reduction rows its capability;
      // the other rows ignore the topology.
      const bool per_topology = info.hierarchical || info.needs_switch_reduction;
      const std::size_t topologies = per_topology ? spec.topologies.size() : 1;
      for (std::size_t t = 0; t < topologies; ++t) {
        for (std::size_t j = 0; j < spec.n.size(); ++j) {
          const NConstraintContext context = per_topology ? node_context_at(spec, t, spec.n[j]) : NConstraintContext{};
          if (const std::string why = info.unsupported_reason(spec.n[j], context); !why.empty()) {
            throw ConfigError(
                fmt::format("{}algorithm '{}' does not support n = {} on topology '{}' ({}); remove it "
                            "or set 'skip_unsupported: true'",
                            spec.baseline_added && i + 1 == spec.algorithms.size()
                                ? spec.where("baseline")
                                : where_item(spec, "algorithms", i, spec.algorithms.size()),
                            info.name, spec.n[j], quote_excerpt(spec.topologies[t].label, 200), why));
          }
        }
      }
    }
  }
}

const std::string& ExperimentSpec::engine_at(std::size_t engine, std::size_t topology) const {
  COLLSIM_ASSERT(topology < resolved_engines.size() && engine < resolved_engines[topology].size(),
                 "engine_at needs a validated spec and indices in range");
  return resolved_engines[topology][engine];
}

std::string resolved_yaml(const ExperimentSpec& spec) {
  YAML::Emitter out;
  out << YAML::Comment(
             "Written by collsim: the study as it ran, every default filled in. `collsim run` on this file repeats it.")
      << YAML::Newline;
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << spec.name;
  if (!spec.description.empty()) out << YAML::Key << "description" << YAML::Value << spec.description;
  out << YAML::Key << "collsim_version" << YAML::Value << std::string(collsim_version());
  out << YAML::Key << "seed" << YAML::Value << std::to_string(spec.seed);
  out << YAML::Key << "trials" << YAML::Value << spec.trials;
  out << YAML::Key << "algorithms" << YAML::Value << YAML::Flow << spec.algorithms;
  if (spec.baseline_added) out << YAML::Comment(spec.baseline + " added: it is the baseline of the speedups");
  out << YAML::Key << "baseline" << YAML::Value << spec.baseline;
  out << YAML::Key << "n" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (Rank n : spec.n) out << n;
  out << YAML::EndSeq;
  out << YAML::Key << "sizes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (double s : spec.sizes_bytes) out << number(s) + "B";
  out << YAML::EndSeq << YAML::Comment("bytes");
  out << YAML::Key << "topology" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& t : spec.topologies) out << t.spec;
  out << YAML::EndSeq;
  // Topology files carry their own links; `link` beside one is refused on reading, so it is
  // written only when it applied.
  const bool link_applies = spec.link_model || std::all_of(spec.topologies.begin(), spec.topologies.end(),
                                                           [](const TopologyChoice& t) { return topology_uses_link(t.spec); });
  if (link_applies) {
    out << YAML::Key << "link" << YAML::Value << YAML::BeginMap;
    if (spec.link_model) {
      out << YAML::Key << "model" << YAML::Value << spec.link_model_file;
      out << YAML::Comment(fmt::format("single fit: alpha {} s, bandwidth {} B/s, gamma {} s/B", number(spec.link.latency_s),
                                       number(spec.link.bandwidth_Bps), number(spec.link.gamma_s_per_byte)));
    } else {
      out << YAML::Key << "alpha" << YAML::Value << number(spec.link.latency_s) + "s";
      out << YAML::Key << "bandwidth" << YAML::Value << number(spec.link.bandwidth_Bps) + "Bps";
      out << YAML::Key << "gamma" << YAML::Value << number(spec.link.gamma_s_per_byte) + "s";
    }
    out << YAML::EndMap;
  }
  const bool shorthand = std::all_of(spec.arrivals.begin(), spec.arrivals.end(),
                                     [](const ArrivalChoice& a) { return a.last_rank_straggler; });
  if (shorthand) {
    out << YAML::Key << "delays" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& a : spec.arrivals) out << number(a.delay_s.value_or(0.0)) + "s";
    out << YAML::EndSeq << YAML::Comment("seconds; one straggler, rank n-1");
  } else {
    // Crossed with `delays`: each model once (its stragglers' delays are the first delay's, which
    // `delays` replaces again on reading), and the delays as their own key.
    const std::size_t stride = std::max<std::size_t>(spec.crossed_delays_s.size(), 1);
    if (!spec.crossed_delays_s.empty()) {
      out << YAML::Key << "delays" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (double d : spec.crossed_delays_s) out << number(d) + "s";
      out << YAML::EndSeq << YAML::Comment("seconds; they replace every straggler's delay below");
    }
    out << YAML::Key << "arrival" << YAML::Value << YAML::BeginSeq;
    for (std::size_t i = 0; i < spec.arrivals.size(); i += stride) {
      const ArrivalChoice& a = spec.arrivals[i];
      YAML::Node node = arrival_to_yaml(a.model);
      YAML::Node labelled;
      labelled["label"] = a.label;
      for (const auto& entry : node) labelled[entry.first] = entry.second;
      out << labelled;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "start" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (StartMode m : spec.starts) out << start_mode_name(m);
  out << YAML::EndSeq;
  out << YAML::Key << "engine" << YAML::Value << YAML::Flow << spec.engines;
  if (std::find(spec.engines.begin(), spec.engines.end(), kAutoEngine) != spec.engines.end()) {
    std::vector<std::string> runs;
    for (std::size_t t = 0; t < spec.topologies.size(); ++t) {
      for (std::size_t e = 0; e < spec.engines.size(); ++e) {
        if (spec.engines[e] == kAutoEngine) runs.push_back(spec.topologies[t].label + ": " + spec.engine_at(e, t));
      }
    }
    out << YAML::Comment(fmt::format("auto ran {}", fmt::join(runs, ", ")));
  }
  out << YAML::Key << "pipeline_chunks" << YAML::Value << spec.pipeline_chunks;
  out << YAML::Key << "late_ranks" << YAML::Value << spec.late_ranks;
  if (spec.agreement_s) out << YAML::Key << "agreement_cost" << YAML::Value << fmt::format("{}s", *spec.agreement_s);
  if (spec.reshare_interval_s > 0) {
    out << YAML::Key << "reshare_interval" << YAML::Value << fmt::format("{}s", spec.reshare_interval_s);
    out << YAML::Comment("approximate: replay solves bandwidth sharing at most this often");
  }
  if (spec.execution) out << YAML::Key << "execution" << YAML::Value << execution_style_name(*spec.execution);
  if (spec.launch_s) out << YAML::Key << "launch" << YAML::Value << fmt::format("{}s", *spec.launch_s);
  if (spec.gpus_per_thread != 1) out << YAML::Key << "gpus_per_thread" << YAML::Value << spec.gpus_per_thread;
  out << YAML::Key << "skip_unsupported" << YAML::Value << (spec.skip_unsupported ? "true" : "false");
  if (!spec.plots.empty()) out << YAML::Key << "plot" << YAML::Value << YAML::Flow << spec.plots;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace collsim
