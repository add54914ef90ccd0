// `nvls` from the command line: it runs where the NVSwitch reduces, is refused elsewhere with a
// message naming the topology and the key, and `advise` ranks it only where it runs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
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

// A study names nvls; its validation asks each topology whether the switch reduces.
TEST(NvlsCli, StudiesRefuseOrSkipTopologiesWhoseSwitchCannotReduce) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("collsim_nvls_cli_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string spec = (dir / "s.yaml").string();
  const std::string body =
      "name: nvls_study\nalgorithms: [nvls, stragglar]\nn: [8]\nsizes: [1MiB]\ntopology: [dgx_h100, dgx_a100]\n"
      "delays: [0, 1ms]\nstart: barrier\nengine: replay\ntrials: 1\nseed: 1\n";
  std::ofstream(spec) << body;
  const auto refused = run({"run", spec, "--dry-run"});
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("'nvls' does not support n = 8 on topology 'dgx_a100'"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("switch_reduction"), std::string::npos) << refused.err;
  std::ofstream(spec) << body << "skip_unsupported: true\n";
  const auto skipped = run({"run", spec, "--out", (dir / "out").string()});
  ASSERT_EQ(skipped.code, 0) << skipped.err;
  std::ifstream csv(dir / "out" / "results.csv");
  const std::string text((std::istreambuf_iterator<char>(csv)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("nvls,8,1048576,dgx_h100"), std::string::npos) << text;
  EXPECT_EQ(text.find("nvls,8,1048576,dgx_a100"), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace collsim
