#include "collsim/algorithms/verifier.hpp"

#include <gtest/gtest.h>

#include "collsim/algorithms/reference_executor.hpp"

namespace collsim {
namespace {

// Two ranks swap their only chunk and both add: the smallest correct AllReduce.
Schedule swap2() {
  Schedule s;
  s.algorithm = "test";
  s.n = 2;
  s.num_chunks = 1;
  Phase& p = s.add_phase("swap");
  p.begin_round();
  p.add(0, 1, 0, 1, Op::Reduce);
  p.add(1, 0, 0, 1, Op::Reduce);
  return s;
}

bool mentions(const std::vector<Diagnostic>& d, const std::string& text) {
  for (const auto& x : d) {
    if (x.message.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(Verifier, AcceptsASwapWithSnapshotSemantics) {
  const Schedule s = swap2();
  EXPECT_TRUE(verify_schedule(s).empty());
  EXPECT_TRUE(execute_reference(s, 3).correct);
}

TEST(Verifier, RejectsDoubleCounting) {
  Schedule s = swap2();
  s.phases[0].begin_round();
  s.phases[0].add(0, 1, 0, 1, Op::Reduce);
  const auto d = verify_schedule(s);
  EXPECT_TRUE(mentions(d, "double-counts")) << d.size();
  EXPECT_FALSE(execute_reference(s).correct);
}

TEST(Verifier, RejectsIncompleteResults) {
  Schedule s = swap2();
  s.phases[0] = Phase("half");
  s.phases[0].begin_round();
  s.phases[0].add(0, 1, 0, 1, Op::Reduce);
  const auto d = verify_schedule(s);
  EXPECT_TRUE(mentions(d, "rank 0 chunk 0 holds contributions {0}")) << (d.empty() ? "" : d[0].message);
  EXPECT_FALSE(execute_reference(s).correct);
}

TEST(Verifier, RejectsOutOfRangeSelfTransfersAndBadChunks) {
  Schedule s = swap2();
  s.phases[0].begin_round();
  s.phases[0].add(0, 5, 0, 1, Op::Copy);
  s.phases[0].add(1, 1, 0, 1, Op::Copy);
  s.phases[0].add(0, 1, 1, 1, Op::Copy);
  const auto d = verify_schedule(s);
  EXPECT_TRUE(mentions(d, "rank out of range"));
  EXPECT_TRUE(mentions(d, "sends to itself"));
  EXPECT_TRUE(mentions(d, "chunk range outside"));
}

TEST(Verifier, EnforcesThePortLimit) {
  Schedule s;
  s.n = 3;
  s.num_chunks = 1;
  Phase& p = s.add_phase("fan-in");
  p.begin_round();
  p.add(1, 0, 0, 1, Op::Reduce);
  p.add(2, 0, 0, 1, Op::Reduce);  // rank 0 receives twice: two writes and two receives
  EXPECT_TRUE(mentions(verify_schedule(s), "port limit"));
  s.ports = 2;
  EXPECT_FALSE(mentions(verify_schedule(s), "port limit"));
  EXPECT_TRUE(mentions(verify_schedule(s), "written by two transfers"));
}

TEST(Verifier, RejectsACopyThatDiscardsContributions) {
  Schedule s;
  s.n = 3;
  s.num_chunks = 1;
  Phase& p = s.add_phase("bad");
  p.begin_round();
  p.add(0, 1, 0, 1, Op::Copy);  // rank 1 loses its own contribution
  EXPECT_TRUE(mentions(verify_schedule(s), "discards contributions"));
}

TEST(Verifier, StopsAtTheDiagnosticLimit) {
  Schedule s;
  s.n = 50;
  s.num_chunks = 1;
  EXPECT_EQ(verify_schedule(s, 3).size(), 3u);
}

}  // namespace
}  // namespace collsim
