#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>

#include "collsim/algorithms/registry.hpp"
#include "collsim/sim/metrics.hpp"
#include "collsim/sim/trace_writer.hpp"

namespace collsim {
namespace {

// A strict recursive-descent JSON checker: enough to prove the trace is well formed.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& s) : s_(s) {}
  bool valid() {
    ws();
    if (!value()) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool lit(const char* w) {
    const std::string word(w);
    if (s_.compare(i_, word.size(), word) != 0) return false;
    i_ += word.size();
    return true;
  }
  bool str() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      if (s_[i_] == '\\') {
        ++i_;
      } else if (s_[i_] == '"') {
        ++i_;
        return true;
      } else if (static_cast<unsigned char>(s_[i_]) < 0x20) {
        return false;
      }
    }
    return false;
  }
  bool num() {
    const std::size_t start = i_;
    if (s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' || s_[i_] == 'e' ||
                              s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
      ++i_;
    }
    return i_ > start;
  }
  bool value() {
    if (i_ >= s_.size()) return false;
    const char c = s_[i_];
    if (c == '{') return container('}', true);
    if (c == '[') return container(']', false);
    if (c == '"') return str();
    if (c == 't') return lit("true");
    if (c == 'f') return lit("false");
    if (c == 'n') return lit("null");
    return num();
  }
  bool container(char close, bool object) {
    ++i_;
    ws();
    if (s_[i_] == close) return ++i_, true;
    while (true) {
      ws();
      if (object) {
        if (!str()) return false;
        ws();
        if (s_[i_++] != ':') return false;
        ws();
      }
      if (!value()) return false;
      ws();
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] == close) return ++i_, true;
      return false;
    }
  }
  const std::string& s_;
  std::size_t i_ = 0;
};

// A hand-timed run of ring n = 3 (every transfer 1 s, rounds back to back), so the trace and
// metrics can be checked without an engine.
RunResult fake_ring_run(const Schedule& s, double delay_s) {
  RunResult r;
  r.engine = "test";
  double t = delay_s;
  for (std::uint32_t p = 0; p < s.phases.size(); ++p) {
    for (std::uint32_t k = 0; k < s.phases[p].num_rounds(); ++k) {
      for (const Transfer& tr : s.phases[p].round(k)) r.trace.push_back(TransferRecord{p, k, tr, t, t + 1.0});
      t += 1.0;
    }
  }
  r.finish_s.assign(s.n, t);
  r.transfers = r.trace.size();
  r.last_arrival_s = delay_s;
  r.time_s = t;
  r.time_after_last_arrival_s = t - delay_s;
  return r;
}

TEST(Trace, IsValidJsonWithOneProcessPerRank) {
  const Schedule s = generate_schedule("ring", AlgorithmOptions{3, {}, 0});
  const RunResult r = fake_ring_run(s, 0.5);
  const std::string json = chrome_trace_json(s, r, {0.0, 0.0, 0.5}, 3e6);
  EXPECT_TRUE(JsonChecker(json).valid()) << json.substr(0, 400);
  for (int rank = 0; rank < 3; ++rank) {
    EXPECT_NE(json.find(fmt::format("\"name\":\"GPU {}\"", rank)), std::string::npos);
  }
  EXPECT_EQ(json.find("GPU 3"), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"arrival\""), std::string::npos);
  EXPECT_NE(json.find("phase reduce_scatter"), std::string::npos);
  EXPECT_NE(json.find("phase all_gather"), std::string::npos);
  // 12 transfers, each a send and a receive slice.
  std::size_t slices = 0;
  for (std::size_t pos = 0; (pos = json.find("\"ph\":\"X\"", pos)) != std::string::npos; ++pos) ++slices;
  EXPECT_EQ(slices, 24u);
}

TEST(Trace, BrokenJsonIsDetectedByTheChecker) {
  EXPECT_FALSE(JsonChecker("{\"a\":1,}").valid());
  EXPECT_FALSE(JsonChecker("[1 2]").valid());
  EXPECT_TRUE(JsonChecker("{\"a\":[1,2.5e-3,\"x\",null]}").valid());
}

TEST(Metrics, BusyIdleAndBandwidths) {
  const Schedule s = generate_schedule("ring", AlgorithmOptions{3, {}, 0});
  const RunResult r = fake_ring_run(s, 0.5);
  const RunMetrics m = compute_metrics(r, {0.0, 0.0, 0.5}, 3e9, 3);
  ASSERT_EQ(m.busy_s.size(), 3u);
  EXPECT_DOUBLE_EQ(m.busy_s[0], 4.0);   // 4 rounds of 1 s, send and receive overlap
  EXPECT_DOUBLE_EQ(m.idle_s[0], 0.5);   // arrived at 0, nothing to do until 0.5
  EXPECT_DOUBLE_EQ(m.idle_s[2], 0.0);
  EXPECT_DOUBLE_EQ(m.algbw_GBps, 3e9 / 4.0 / 1e9);
  EXPECT_DOUBLE_EQ(m.busbw_GBps, m.algbw_GBps * 4.0 / 3.0);
}

TEST(Metrics, HiddenDelayFraction) {
  EXPECT_DOUBLE_EQ(hidden_delay_fraction(10.0, 15.0, 5.0), 0.0);  // paid in full
  EXPECT_DOUBLE_EQ(hidden_delay_fraction(10.0, 10.0, 5.0), 1.0);  // fully hidden
  EXPECT_DOUBLE_EQ(hidden_delay_fraction(10.0, 12.0, 4.0), 0.5);
  EXPECT_DOUBLE_EQ(hidden_delay_fraction(10.0, 12.0, 0.0), 0.0);
}

// The fraction is cleared only when it is rounding noise: a delay hidden by a thousandth is a
// result and must be reported, while two times that differ in their last bits are not.
TEST(Metrics, HiddenDelayFractionClearsRoundingNoiseOnly) {
  EXPECT_NEAR(hidden_delay_fraction(10.0, 14.995, 5.0), 0.001, 1e-12);
  EXPECT_NEAR(hidden_delay_fraction(1.0, 1.0 + 2e-6, 1e-3), 0.998, 1e-9);
  // 0.1 + 0.2 is 0.30000000000000004: a "hidden" fraction of ~3e-16 that is none.
  EXPECT_EQ(hidden_delay_fraction(0.1, 0.3, 0.2), 0.0);
}

// simulate --spread reads finish times through this: relative where the reference is not 0,
// absolute where it is, and the largest over all ranks.
TEST(Metrics, LargestRelativeDifference) {
  EXPECT_EQ(largest_relative_difference({1.0, 2.0}, {1.0, 2.0}), 0.0);
  EXPECT_EQ(largest_relative_difference({1.0, 2.5}, {1.0, 2.0}), 0.25);
  EXPECT_EQ(largest_relative_difference({0.75, 2.0}, {1.0, 2.0}), 0.25);
  EXPECT_EQ(largest_relative_difference({0.5, 2.0}, {0.0, 2.0}), 0.5);
  EXPECT_EQ(largest_relative_difference({1.0, 2.0, 3.75}, {1.25, 2.0, 3.0}), 0.25);
}

}  // namespace
}  // namespace collsim
