#include "collsim/sim/calibrate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <span>
#include <tuple>

#include "collsim/algorithms/registry.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/atomic_file.hpp"
#include "collsim/models/formats/measurement_csv.hpp"
#include "collsim/models/formats/nccl_log.hpp"
#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"
#include "collsim/sim/nccl_choice.hpp"
#include "calibration_model.hpp"
#include "collsim/sim/schedule_cost.hpp"

namespace collsim {
namespace {

constexpr std::array<SizeRange, 3> kSizeRanges{{
    {"< 64 KiB", 0.0, 65536.0},
    {"64 KiB..16 MiB", 65536.0, 16777216.0},
    {">= 16 MiB", 16777216.0, std::numeric_limits<double>::infinity()},
}};

// The coefficients are re-evaluated at the fitted parameters until the critical path stops
// moving; symmetric schedules settle at once, a few rounds bound the rest.
constexpr int kMaxCriticalPathIterations = 5;
// Fits in the fixed point of NCCL's choice (--algo nccl); the logs here settle in two or three.
constexpr int kMaxChoiceRounds = 6;

std::string fnv1a64(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

bool contains(const std::vector<Collective>& list, Collective c) {
  return std::find(list.begin(), list.end(), c) != list.end();
}

double pick_time(const NcclLogRow& row, LogTime time) {
  switch (time) {
    case LogTime::OutOfPlace: return row.time_oop_s;
    case LogTime::InPlace: return row.time_ip_s;
    case LogTime::Min: return std::min(row.time_oop_s, row.time_ip_s);
  }
  return row.time_oop_s;
}

// NCCL reads its NCCL_ALGO and NCCL_PROTO values in any case ("ring", "RING", "Ring").
bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// The table row that `name`, the log's one NCCL_ALGO value (single_setting), names
// (AlgorithmInfo::nccl_name).
const AlgorithmInfo& row_named_by_nccl(const NcclLog& log, std::string_view name) {
  std::vector<std::string_view> known;
  for (const AlgorithmInfo& info : all_algorithms()) {
    if (info.nccl_name.empty()) continue;
    if (same_ignoring_case(info.nccl_name, name)) return info;
    known.push_back(info.nccl_name);
  }
  throw ConfigError(fmt::format("{}:{}: NCCL_ALGO = '{}' is not an algorithm collsim models ({}); explain the log "
                                "with --algo and remove the setting from its header",
                                log.source, log.nccl_algo_line, quote_excerpt(name), fmt::join(known, ", ")));
}

constexpr Protocol kProtocols[] = {Protocol::LL, Protocol::LL128, Protocol::Simple};

// The protocol that `name`, the log's one NCCL_PROTO value (single_setting), names.
Protocol protocol_named_by_nccl(const NcclLog& log, std::string_view name) {
  for (const Protocol p : kProtocols) {
    if (same_ignoring_case(protocol_name(p), name)) return p;
  }
  throw ConfigError(fmt::format("{}:{}: NCCL_PROTO = '{}' is not one protocol (LL, LL128 or Simple); remove it from "
                                "the header to let the fit pick the protocol by size",
                                log.source, log.nccl_proto_line, quote_excerpt(name)));
}

// What an NCCL_ALGO / NCCL_PROTO setting names for `collective`: one value, or nullopt when it
// names a set. NCCL reads a list ("Ring,Tree"), an exclusion ("^LL128", common to keep a protocol
// off), and since 2.24 ';'-separated entries "function:list" in which the first entry may omit
// the function and then applies to every function not listed later
// ("ring;allreduce:tree;allgather:ring"). A set leaves NCCL the choice among its members, so the
// fit treats the log as naming none; an exclusion that leaves one member of `universe` (the
// protocols: "^LL,LL128" is Simple) names that one.
std::string_view trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '"' || v.front() == '\'')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '"' || v.back() == '\'')) v.remove_suffix(1);
  return v;
}

std::optional<std::string> single_setting(std::string_view value, Collective collective,
                                          std::span<const std::string_view> universe = {}) {
  std::string wanted(collective_name(collective));
  std::erase(wanted, '_');  // NCCL spells them allreduce, allgather, reducescatter
  std::string_view chosen;
  bool first = true;
  while (true) {
    const std::size_t end = value.find(';');
    const std::string_view entry = trimmed(value.substr(0, end));
    const std::size_t colon = entry.find(':');
    if (colon == std::string_view::npos) {
      if (first) chosen = entry;  // the default for functions not listed
    } else if (same_ignoring_case(trimmed(entry.substr(0, colon)), wanted)) {
      chosen = trimmed(entry.substr(colon + 1));
    }
    first = false;
    if (end == std::string_view::npos) break;
    value.remove_prefix(end + 1);
  }
  if (chosen.empty()) return std::nullopt;
  if (chosen.front() == '^' && !universe.empty()) {
    std::vector<std::string_view> left(universe.begin(), universe.end());
    std::string_view excluded = chosen.substr(1);
    while (!excluded.empty()) {
      const std::size_t comma = excluded.find(',');
      const std::string_view name = trimmed(excluded.substr(0, comma));
      std::erase_if(left, [&](std::string_view u) { return same_ignoring_case(u, name); });
      excluded.remove_prefix(comma == std::string_view::npos ? excluded.size() : comma + 1);
    }
    return left.size() == 1 ? std::optional<std::string>(std::string(left.front())) : std::nullopt;
  }
  if (chosen.find_first_of("^,") != std::string_view::npos) return std::nullopt;
  return std::string(chosen);
}

void load_nccl_log(const std::filesystem::path& path, const std::string& text, const CalibrationOptions& options,
                   CalibrationInput& input, std::vector<CalibrationPoint>& points) {
  NcclLogOptions log_options;
  log_options.collective = options.collective;
  log_options.nranks = options.nranks;
  const NcclLog log = parse_nccl_log(text, path.string(), log_options);
  input.format = "nccl-tests";
  input.collective = collective_name(log.collective);
  input.n = log.nranks;
  input.rows = log.rows.size();
  input.skipped = log.zero_size_rows;
  input.how = fmt::format("collective from {}, nranks from {}", log.collective_from, log.nranks_from);
  input.warnings = log.warnings;
  // What NCCL ran, when the log says: its NCCL_ALGO overrides --algo for this log.
  std::string algorithm = options.algorithm;
  const auto names_a_set = [&](std::string_view setting, std::string_view value, std::size_t line, std::string_view then) {
    input.how += fmt::format(", {} = {} (line {}) names no single one: {}", setting, value, line, then);
  };
  if (!log.nccl_algo.empty() && log.collective != Collective::SendRecv) {
    if (const auto one = single_setting(log.nccl_algo, log.collective)) {
      algorithm = std::string(row_named_by_nccl(log, *one).name);
      input.how += fmt::format(", explained by {} (NCCL_ALGO = {}, line {})", algorithm, log.nccl_algo, log.nccl_algo_line);
    } else {
      names_a_set("NCCL_ALGO", log.nccl_algo, log.nccl_algo_line, fmt::format("rows explained by --algo {}", algorithm));
    }
  }
  std::optional<Protocol> protocol;
  if (!log.nccl_proto.empty()) {
    std::vector<std::string_view> protocols;
    for (const Protocol p : kProtocols) protocols.push_back(protocol_name(p));
    if (const auto one = single_setting(log.nccl_proto, log.collective, protocols)) {
      protocol = protocol_named_by_nccl(log, *one);
      input.how += fmt::format(", protocol {} (NCCL_PROTO, line {})", protocol_name(*protocol), log.nccl_proto_line);
    } else {
      names_a_set("NCCL_PROTO", log.nccl_proto, log.nccl_proto_line, "the fit picks the protocol by size");
    }
  }
  for (const auto& row : log.rows) {
    CalibrationPoint p;
    p.source = input.file;
    p.line = row.line;
    p.collective = log.collective;
    p.algorithm = log.collective == Collective::SendRecv ? "sendrecv" : algorithm;
    p.protocol = protocol;
    p.n = log.nranks;
    p.gpus_per_thread = log.gpus_per_thread;
    p.size_bytes = row.size_bytes;
    p.measured_s = pick_time(row, options.time);
    points.push_back(std::move(p));
  }
}

// How a collsim-cuda CSV row is explained: the collective and schedule that ran, or nothing for
// the local reduction kernel (no communication, so no schedule).
struct CsvExplanation {
  bool explained = true;
  Collective collective = Collective::AllReduce;
  std::string algorithm;
  bool straggler_aware = false;
  // collsim-cuda runs collsim's schedules one NCCL group (plus a reduction kernel) per round;
  // native NCCL collectives and the p2p micro-benchmark are one launch.
  ExecutionStyle execution = ExecutionStyle::Fused;
};

CsvExplanation explain_csv_row(const MeasurementRow& row, const CalibrationOptions& options,
                               const std::filesystem::path& path) {
  const auto& known = all_algorithms();
  const auto it = std::find_if(known.begin(), known.end(), [&](const AlgorithmInfo& a) { return a.name == row.algorithm; });
  // A row chosen per run (`nccl`) is collsim-cuda's native NCCL baseline, not a collsim schedule.
  if (it != known.end() && !it->chosen_per_run) {
    return {true, Collective::AllReduce, row.algorithm, it->straggler_aware, ExecutionStyle::P2pRounds};
  }
  if (row.algorithm == "p2p") return {true, Collective::SendRecv, "sendrecv", false, ExecutionStyle::Fused};
  if (row.algorithm == "reduce_scatter_nccl") {
    return {true, Collective::ReduceScatter, options.algorithm, false, ExecutionStyle::Fused};
  }
  if (row.algorithm == "reduce_kernel") return {false, Collective::AllReduce, {}, false, ExecutionStyle::Fused};
  if (row.algorithm.rfind("nccl", 0) == 0) {
    return {true, Collective::AllReduce, options.algorithm, false, ExecutionStyle::Fused};
  }
  throw ConfigError(fmt::format("{}:{}: algorithm '{}' is neither a collsim schedule ({}) nor a native NCCL baseline "
                                "('nccl') nor a micro-benchmark (p2p, reduce_scatter_nccl, reduce_kernel)",
                                path.string(), row.line, row.algorithm, algorithm_names()));
}

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t m = values.size();
  return m % 2 == 1 ? values[m / 2] : 0.5 * (values[m / 2 - 1] + values[m / 2]);
}

// Slope of time against size (plain least squares; the sizes are all large), the kernel's
// seconds per reduced byte with its launch cost removed. 0 when fewer than 2 sizes.
double kernel_gamma_s_per_byte(const std::vector<std::pair<double, double>>& points) {
  if (points.size() < 2) return 0.0;
  double sx = 0, sy = 0;
  for (const auto& [x, y] : points) {
    sx += x;
    sy += y;
  }
  const double mx = sx / static_cast<double>(points.size());
  const double my = sy / static_cast<double>(points.size());
  double sxy = 0, sxx = 0;
  for (const auto& [x, y] : points) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) * (x - mx);
  }
  return sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
}

// Our CSVs have one row per iteration; a fit point is the median over the iterations of one
// (algorithm, n, size, straggler). Rows with an injected delay measure the delay as well as the
// link and are left to the straggler studies. The reduction-kernel micro-benchmark runs on one
// GPU and is not a schedule: it is reported as a separate gamma estimate, not fitted.
void load_measurement_csv(const std::filesystem::path& path, const std::string& text, const CalibrationOptions& options,
                          CalibrationInput& input, std::vector<CalibrationPoint>& points,
                          std::vector<std::string>& notes) {
  const MeasurementCsv csv = parse_measurement_csv(text, path.string());
  input.format = "collsim-csv";
  using Key = std::tuple<std::string, std::uint32_t, std::uint64_t, std::int64_t>;
  std::map<Key, std::size_t> index;
  struct Group {
    const MeasurementRow* first;
    std::vector<double> times;
  };
  std::vector<Group> groups;
  std::size_t ungated = 0;
  std::size_t empty_runs = 0;
  for (const auto& row : csv.rows) {
    if (row.delay_s > 0) {
      ++input.skipped;
      continue;
    }
    // Ungated rows include the host's enqueue time (collsim-cuda --launch both writes them next
    // to the gated ones); the link model describes the devices, so fit the gated rows only.
    // empty_timed_run rows are the timing frame's own cost, for subtracting by hand.
    if (row.launch == "ungated" || row.algorithm == "empty_timed_run") {
      ++(row.launch == "ungated" ? ungated : empty_runs);
      ++input.skipped;
      continue;
    }
    const Key key{row.algorithm, row.n, row.size_bytes, row.straggler};
    auto [it, inserted] = index.emplace(key, groups.size());
    if (inserted) groups.push_back({&row, {}});
    groups[it->second].times.push_back(row.time_s);
  }
  if (groups.empty()) {
    throw ConfigError(fmt::format("{}: every row has delay_s > 0, launch 'ungated' or is an empty_timed_run; "
                                  "calibration needs delay-free gated runs",
                                  path.string()));
  }
  if (ungated > 0) notes.push_back(fmt::format("{}: {} ungated rows not fitted (host enqueue time)", input.file, ungated));
  if (empty_runs > 0) {
    notes.push_back(fmt::format("{}: {} empty_timed_run rows not fitted (timing frame cost)", input.file, empty_runs));
  }
  const std::size_t delay_free_iterations = csv.rows.size() - input.skipped;
  std::set<std::uint32_t> ns;
  std::set<std::string> collectives;
  std::vector<std::pair<double, double>> kernel_large;  // (size, median time) for sizes >= 16 MiB
  std::size_t kernel_points = 0;
  for (const auto& g : groups) {
    const MeasurementRow& row = *g.first;
    const CsvExplanation e = explain_csv_row(row, options, path);
    if (!e.explained) {
      ++kernel_points;
      // Large sizes only: below a few MiB the kernel launch, not the arithmetic, dominates.
      if (row.size_bytes >= 16ull * 1024 * 1024) {
        kernel_large.emplace_back(static_cast<double>(row.size_bytes), median_of(g.times));
      }
      continue;
    }
    if (row.n < 2) {
      throw ConfigError(fmt::format("{}:{}: {} on n = {} GPU: a collective needs at least 2", path.string(), row.line,
                                    row.algorithm, row.n));
    }
    CalibrationPoint p;
    p.source = input.file;
    p.line = row.line;
    p.collective = e.collective;
    p.algorithm = e.algorithm;
    p.straggler = e.straggler_aware ? row.straggler : -1;
    p.execution = e.execution;
    p.n = row.n;
    p.size_bytes = static_cast<double>(row.size_bytes);
    p.measured_s = median_of(g.times);
    points.push_back(std::move(p));
    ns.insert(row.n);
    collectives.insert(collective_name(e.collective));
    ++input.rows;
  }
  if (kernel_points > 0) {
    const double gamma = kernel_gamma_s_per_byte(kernel_large);
    notes.push_back(gamma > 0 ? fmt::format("{}: reduce_kernel micro-benchmark alone gives gamma ~ {:.4g} ps/B (slope "
                                            "over sizes >= 16 MiB; not part of the fit)",
                                            input.file, 1e12 * gamma)
                              : fmt::format("{}: {} reduce_kernel points not fitted (too few sizes >= 16 MiB to "
                                            "estimate gamma from)",
                                            input.file, kernel_points));
    input.skipped += kernel_points;
  }
  input.n = ns.size() == 1 ? *ns.begin() : 0;
  input.collective = collectives.size() == 1 ? *collectives.begin() : (collectives.empty() ? "none" : "mixed");
  input.how = fmt::format("{} delay-free iterations grouped into {} points (median)", delay_free_iterations, groups.size());
}

// Schedules are generated once per (collective, n, algorithm, straggler) and reused per size.
// The schedule that explains a row, built as a run on `topology` builds it (simulate, and
// NCCL's choice): with the topology's node size, and for a row whose pipeline depth follows the
// buffer and the link (depth_for) at the row's size and the link being fitted.
class ScheduleCache {
 public:
  const Schedule& get(const CalibrationPoint& p, const Topology& topology) {
    const bool sized = p.collective != Collective::SendRecv && find_algorithm(p.algorithm).depth_for != nullptr;
    const auto key = std::make_tuple(p.collective, p.n, p.algorithm, p.straggler, sized ? p.size_bytes : 0.0,
                                     sized ? topology.link.latency_s : 0.0, sized ? topology.link.bandwidth_Bps : 0.0);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    std::optional<Rank> s;
    if (p.straggler >= 0) s = static_cast<Rank>(p.straggler);
    try {
      if (p.collective == Collective::SendRecv) {
        return cache_.emplace(key, collective_schedule(p.collective, p.n, p.algorithm, s)).first->second;
      }
      AlgorithmOptions options;
      options.n = p.n;
      options.straggler = s;
      options.gpus_per_node = gpus_per_node_of(topology);
      set_sizing(options, topology, p.size_bytes);
      return cache_.emplace(key, collective_part(generate_schedule(p.algorithm, options), p.collective)).first->second;
    } catch (const ScheduleError& e) {
      throw ScheduleError(fmt::format("{}:{}: cannot explain this {} measurement on {} ranks: {}", p.source, p.line,
                                      collective_name(p.collective), p.n, e.what()));
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("{}:{}: cannot explain this {} measurement on {} ranks: {}", p.source, p.line,
                                    collective_name(p.collective), p.n, e.what()));
    }
  }

 private:
  std::map<std::tuple<Collective, std::uint32_t, std::string, std::int64_t, double, double, double>, Schedule> cache_;
};

// "file: ring 8 B..1 MiB, nvls 2 MiB..16 GiB" per input with rows explained by NCCL's choice.
std::string describe_choices(const std::vector<CalibrationPoint>& points) {
  std::map<std::tuple<std::string, Collective, std::uint32_t>, std::vector<const CalibrationPoint*>> groups;
  for (const auto& p : points) {
    if (p.chosen_by_nccl) groups[{p.source, p.collective, p.n}].push_back(&p);
  }
  std::vector<std::string> parts;
  for (auto& [group, rows] : groups) {
    const auto& [source, collective, n] = group;
    std::sort(rows.begin(), rows.end(), [](const auto* a, const auto* b) { return a->size_bytes < b->size_bytes; });
    std::vector<std::string> spans;
    for (std::size_t i = 0; i < rows.size();) {
      std::size_t j = i;
      while (j + 1 < rows.size() && rows[j + 1]->algorithm == rows[i]->algorithm) ++j;
      spans.push_back(fmt::format("{} {}..{}", rows[i]->algorithm, format_size(rows[i]->size_bytes),
                                  format_size(rows[j]->size_bytes)));
      i = j + 1;
    }
    parts.push_back(fmt::format("{} ({} n={}): {}", source, collective_name(collective), n, fmt::join(spans, ", ")));
  }
  return fmt::format("explained by NCCL's choice under the fitted model: {}", fmt::join(parts, "; "));
}

std::vector<FitRow> fit_rows_of(const std::vector<CalibrationPoint>& points) {
  std::vector<FitRow> rows;
  for (const auto& p : points) {
    if (p.fitted) rows.push_back({p.coefficients, p.measured_s, p.size_bytes, p.protocol});
  }
  return rows;
}

std::vector<ClassFitRow> class_fit_rows_of(const std::vector<CalibrationPoint>& points) {
  std::vector<ClassFitRow> rows;
  for (const auto& p : points) {
    if (p.fitted) rows.push_back({p.class_coefficients, p.measured_s, p.size_bytes});
  }
  return rows;
}

bool same_coefficients(const ClassCostCoefficients& a, const ClassCostCoefficients& b) {
  const auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-12 * std::max(std::fabs(x), std::fabs(y)); };
  if (a.latency.size() != b.latency.size() || a.bytes.size() != b.bytes.size()) return false;
  for (std::size_t k = 0; k < a.latency.size(); ++k) {
    if (!close(a.latency[k], b.latency[k]) || !close(a.bytes[k], b.bytes[k])) return false;
  }
  return close(a.reduce_bytes, b.reduce_bytes) && close(a.launches, b.launches);
}

// The calibration topology for every measured n, carrying the current fitted parameters (the
// evaluation point of the critical-path search). Built with the default link so that the default
// nvswitch starts where the single-class fit always started.
class TopologyCache {
 public:
  explicit TopologyCache(std::string spec) : spec_(std::move(spec)) {}

  Topology& get(std::uint32_t n) {
    if (auto it = cache_.find(n); it != cache_.end()) return it->second;
    Topology t;
    try {
      t = resolve_topology(spec_, n, LinkModel{});
    } catch (const ConfigError& e) {
      throw ConfigError(fmt::format("--topology {} with n = {}: {}", spec_, n, e.what()));
    }
    if (t.link_classes.empty()) t.link_classes = {{kNvlinkClass, t.link.latency_s, t.link.bandwidth_Bps}};
    if (!cache_.empty() && names_of(t) != names_of(cache_.begin()->second)) {
      throw ConfigError(fmt::format("--topology {}: n = {} gives link classes {}, n = {} gives {}", spec_, n,
                                    fmt::join(names_of(t), ", "), cache_.begin()->first,
                                    fmt::join(names_of(cache_.begin()->second), ", ")));
    }
    own_classes_.emplace(n, t.link_classes);
    return cache_.emplace(n, std::move(t)).first->second;
  }

  std::vector<std::string> class_names() const {
    return cache_.empty() ? std::vector<std::string>{kNvlinkClass} : names_of(cache_.begin()->second);
  }

  // Single-class fit: the one class takes the fitted link.
  void apply(const LinkModel& link) {
    for (auto& [n, t] : cache_) {
      t.set_link_class(0, link.latency_s, link.bandwidth_Bps);
      t.link.gamma_s_per_byte = link.gamma_s_per_byte;
    }
  }

  // Per-class fit: identified classes take their fit; the others the topology's own values
  // (not an earlier fit's: NCCL's choice refits, and a class may drop out of a later fit).
  void apply(const ClassFitResult& fit) {
    for (auto& [n, t] : cache_) {
      const std::vector<LinkClass>& own = own_classes_.at(n);
      for (std::uint32_t k = 0; k < fit.classes.size(); ++k) {
        const LinkClass& c = own[k];
        if (fit.classes[k].identified) {
          t.set_link_class(k, fit.classes[k].link.latency_s, fit.classes[k].link.bandwidth_Bps);
        } else {
          t.set_link_class(k, c.latency_s, c.bandwidth_Bps);
        }
      }
      t.link.gamma_s_per_byte = fit.gamma_s_per_byte;
    }
  }

 private:
  static std::vector<std::string> names_of(const Topology& t) {
    std::vector<std::string> names;
    for (const auto& c : t.link_classes) names.push_back(c.name);
    return names;
  }

  std::string spec_;
  std::map<std::uint32_t, Topology> cache_;
  std::map<std::uint32_t, std::vector<LinkClass>> own_classes_;  // per n, as built
};

// A cross-prediction through a class the fit did not identify would need a made-up parameter.
void check_predictable(const CalibrationReport& report) {
  const auto& classes = report.class_fit->classes;
  for (const auto& p : report.points) {
    for (std::size_t k = 0; k < classes.size(); ++k) {
      if (classes[k].identified) continue;
      if (p.class_coefficients.latency[k] > 0 || p.class_coefficients.bytes[k] > 0) {
        throw ConfigError(fmt::format(
            "{}:{}: the cross-predicted {} on {} ranks crosses link class '{}', which no fitted measurement "
            "identifies; fit on measurements that cross it (--fit-on) or do not predict this collective (--predict)",
            p.source, p.line, collective_name(p.collective), p.n, classes[k].name));
      }
    }
  }
}

// Errors per (input, collective, n), fitted groups first, in input order.
std::vector<SourceErrors> source_errors(const CalibrationReport& report) {
  std::vector<SourceErrors> out;
  for (const bool fitted : {true, false}) {
    for (const auto& input : report.inputs) {
      std::vector<std::pair<Collective, std::uint32_t>> groups;
      for (const auto& p : report.points) {
        const auto key = std::make_pair(p.collective, p.n);
        if (p.source == input.file && p.fitted == fitted && std::find(groups.begin(), groups.end(), key) == groups.end()) {
          groups.push_back(key);
        }
      }
      for (const auto& [collective, n] : groups) {
        SourceErrors s;
        s.source = input.file;
        s.collective = collective;
        s.n = n;
        s.fitted = fitted;
        std::vector<double> primary, single;
        std::vector<const CalibrationPoint*> mine;
        for (const auto& p : report.points) {
          if (p.source == input.file && p.fitted == fitted && p.collective == collective && p.n == n) {
            mine.push_back(&p);
            primary.push_back(p.rel_error);
            single.push_back(p.rel_error_single);
          }
        }
        s.overall = error_stats(primary);
        s.overall_single = error_stats(single);
        for (const auto& range : kSizeRanges) {
          std::vector<double> errors;
          for (const auto* p : mine) {
            if (p->size_bytes >= range.min_size_bytes && p->size_bytes < range.max_size_bytes) errors.push_back(p->rel_error);
          }
          if (!errors.empty()) s.ranges.push_back({range.label, error_stats(errors)});
        }
        out.push_back(std::move(s));
      }
    }
  }
  return out;
}

// As many protocol regimes (LL, LL128, Simple) as the fitted sizes support, each spanning at
// least 4 distinct sizes (fit_link_model's rule): a full nccl-tests sweep gets all three.
std::uint32_t auto_regimes(const std::vector<CalibrationPoint>& points) {
  std::set<double> sizes;
  for (const auto& p : points) {
    if (p.fitted) sizes.insert(p.size_bytes);
  }
  return sizes.size() >= 12 ? 3 : sizes.size() >= 8 ? 2 : 1;
}

// A regime of `regimes` that no fitted row can join: rows whose log names its protocol join that
// protocol's regime only (RegimeSearch), so when every fitted row names one, a regime whose
// protocol none names is left without rows and no fit exists. nullopt when every regime can fill.
std::optional<std::uint32_t> regime_without_rows(const std::vector<CalibrationPoint>& points, std::uint32_t regimes) {
  if (regimes < 2) return std::nullopt;
  for (const auto& p : points) {
    if (p.fitted && !p.protocol) return std::nullopt;
  }
  for (std::uint32_t k = 0; k < regimes; ++k) {
    const Protocol protocol = protocol_of_regime(k, regimes);
    if (std::none_of(points.begin(), points.end(), [&](const auto& p) { return p.fitted && p.protocol == protocol; })) {
      return k;
    }
  }
  return std::nullopt;
}

// How an input is named in the outputs and messages: its file name, or the path as given when
// another input has the same file name (h100/all_reduce.txt and a100/all_reduce.txt), so the
// per-source errors and --hold-out never merge two files.
std::string display_name(const std::filesystem::path& path, std::span<const std::filesystem::path> files) {
  const auto same_name =
      std::count_if(files.begin(), files.end(), [&](const auto& f) { return f.filename() == path.filename(); });
  return same_name > 1 ? path.string() : path.filename().string();
}

// The sources (display names) --hold-out selects. An entry names an input by its name in the
// outputs, by the path as given, or by any other path to the same file; a file name shared by
// two inputs is refused, naming both, since holding out both was never what was asked.
std::set<std::string> held_out_inputs(const std::vector<std::string>& hold_out,
                                      const std::vector<CalibrationInput>& inputs) {
  std::set<std::string> out;
  for (const auto& h : hold_out) {
    std::vector<const CalibrationInput*> matches;
    std::vector<std::string> same_file_name;
    for (const auto& in : inputs) {
      std::error_code ec;
      const bool same_file = std::filesystem::equivalent(h, in.path, ec) && !ec;
      if (in.file == h || in.path == h || same_file) matches.push_back(&in);
      if (std::filesystem::path(in.path).filename() == h) same_file_name.push_back(in.path);
    }
    if (matches.empty() && same_file_name.size() > 1) {
      throw ConfigError(
          fmt::format("--hold-out {}: inputs {} both have this file name; give the path of the one to hold out",
                      quote_excerpt(h, 200), fmt::join(same_file_name, " and ")));
    }
    if (matches.empty())
      throw ConfigError(fmt::format("--hold-out {}: no input file has this name or path", quote_excerpt(h, 200)));
    for (const auto* m : matches) out.insert(m->file);
  }
  return out;
}

}  // namespace

const char* log_time_name(LogTime time) {
  switch (time) {
    case LogTime::Min: return "min";
    case LogTime::OutOfPlace: return "out_of_place";
    case LogTime::InPlace: return "in_place";
  }
  return "min";
}

LogTime parse_log_time(std::string_view name) {
  for (const LogTime t : {LogTime::Min, LogTime::OutOfPlace, LogTime::InPlace}) {
    if (name == log_time_name(t)) return t;
  }
  throw ConfigError(fmt::format("time: unknown value '{}' (known: min, out_of_place, in_place)", name));
}

std::span<const SizeRange> size_ranges() { return kSizeRanges; }

CalibrationReport run_calibration(std::span<const std::filesystem::path> files, const CalibrationOptions& options) {
  if (files.empty()) throw ConfigError("calibrate: no input file given (nccl-tests logs or collsim-cuda CSVs)");
  if (options.regimes > 3) {
    throw ConfigError(fmt::format("--regimes: {} is outside 1..3 (0 = as many as the sizes support)", options.regimes));
  }
  find_algorithm(options.algorithm);  // an unknown name fails here, before any file is read
  for (const auto c : options.predict) {
    if (contains(options.fit_on, c)) {
      throw ConfigError(fmt::format("--predict {}: the collective is also in --fit-on; a cross-prediction must "
                                    "predict what was not fitted",
                                    collective_name(c)));
    }
  }
  CalibrationReport report;
  report.options = options;
  for (const auto& path : files) {
    const std::string text = read_text_file(path, "", kDataFileMaxBytes);
    CalibrationInput input;
    input.path = path.string();
    input.file = display_name(path, files);
    input.fnv1a64 = fnv1a64(text);
    if (looks_like_measurement_csv(text)) {
      load_measurement_csv(path, text, options, input, report.points, report.notes);
    } else {
      load_nccl_log(path, text, options, input, report.points);
    }
    report.inputs.push_back(std::move(input));
  }

  const std::set<std::string> held_out_sources = held_out_inputs(options.hold_out, report.inputs);
  if (!held_out_sources.empty() && held_out_sources.size() == report.inputs.size()) {
    throw ConfigError(
        fmt::format("--hold-out {}: every input is held out, so nothing is left to fit (give the logs to "
                    "fit as well)",
                    fmt::join(options.hold_out, ",")));
  }
  // Roles: fitted, cross-predicted, or not used at all.
  std::vector<CalibrationPoint> used;
  std::size_t dropped = 0;
  for (CalibrationPoint& p : report.points) {
    const bool held_out = held_out_sources.count(p.source) > 0;
    p.fitted = !held_out && (options.fit_on.empty() || contains(options.fit_on, p.collective));
    const bool predicted =
        held_out || (!p.fitted && (options.predict.empty() || contains(options.predict, p.collective)));
    if (!p.fitted && !predicted) {
      ++dropped;
      continue;
    }
    used.push_back(std::move(p));
  }
  report.points = std::move(used);
  if (dropped > 0) {
    report.notes.push_back(fmt::format("{} rows neither fitted nor predicted (collective not in --fit-on / --predict)", dropped));
  }
  for (const auto c : options.fit_on) {
    if (std::none_of(report.points.begin(), report.points.end(), [&](const auto& p) { return p.collective == c; })) {
      throw ConfigError(fmt::format("--fit-on {}: no input measured this collective", collective_name(c)));
    }
  }
  for (const auto c : options.predict) {
    if (std::none_of(report.points.begin(), report.points.end(), [&](const auto& p) { return p.collective == c; })) {
      throw ConfigError(fmt::format("--predict {}: no input measured this collective", collective_name(c)));
    }
  }

  if (std::none_of(report.points.begin(), report.points.end(), [](const auto& p) { return p.fitted; })) {
    throw ConfigError("calibrate: no measurement to fit (the inputs hold no collective a schedule explains)");
  }

  // Coefficients along the critical path, re-evaluated at the fitted parameters until stable.
  ScheduleCache schedules;
  TopologyCache topologies(options.topology);
  for (const auto& p : report.points) topologies.get(p.n);
  if (options.check_schedule_size) {
    std::set<std::pair<std::string, std::uint32_t>> checked;
    for (const auto& p : report.points) {
      // A send/recv row is one transfer, not a table algorithm's schedule.
      if (p.collective == Collective::SendRecv) continue;
      if (checked.emplace(p.algorithm, p.n).second) {
        options.check_schedule_size(p.algorithm, p.n, gpus_per_node_of(topologies.get(p.n)),
                                    fmt::format("{}:{}", p.source, p.line));
      }
    }
  }
  report.link_classes = topologies.class_names();
  const bool per_class = report.link_classes.size() > 1;
  if (per_class && options.regimes > 1) {
    throw ConfigError(fmt::format("--regimes {}: size regimes are fitted for single-class topologies only; topology "
                                  "'{}' has link classes {}",
                                  options.regimes, options.topology, fmt::join(report.link_classes, ", ")));
  }
  std::vector<FitRow> rows;
  double launch_at_s = 0;  // evaluation point of the launch overhead (the last fit's)
  std::uint32_t regimes = options.regimes != 0 ? options.regimes : per_class ? 1 : auto_regimes(report.points);
  if (options.regimes == 0) {
    // As many as the sizes support and the named protocols fill (one log naming Simple: one).
    while (regime_without_rows(report.points, regimes)) --regimes;
  } else if (const auto empty = regime_without_rows(report.points, regimes)) {
    const auto named = std::find_if(report.points.begin(), report.points.end(), [](const auto& p) { return p.fitted; });
    throw ConfigError(fmt::format("--regimes {}: no row can fit regime {} ({}): every input names its protocol (the first "
                                  "row, {}:{}, ran {}); use fewer regimes or add a log that does not name one",
                                  regimes, *empty, protocol_name(protocol_of_regime(*empty, regimes)), named->source,
                                  named->line, protocol_name(*named->protocol)));
  }
  report.regimes = regimes;
  // Said here, with the option and the inputs; the fit below can only count the sizes.
  std::set<double> fitted_sizes;
  std::set<std::string> fitted_sources;
  for (const auto& p : report.points) {
    if (!p.fitted) continue;
    fitted_sizes.insert(p.size_bytes);
    fitted_sources.insert(p.source);
  }
  if (fitted_sizes.size() < min_distinct_sizes(regimes)) {
    throw ConfigError(fmt::format("calibrate: {}the rows to fit ({}) have {} distinct size{}; a fit with {} regime{} "
                                  "needs at least {}",
                                  options.regimes != 0 ? fmt::format("--regimes {}: ", options.regimes) : "",
                                  fmt::join(fitted_sources, ", "), fitted_sizes.size(), fitted_sizes.size() == 1 ? "" : "s",
                                  regimes, regimes == 1 ? "" : "s", min_distinct_sizes(regimes)));
  }
  // The protocol regimes on top of the one-regime fit. --regimes K is fitted as asked. Chosen
  // by size alone (auto, and no log names its protocol), a K-regime model is kept only if it explains the fitted rows about as
  // well as one regime does or better: a median error no larger, and a largest error at most
  // kRegimeMaxErrorSlack times the one-regime fit's (more regimes trade a few rows near a
  // protocol switch for the rest: 16 % against 11 % at 2 MiB on the H100 ReduceScatter log, for a
  // median of 2.1 % against 4.0 %). Else K-1 is tried, down to one. Why: each regime's latency
  // has a per-hop prior, and on a sweep that ends at 1 MiB, or on a faster machine, the priors can
  // leave no positive beta (the fit failed) or a model far worse than one regime (91 % against
  // 2.2 % largest error), which was written as the model.
  constexpr double kRegimeMaxErrorSlack = 2.0;
  std::string regime_choice;  // why fewer regimes than the sizes support, for the report
  const auto fitted_errors_of = [&](std::span<const FittedRegime> fitted, bool by_protocol) {
    std::vector<double> errors;
    for (const auto& p : report.points) {
      if (!p.fitted) continue;
      const double predicted = by_protocol ? predict_time_s(p.coefficients, fitted, p.protocol)
                                           : predict_time_s(p.coefficients, fitted);
      errors.push_back(predicted / p.measured_s - 1.0);
    }
    return error_stats(errors);
  };
  // Rows that name their protocol (NCCL_PROTO) are the protocols' own evidence, and NCCL's
  // choice for them needs their regime: the regimes they fill are fitted as they are.
  const bool protocols_named =
      std::any_of(report.points.begin(), report.points.end(), [](const auto& p) { return p.fitted && p.protocol; });
  const auto fit_regimes = [&] {
    report.regime_fit.reset();
    report.regimes = per_class ? regimes : 1;
    regime_choice.clear();
    if (per_class || regimes < 2) return;
    if (options.regimes != 0 || protocols_named) {
      report.regime_fit = fit_link_model(rows, {regimes, options.fit_gamma, options.fit_launch});
      report.regimes = regimes;
      return;
    }
    const ErrorStats single = fitted_errors_of(report.single.regimes, false);
    for (std::uint32_t k = regimes; k >= 2; --k) {
      if (regime_without_rows(report.points, k)) continue;
      std::string why;
      try {
        FitResult fit = fit_link_model(rows, {k, options.fit_gamma, options.fit_launch});
        const ErrorStats errors = fitted_errors_of(fit.regimes, true);
        if (errors.median_abs <= single.median_abs && errors.max_abs <= kRegimeMaxErrorSlack * single.max_abs) {
          report.regime_fit = std::move(fit);
          report.regimes = k;
          return;
        }
        why = fmt::format("it explains the fitted rows worse than one regime (median {:.1f} %, max {:.1f} %, against "
                          "{:.1f} % and {:.1f} %)",
                          100 * errors.median_abs, 100 * errors.max_abs, 100 * single.median_abs, 100 * single.max_abs);
      } catch (const ConfigError& e) {
        why = e.what();
      }
      regime_choice += fmt::format("{}a {}-regime fit was left out: {}", regime_choice.empty() ? "" : "; ", k, why);
    }
  };
  // Coefficients along the critical path, re-evaluated at the fitted parameters until stable;
  // then the size regimes.
  const auto fit_all = [&] {
    for (int iteration = 0;; ++iteration) {
      bool changed = false;
      for (auto& p : report.points) {
        const Schedule& schedule = schedules.get(p, topologies.get(p.n));
        ClassCostCoefficients c;
        try {
          c = schedule_cost_coefficients(schedule, p.size_bytes, topologies.get(p.n),
                                         ExecutionCosts{p.execution, launch_at_s});
        } catch (const ConfigError& e) {
          // The topology cannot run the schedule (nvls on a switch that does not reduce): name the row.
          throw ConfigError(
              fmt::format("{}:{}: cannot explain this {} measurement of {} on {} ranks on topology '{}': {}", p.source,
                          p.line, collective_name(p.collective), p.algorithm, p.n, options.topology, e.what()));
        }
        changed = changed || iteration == 0 || !same_coefficients(c, p.class_coefficients);
        p.coefficients = c.total();
        p.coefficients.extra_gpu_launches = p.coefficients.launches * (p.gpus_per_thread - 1.0);
        p.class_coefficients = std::move(c);
      }
      if (!changed) break;
      if (per_class) {
        report.class_fit = fit_link_classes(class_fit_rows_of(report.points), report.link_classes, options.fit_gamma);
        topologies.apply(*report.class_fit);
      } else {
        rows = fit_rows_of(report.points);
        report.single = fit_link_model(rows, {1, options.fit_gamma, options.fit_launch});
        topologies.apply(report.single.regimes.front().link);
        launch_at_s = report.single.regimes.front().launch_s;
      }
      if (iteration + 1 == kMaxCriticalPathIterations) {
        const std::string note = fmt::format("the critical path was still moving after {} re-evaluations; coefficients "
                                             "are those of the last fit",
                                             kMaxCriticalPathIterations);
        // Once, however many fits NCCL's choice takes.
        if (std::find(report.notes.begin(), report.notes.end(), note) == report.notes.end()) report.notes.push_back(note);
        break;
      }
    }
    fit_regimes();
  };
  // Rows explained by NCCL's choice (--algo nccl) are a fixed point: each takes what NCCL would
  // run under the topology's own links, the fit follows, each takes what NCCL would run under the
  // fitted model, and so on until no row's choice moves. Only the algorithm is taken from the
  // choice; the protocol, as for any log that names none, is the regime the fit gives its size.
  const auto choose_all = [&](const ModelFile* model) {
    bool moved = false;
    for (auto& p : report.points) {
      if (!p.chosen_by_nccl) continue;
      const ExecutionCosts execution =
          model != nullptr ? model->execution_for_size(p.size_bytes) : ExecutionCosts{ExecutionStyle::Fused, 0.0};
      // A log that names its protocol (NCCL_PROTO) ran that protocol: NCCL chose only the algorithm.
      std::optional<ModelFile> named;
      if (model != nullptr && p.protocol && !model->regimes.empty()) {
        named = *model;
        std::erase_if(named->regimes, [&](const FittedRegime& r) { return r.protocol != *p.protocol; });
        if (named->regimes.empty()) named.reset();
      }
      std::string chosen;
      try {
        chosen = choose_nccl(p.n, p.size_bytes, topologies.get(p.n), named ? &*named : model, execution, p.collective)
                     .algorithm;
      } catch (const ConfigError& e) {
        throw ConfigError(fmt::format("{}:{}: explaining this {} measurement by NCCL's choice: {}", p.source, p.line,
                                      collective_name(p.collective), e.what()));
      }
      if (chosen != p.algorithm) {
        p.algorithm = std::move(chosen);
        moved = true;
      }
    }
    return moved;
  };
  for (auto& p : report.points) {
    const auto& table = all_algorithms();
    const auto row = std::find_if(table.begin(), table.end(), [&](const AlgorithmInfo& a) { return a.name == p.algorithm; });
    p.chosen_by_nccl = p.collective != Collective::SendRecv && row != table.end() && row->chosen_per_run;
  }
  const bool any_chosen = std::any_of(report.points.begin(), report.points.end(), [](const auto& p) { return p.chosen_by_nccl; });
  if (any_chosen) choose_all(nullptr);
  for (int round = 0;; ++round) {
    fit_all();
    if (!any_chosen) break;
    const ModelFile model = detail::build_model(report, "fixed point");
    if (!choose_all(&model)) break;
    if (round + 1 == kMaxChoiceRounds) {
      report.notes.push_back(fmt::format("NCCL's choice was still moving after {} re-choices; rows are explained by "
                                         "the last choice",
                                         kMaxChoiceRounds));
      fit_all();
      break;
    }
  }
  if (any_chosen) report.notes.push_back(describe_choices(report.points));
  if (!regime_choice.empty()) {
    report.notes.push_back(fmt::format("{} (the sizes support {}; --regimes K fits K as asked); {} regime{} kept",
                                       regime_choice, regimes, report.regimes, report.regimes == 1 ? "" : "s"));
  }
  std::vector<double> fitted_errors;
  if (per_class) {
    for (const auto& n : report.class_fit->notes) report.notes.push_back("per-class fit: " + n);
    check_predictable(report);
    for (auto& p : report.points) {
      p.predicted_s = linear_time_s(p.class_coefficients, *report.class_fit);
      p.rel_error = p.predicted_s / p.measured_s - 1.0;
      p.predicted_single_s = p.predicted_s;
      p.rel_error_single = p.rel_error;
      if (p.fitted) fitted_errors.push_back(p.rel_error);
    }
  } else {
    for (const auto& n : report.single.notes) report.notes.push_back("single fit: " + n);
    if (report.regime_fit) {
      for (const auto& n : report.regime_fit->notes) report.notes.push_back(fmt::format("{}-regime fit: ", report.regimes) + n);
    }
    const auto& single_regimes = report.single.regimes;
    for (auto& p : report.points) {
      p.predicted_single_s = predict_time_s(p.coefficients, single_regimes);
      p.rel_error_single = p.predicted_single_s / p.measured_s - 1.0;
      if (report.regime_fit) {
        p.regime = best_regime(p.coefficients, report.regime_fit->regimes, p.protocol);
        p.predicted_s = predict_time_s(p.coefficients, report.regime_fit->regimes, p.protocol);
        p.rel_error = p.predicted_s / p.measured_s - 1.0;
      } else {
        p.predicted_s = p.predicted_single_s;
        p.rel_error = p.rel_error_single;
      }
      if (p.fitted) fitted_errors.push_back(p.rel_error);
    }
  }
  report.fit_stats = error_stats(fitted_errors);
  report.sources = source_errors(report);

  std::string name = options.name;
  if (name.empty()) name = options.out_model.empty() ? "calibrated" : options.out_model.stem().string();
  report.model = detail::build_model(report, name);
  std::filesystem::path csv_path = options.out_csv;
  if (csv_path.empty() && !options.out_model.empty()) {
    csv_path = options.out_model.parent_path() / (options.out_model.stem().string() + "_fit.csv");
  }
  // Both checked before either is written: an input under the second name left the first written.
  if (!options.out_model.empty()) writable_destination(options.out_model);
  if (!csv_path.empty()) writable_destination(csv_path);
  if (!options.out_model.empty()) {
    write_model_file(report.model, options.out_model);
    report.model_path = options.out_model;
  }
  if (!csv_path.empty()) {
    write_file_atomically(csv_path.string(), calibration_csv(report));
    report.csv_path = csv_path;
  }
  return report;
}

}  // namespace collsim
