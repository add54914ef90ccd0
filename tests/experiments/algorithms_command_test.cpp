// `collsim algorithms [--json]`: the table as text and as JSON that scripts can parse. The JSON is
// parsed with yaml-cpp (JSON is valid YAML 1.2 flow syntax), which is what the project already
// depends on.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <sstream>
#include <string>

#include "cli_test_support.hpp"
#include "collsim/algorithms/registry.hpp"

namespace collsim {
namespace {

using test::run;

TEST(AlgorithmsCommand, JsonListsEveryRowWithItsFacts) {
  const auto r = run({"algorithms", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const YAML::Node list = YAML::Load(r.out);
  ASSERT_TRUE(list.IsSequence()) << r.out;
  ASSERT_EQ(list.size(), all_algorithms().size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    const AlgorithmInfo& info = all_algorithms()[i];
    const YAML::Node row = list[i];
    EXPECT_EQ(row["name"].as<std::string>(), info.name);
    EXPECT_EQ(row["summary"].as<std::string>(), info.summary);
    EXPECT_EQ(row["reference"].as<std::string>(), info.reference);
    EXPECT_EQ(row["role"].as<std::string>(), algorithm_role_name(info.role));
    EXPECT_EQ(row["straggler_aware"].as<bool>(), info.straggler_aware) << info.name;
    EXPECT_EQ(row["hierarchical"].as<bool>(), info.hierarchical) << info.name;
    EXPECT_EQ(row["needs_switch_reduction"].as<bool>(), info.needs_switch_reduction) << info.name;
    EXPECT_EQ(row["closed_form"].as<bool>(), info.has_closed_form()) << info.name;
    EXPECT_EQ(row["closed_form_any_late_rank"].as<bool>(), info.closed_form_any_late_rank) << info.name;
    EXPECT_EQ(row["relabel_at_run_time"].as<bool>(), info.relabel_at_run_time) << info.name;
    EXPECT_EQ(row["nccl_candidate"].as<bool>(), info.nccl_candidate) << info.name;
    EXPECT_EQ(row["chosen_per_run"].as<bool>(), info.chosen_per_run) << info.name;
    EXPECT_EQ(row["supported_n"].as<std::string>(), info.supported_n);
    if (info.default_pipeline_chunks > 0) {
      EXPECT_EQ(row["default_pipeline_chunks"].as<std::uint32_t>(), info.default_pipeline_chunks) << info.name;
    } else {
      EXPECT_TRUE(row["default_pipeline_chunks"].IsNull()) << info.name;
    }
  }
  // The first row is StragglAR, the studied algorithm, straggler-aware, with a closed form.
  EXPECT_EQ(list[0]["name"].as<std::string>(), "stragglar");
  EXPECT_EQ(list[0]["role"].as<std::string>(), "studied");
  EXPECT_TRUE(list[0]["straggler_aware"].as<bool>());
  EXPECT_NE(list[0]["reference"].as<std::string>().find("2505.23523"), std::string::npos);
  // NVLS is listed, as the one row that needs a switch that reduces.
  bool nvls = false;
  for (const auto& row : list) {
    if (row["name"].as<std::string>() != "nvls") continue;
    nvls = true;
    EXPECT_TRUE(row["needs_switch_reduction"].as<bool>());
    EXPECT_EQ(row["default_pipeline_chunks"].as<std::uint32_t>(), 16u);
  }
  EXPECT_TRUE(nvls);
}

TEST(AlgorithmsCommand, TextIsAnAlignedTable) {
  const auto r = run({"algorithms"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header;
  std::getline(lines, header);
  ASSERT_EQ(header.rfind("name", 0), 0u) << header;
  const std::size_t closed_form_column = header.find("closed_form");
  ASSERT_NE(closed_form_column, std::string::npos);
  for (const AlgorithmInfo& info : all_algorithms()) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line));
    EXPECT_EQ(line.rfind(std::string(info.name) + " ", 0), 0u) << line;
    // Every row has its closed_form cell under the header's column.
    EXPECT_EQ(line.substr(closed_form_column, 3), info.has_closed_form() ? "yes" : "no ") << line;
    EXPECT_NE(line.back(), ' ') << line;
  }
  EXPECT_NE(r.out.find("reference: "), std::string::npos);
}

TEST(AlgorithmsCommand, HelpAndBadFlags) {
  const auto help = run({"algorithms", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--json"), std::string::npos);
  const auto bad = run({"algorithms", "--yaml"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--yaml"), std::string::npos) << bad.err;
  EXPECT_NE(run({"--help"}).out.find("algorithms"), std::string::npos);
}

}  // namespace
}  // namespace collsim
