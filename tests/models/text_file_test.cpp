#include "collsim/models/formats/text_file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_config_error;
using namespace std::string_literals;

std::filesystem::path write_file(const test::TempDir& dir, const std::string& name, const std::string& bytes) {
  const auto path = dir.path() / name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TextFile, ReadsTheWholeFileAcrossChunks) {
  const test::TempDir dir;
  std::string text;
  for (int i = 0; text.size() < 200'000; ++i) text += "line " + std::to_string(i) + "\n";  // > 3 chunks of 64 KiB
  EXPECT_EQ(read_text_file(write_file(dir, "big.txt", text), "trace", kDataFileMaxBytes), text);
  EXPECT_EQ(read_text_file(write_file(dir, "empty.txt", ""), "trace", kDataFileMaxBytes), "");
}

TEST(TextFile, LookUpFileNeverThrows) {
  const test::TempDir dir;
  EXPECT_EQ(look_up_file(write_file(dir, "a.txt", "x")).why, "");
  EXPECT_EQ(look_up_file(dir.path() / "missing.txt").why, "does not exist");
  EXPECT_EQ(look_up_file(dir.path() / "a.txt" / "under_a_file").why, "does not exist");
  EXPECT_EQ(look_up_file(dir.path()).why, "is a directory");
  EXPECT_EQ(look_up_file("/dev/null").why, "is not a regular file");
  EXPECT_EQ(look_up_file(dir.path() / std::string(5000, 'a')).why, "cannot be looked up (File name too long)");
}

// A NUL byte is refused with its line, whichever chunk it falls in: /dev/zero, a binary file or a
// UTF-16 export is not read to the end (an endless device never ended).
TEST(TextFile, NulBytesAreRefusedWithTheirLine) {
  const test::TempDir dir;
  const auto early = write_file(dir, "nul.csv", "a\nb\nc\0d\n"s);
  expect_config_error([&] { read_text_file(early, "arrival trace", kDataFileMaxBytes); },
                      {early.string() + ":3:", "a NUL byte", "arrival trace '" + early.string() + "'", "not a text file"});
  std::string late(100'000, 'x');
  late[70'000] = '\n';
  late[99'000] = '\0';  // in the second chunk, after one newline
  const auto second = write_file(dir, "nul_late.csv", late);
  expect_config_error([&] { read_text_file(second, "", kDataFileMaxBytes); }, {second.string() + ":2:", "a NUL byte"});
  expect_config_error([] { read_text_file("/dev/zero", "experiment spec", kConfigFileMaxBytes); },
                      {"/dev/zero:1:", "experiment spec '/dev/zero'", "not a text file"});
}

// Above the limit: a regular file is refused before it is read, a stream (here a /proc file, whose
// size the file system does not know) when the limit is reached.
TEST(TextFile, InputsAboveTheLimitAreRefused) {
  const test::TempDir dir;
  const auto path = write_file(dir, "limit.txt", std::string(100, 'x'));
  EXPECT_EQ(read_text_file(path, "log", 100).size(), 100u);
  expect_config_error([&] { read_text_file(path, "log", 99); }, {"cannot read log '" + path.string() + "'", "larger than 99 B"});
  expect_config_error([] { read_text_file("/proc/self/maps", "trace", 16); }, {"'/proc/self/maps'", "larger than"});
}

TEST(TextFile, DirectoriesAndMissingFilesAreRefused) {
  const test::TempDir dir;
  expect_config_error([&] { read_text_file(dir.path(), "topology", kConfigFileMaxBytes); },
                      {"cannot read topology", "is a directory"});
  expect_config_error([&] { read_text_file(dir.path() / "collsim_no_such_file.yaml", "", kConfigFileMaxBytes); },
                      {"cannot read '", "collsim_no_such_file.yaml", "No such file"});
}

}  // namespace
}  // namespace collsim
