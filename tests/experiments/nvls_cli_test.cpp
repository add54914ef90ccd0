// `nvls` from the command line: it runs where the NVSwitch reduces, is refused elsewhere with a
// message naming the topology and the key, and `advise` ranks it only where it runs.
#include <gtest/gtest.h>

#include <string>

#include "cli_test_support.hpp"

namespace collsim {
namespace {

using test::run;

TEST(NvlsCli, SimulatesOnDgxH100) {
  const auto r = run({"simulate", "--algo", "nvls", "-n", "8", "--topology", "dgx_h100", "--size", "1GiB", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"nvls\""), std::string::npos) << r.out;
}

TEST(NvlsCli, RefusedOnTopologiesWhoseSwitchCannotReduce) {
  for (const char* topology : {"dgx_a100", "dgx1", "full_mesh", "nvswitch"}) {
    const auto r = run({"simulate", "--algo", "nvls", "-n", "8", "--topology", topology, "--size", "1MiB"});
    EXPECT_NE(r.code, 0) << topology;
    EXPECT_NE(r.err.find("switch_reduction"), std::string::npos) << topology << ": " << r.err;
    EXPECT_NE(r.err.find(std::string("'") + topology + "'"), std::string::npos) << topology << ": " << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
  }
}

TEST(NvlsCli, AdviseRanksNvlsOnlyWhereTheSwitchReduces) {
  const auto h100 = run({"advise", "--topology", "dgx_h100", "-n", "8", "--size", "1GiB", "--delay", "1ms", "--json"});
  ASSERT_EQ(h100.code, 0) << h100.err;
  EXPECT_NE(h100.out.find("\"nvls\""), std::string::npos) << h100.out;
  const auto a100 = run({"advise", "--topology", "dgx_a100", "-n", "8", "--size", "1GiB", "--delay", "1ms", "--json"});
  ASSERT_EQ(a100.code, 0) << a100.err;
  EXPECT_EQ(a100.out.find("\"nvls\""), std::string::npos) << a100.out;
}

}  // namespace
}  // namespace collsim
