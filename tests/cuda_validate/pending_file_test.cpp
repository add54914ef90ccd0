#include "collsim/cuda_validate/pending_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "collsim/models/error.hpp"
#include "test_support.hpp"

namespace collsim::cuda_validate {
namespace {

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(PendingFile, AFailedRunLeavesThePreviousFileAlone) {
  test::TempDir dir("collsim_pending_file");
  const auto path = dir.path() / "measurements.csv";
  std::ofstream(path) << "previous good run\n";
  {
    PendingFile file(path.string(), "--out");
    file.stream() << "half a run";
    file.stream().flush();
    EXPECT_TRUE(std::filesystem::exists(file.temporary_path()));
    EXPECT_EQ(read(path), "previous good run\n") << "the destination is untouched while the run goes on";
    // destroyed without commit: the run failed
  }
  EXPECT_EQ(read(path), "previous good run\n");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u) << "the temporary file is removed";

  PendingFile file(path.string(), "--out");
  file.stream() << "new run\n";
  file.commit();
  EXPECT_EQ(read(path), "new run\n");
}

TEST(PendingFile, ErrorsNameTheOptionAndCause) {
  test::TempDir dir("collsim_pending_file");
  try {
    PendingFile file((dir.path() / "no" / "such" / "m.csv").string(), "--micro-out");
    FAIL() << "a missing directory was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--micro-out: cannot create"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("No such file or directory"), std::string::npos) << e.what();
  }
  try {
    PendingFile file(dir.path().string(), "--out");
    FAIL() << "a directory was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace collsim::cuda_validate
