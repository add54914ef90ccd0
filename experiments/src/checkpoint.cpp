#include "collsim/experiments/checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "collsim/models/error.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {
namespace {

constexpr std::string_view kMagic = "collsim-checkpoint 1 ";

class Tokens {
 public:
  explicit Tokens(std::string_view text) : text_(text) {}

  std::string_view next() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
    const std::size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != ' ') ++pos_;
    if (begin == pos_) throw Error("checkpoint record ends early");
    return text_.substr(begin, pos_ - begin);
  }
  template <typename T>
  T number() {
    const std::string_view token = next();
    T value{};
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || ptr != token.data() + token.size()) {
      throw Error(fmt::format("checkpoint record has a bad number '{}'", token));
    }
    return value;
  }
  bool done() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
    return pos_ == text_.size();
  }
  std::size_t chars_left() const { return text_.size() - pos_; }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool finite_non_negative(double v) { return std::isfinite(v) && v >= 0; }

// What a run can have written: times and delays finite and not negative (the reference time is
// NaN when no trial needed it), the measured costs likewise.
bool plausible(const UnitResult& u) {
  if (!(std::isnan(u.time_no_delay_s) || finite_non_negative(u.time_no_delay_s))) return false;
  if (!finite_non_negative(u.wall_s) || !finite_non_negative(u.generate_s) || !finite_non_negative(u.peak_rss_bytes)) {
    return false;
  }
  return std::all_of(u.trials.begin(), u.trials.end(), [](const TrialResult& t) {
    return finite_non_negative(t.delay_s) && finite_non_negative(t.time_s) &&
           std::isfinite(t.time_after_last_arrival_s);
  });
}

}  // namespace

std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string encode_unit(const UnitResult& u) {
  std::string line = fmt::format("U {} {} {} {} {} {} {} {}", u.unit, u.point, u.trial_begin, u.trial_end,
                                 u.time_no_delay_s, u.wall_s, u.generate_s, u.peak_rss_bytes);
  for (const auto& t : u.trials) {
    fmt::format_to(std::back_inserter(line), " {} {} {} {} {} {}", t.delay_s, t.time_s, t.time_after_last_arrival_s,
                   t.straggler, t.straggler_moved ? 1 : 0, t.transfers);
  }
  return line;
}

UnitResult decode_unit(std::string_view line) {
  Tokens tokens(line);
  if (tokens.next() != "U") throw Error("checkpoint record does not start with 'U'");
  UnitResult u;
  u.unit = tokens.number<std::size_t>();
  u.point = tokens.number<std::size_t>();
  u.trial_begin = tokens.number<std::uint32_t>();
  u.trial_end = tokens.number<std::uint32_t>();
  if (u.trial_end < u.trial_begin) throw Error("checkpoint record has an empty trial range");
  u.time_no_delay_s = tokens.number<double>();
  u.wall_s = tokens.number<double>();
  u.generate_s = tokens.number<double>();
  u.peak_rss_bytes = tokens.number<double>();
  // A trial takes six fields, at least twelve characters: a range longer than the record can
  // hold is refused before it is allocated (an edited 4e9-trial range ran out of memory).
  if (static_cast<double>(u.trial_end - u.trial_begin) * 12 > static_cast<double>(tokens.chars_left())) {
    throw Error("checkpoint record is too short for its trial range");
  }
  u.trials.resize(u.trial_end - u.trial_begin);
  for (auto& t : u.trials) {
    t.delay_s = tokens.number<double>();
    t.time_s = tokens.number<double>();
    t.time_after_last_arrival_s = tokens.number<double>();
    t.straggler = tokens.number<std::uint32_t>();
    t.straggler_moved = tokens.number<int>() != 0;
    t.transfers = tokens.number<std::uint64_t>();
  }
  if (!tokens.done()) throw Error("checkpoint record has trailing fields");
  return u;
}

std::string study_fingerprint(const ExperimentSpec& spec, std::string_view build_id) {
  std::uint64_t hash = fnv1a64(resolved_yaml(spec));
  // Another build may compute other results for the same spec (the version never moved): its
  // finished units must not be mixed into this build's.
  hash = fnv1a64(build_id, hash);
  const auto add_file = [&](const std::filesystem::path& path) {
    hash = fnv1a64(path.string(), hash);
    hash = fnv1a64(file_bytes(path), hash);
  };
  for (const auto& t : spec.topologies) add_file(topology_file(t.spec));
  if (!spec.link_model_file.empty()) add_file(spec.link_model_file);
  // A trace's arrivals are in no resolved key (only its file name is): an edited trace resumed
  // the earlier trace's finished units into the new one's results.
  for (const auto& a : spec.arrivals) {
    if (a.model.trace && !a.model.trace_file.empty()) add_file(a.model.trace_file);
  }
  return fmt::format("{:016x}", hash);
}

Checkpoint::Checkpoint(std::filesystem::path path, std::string fingerprint)
    : path_(std::move(path)), fingerprint_(std::move(fingerprint)) {}

Checkpoint::~Checkpoint() {
  if (file_ != nullptr) std::fclose(file_);
}

std::vector<UnitResult> Checkpoint::load() {
  std::vector<UnitResult> units;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return units;
  std::string line;
  if (!std::getline(in, line)) return units;
  if (line != std::string(kMagic) + fingerprint_) {
    discarded_ = line.starts_with(kMagic);
    return units;
  }
  keep_existing_ = true;
  while (std::getline(in, line)) {
    const auto mark = line.rfind(" #");
    if (mark == std::string::npos) continue;
    const std::string_view body(line.data(), mark);
    if (fmt::format("{:016x}", fnv1a64(body)) != std::string_view(line).substr(mark + 2)) continue;
    try {
      UnitResult u = decode_unit(body);
      // A record that passes its checksum but holds what no run writes (a negative or
      // infinite time, an edited journal) is run again rather than reported as a result.
      if (!plausible(u)) continue;
      u.resumed = true;
      units.push_back(std::move(u));
    } catch (const Error&) {
      continue;  // checksum collisions aside, only a torn last line can get here
    }
  }
  return units;
}

void Checkpoint::append(const UnitResult& unit) {
  if (file_ == nullptr) {
    std::error_code ec;
    if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path(), ec);
    file_ = std::fopen(path_.c_str(), keep_existing_ ? "ab" : "wb");
    if (file_ == nullptr) throw Error(fmt::format("cannot write checkpoint '{}': {}", path_.string(), std::strerror(errno)));
    // A torn last line (no newline) must not swallow the next record.
    if (keep_existing_) std::fputc('\n', file_);
    if (!keep_existing_) std::fprintf(file_, "%s%s\n", kMagic.data(), fingerprint_.c_str());
  }
  const std::string body = encode_unit(unit);
  const std::string line = fmt::format("{} #{:016x}\n", body, fnv1a64(body));
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    throw Error(fmt::format("cannot write checkpoint '{}': {}", path_.string(), std::strerror(errno)));
  }
}

void Checkpoint::remove() {
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

}  // namespace collsim
