// Issue 10 §5, defects 8-14: the CLI as a new user meets it (ties, directories, output paths,
// out-of-range ranks, echoed input, plot failures, and the small ones).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>

#include "cli_test_support.hpp"
#include "test_support.hpp"
#include "collsim/experiments/resource_estimate.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/models/error.hpp"

namespace collsim {
namespace {

namespace fs = std::filesystem;
using test::CliRun;
using test::run;

// A fresh directory under the build tree's temporary area, removed by the destructor.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name)
      : path_(fs::temp_directory_path() / fmt_name(name)) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path write(const std::string& name, const std::string& text) const {
    const fs::path file = path_ / name;
    std::ofstream(file) << text;
    return file;
  }

 private:
  static std::string fmt_name(const std::string& name) { return "collsim_cli2_" + name + "_" + std::to_string(::getpid()); }
  fs::path path_;
};

// Captures what the command writes to std::cerr (warnings that bypass run_cli's `err`).
class CerrCapture {
 public:
  CerrCapture() : old_(std::cerr.rdbuf(buffer_.rdbuf())) {}
  ~CerrCapture() { std::cerr.rdbuf(old_); }
  std::string text() const { return buffer_.str(); }

 private:
  std::ostringstream buffer_;
  std::streambuf* old_;
};

bool has_python_with_matplotlib() {
  return fs::exists("/usr/bin/python3") && std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0;
}

void expect_one_error_line(const CliRun& r, const std::string& must_contain) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.find("collsim: error: "), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "more than one line: " << r.err;
  EXPECT_NE(r.err.find(must_contain), std::string::npos) << r.err;
}

const char* kTinySpec =
    "name: tiny\n"
    "algorithms: [ring, recursive_doubling]\n"
    "n: [4]\n"
    "sizes: [1MiB]\n"
    "delays: [0, 1ms]\n"
    "engine: replay\n";

// ---- 8: a tie is a tie --------------------------------------------------------------------

TEST(CliHardening, AdviseCallsATieATie) {
  // At n = 2, stragglar and recursive_doubling run the same exchange: identical times.
  const auto r = run({"advise", "-n", "2", "--size", "1GiB", "--delay", "5ms"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("faster than the best baseline"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("more than 0.0 ns"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tie"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("critical delay: none"), std::string::npos) << r.out;

  const auto j = run({"advise", "-n", "2", "--size", "1GiB", "--delay", "5ms", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_NE(j.out.find("\"tied_best\":[\"stragglar\",\"recursive_doubling\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"critical_delay_s\":null"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"rank_by_mean\":1,\"rank_by_p99\":1},{\"algorithm\":\"recursive_doubling\""), std::string::npos)
      << j.out;
}

TEST(CliHardening, AdviseStillNamesAClearWinner) {
  const auto r = run({"advise", "-n", "8", "--size", "1GiB", "--delay", "5ms", "--algorithms", "stragglar,ring"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Use stragglar:"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tie"), std::string::npos) << r.out;
}

// ---- 9: directories and output paths ------------------------------------------------------

TEST(CliHardening, ADirectoryGivenAsAnInputSaysSo) {
  ScratchDir dir("inputdir");
  const std::string d = dir.path().string();
  expect_one_error_line(run({"run", d}), "is a directory");
  expect_one_error_line(run({"advise", "--spec", d, "-n", "4", "--size", "1MiB"}), "is a directory");
  expect_one_error_line(run({"calibrate", d}), "is a directory");
  expect_one_error_line(run({"simulate", "--algo", "ring", "-n", "4", "--model", d}), "is a directory");
  expect_one_error_line(run({"simulate", "--algo", "ring", "-n", "4", "--topology", d}), "is a directory");
  expect_one_error_line(run({"simulate", "--algo", "ring", "-n", "4", "--trace", d}), "--trace");
  expect_one_error_line(run({"simulate", "--algo", "ring", "-n", "4", "--trace", d}), "is a directory");
}

// A path longer than the system takes (NAME_MAX 255 per component) made std::filesystem throw
// from a check, and the CLI called it an internal error (exit 70). Each is now an error naming
// the input, and nothing is written.
TEST(CliHardening, APathTooLongForTheSystemIsAnErrorNamingTheInput) {
  ScratchDir dir("longpath");
  const std::string long_name = std::string(5000, 'a');
  expect_one_error_line(run({"simulate", "--algo", "ring", "-n", "4", "--topology", long_name + ".yaml"}),
                        "cannot be looked up (File name too long)");
  const fs::path plot = dir.write("plot.yaml", std::string(kTinySpec) + "plot: " + long_name + ".py\n");
  const fs::path topology = dir.write("topology.yaml", std::string(kTinySpec) + "topology: [" + long_name + ".yaml]\n");
  const fs::path out = dir.path() / "out";
  const auto bad_plot = run({"run", plot.string(), "--out", out.string()});
  expect_one_error_line(bad_plot, "plot (line 7): plot script '");
  EXPECT_NE(bad_plot.err.find("cannot be looked up (File name too long)"), std::string::npos) << bad_plot.err;
  const auto bad_topology = run({"run", topology.string(), "--out", out.string()});
  expect_one_error_line(bad_topology, "topology (line 7): topology 'aaaa");
  // The reason survives the message's length limit: the label is cut, not the cause.
  EXPECT_NE(bad_topology.err.find("cannot be looked up (File name too long)"), std::string::npos) << bad_topology.err;
  const fs::path trace =
      dir.write("trace.yaml",
                std::string(kTinySpec) + "arrival:\n  - label: x\n    model: trace\n    file: " + long_name + ".csv\n");
  const auto bad_trace = run({"run", trace.string(), "--out", out.string()});
  expect_one_error_line(bad_trace, "arrival[0].file (line 10): cannot read arrival trace '");
  EXPECT_NE(bad_trace.err.find("File name too long"), std::string::npos) << bad_trace.err;
  EXPECT_FALSE(fs::exists(out));
}

// A file that starts with ',' made yaml-cpp's LoadAll read empty documents for ever (the memory
// grew by gigabytes a second); spec, topology and model files now say where the ',' is.
TEST(CliHardening, AYamlFileStartingWithACommaIsASyntaxError) {
  ScratchDir dir("comma");
  const fs::path comma = dir.write("comma.yaml", ",\n");
  const fs::path out = dir.path() / "out";
  expect_one_error_line(run({"run", comma.string(), "--out", out.string()}),
                        "comma.yaml: YAML syntax error at line 1, column 1: ',' cannot start a value here");
  expect_one_error_line(run({"simulate", "--algo", "ring", "-n", "8", "--topology", comma.string()}),
                        "comma.yaml:1: invalid YAML: ',' cannot start a value here");
  expect_one_error_line(
      run({"simulate", "--algo", "ring", "-n", "8", "--topology", "dgx_h100", "--model", comma.string()}),
      "comma.yaml:1: YAML syntax error: ',' cannot start a value here");
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliHardening, OutputDirectoryErrorsNameOutAndTheCause) {
  ScratchDir dir("outdir");
  const fs::path spec = dir.write("tiny.yaml", kTinySpec);
  const fs::path file = dir.write("plain_file", "x");
  const auto exists_as_file = run({"run", spec.string(), "--out", file.string(), "--no-plot"});
  expect_one_error_line(exists_as_file, "--out");
  EXPECT_NE(exists_as_file.err.find("not a directory"), std::string::npos) << exists_as_file.err;
  const auto under_a_file = run({"run", spec.string(), "--out", (file / "sub").string(), "--no-plot"});
  expect_one_error_line(under_a_file, "--out");
  EXPECT_NE(under_a_file.err.find("Not a directory"), std::string::npos) << under_a_file.err;
  // A dry run refuses what the run would refuse, and creates nothing.
  const auto dry_under_a_file = run({"run", spec.string(), "--out", (file / "sub" / "deeper").string(), "--dry-run"});
  expect_one_error_line(dry_under_a_file, "cannot create the directory: Not a directory");
  const auto dry_too_long =
      run({"run", spec.string(), "--out", (dir.path() / std::string(300, 'o')).string(), "--dry-run"});
  expect_one_error_line(dry_too_long, "cannot create the directory: File name too long");
  const auto dry_fine = run({"run", spec.string(), "--out", (dir.path() / "new" / "dir").string(), "--dry-run"});
  EXPECT_EQ(dry_fine.code, 0) << dry_fine.err;
  EXPECT_FALSE(fs::exists(dir.path() / "new"));

  const auto model_is_dir = run({"calibrate", COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-allgather.txt",
                                 "--out", dir.path().string(), "--no-plot"});
  expect_one_error_line(model_is_dir, "--out");
  EXPECT_NE(model_is_dir.err.find("is a directory"), std::string::npos) << model_is_dir.err;
}

TEST(CliHardening, UnwritableOutputDirectorySaysPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root may write anywhere; permission errors cannot be provoked";
  ScratchDir dir("readonly");
  const fs::path spec = dir.write("tiny.yaml", kTinySpec);
  const fs::path locked = dir.path() / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const auto r = run({"run", spec.string(), "--out", (locked / "out").string(), "--no-plot"});
  fs::permissions(locked, fs::perms::owner_all);
  expect_one_error_line(r, "--out");
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
}

// ---- 11: verify with an out-of-range straggler ---------------------------------------------

TEST(CliHardening, VerifyRejectsAStragglerOutsideN) {
  const auto r = run({"verify", "--algo", "stragglar", "--n", "4", "--straggler", "5"});
  expect_one_error_line(r, "--straggler 5");
  EXPECT_EQ(run({"verify", "--algo", "stragglar", "--n", "4..6", "--straggler", "3"}).code, 0);
}

// ---- 12: short, sanitized excerpts of input in errors -------------------------------------

TEST(CliHardening, ErrorsQuoteOnlyAShortExcerptOfFileContents) {
  ScratchDir dir("secret");
  const std::string secret = "root:$6$verysecretsaltvalue$longhashlonghashlonghash:19000:0:99999:7:::";
  const fs::path file = dir.write("shadow", secret + "\ndaemon:*:19000:0:99999:7:::\n");
  const auto r = run({"simulate", "--algo", "ring", "-n", "4", "--topology", file.string()});
  expect_one_error_line(r, "unknown key");
  EXPECT_EQ(r.err.find("verysecretsaltvalue"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("longhash"), std::string::npos) << r.err;
}

TEST(CliHardening, ErrorsQuoteOnlyAShortSanitizedExcerptOfArguments) {
  const std::string huge(100'000, '7');
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"simulate", "--algo", "ring", "-n", "4", "--delay", huge + "parsecs"},
           {"simulate", "--algo", huge, "-n", "4"},
           {"schedule", "--algo", "ring", "-n", huge + "x"},
           {"simulate", "--algo", "ring", "-n", "4", "--" + huge},
           {huge}}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_LT(r.err.size(), 700u) << r.err.substr(0, 200);
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1);
  }
  const auto control = run({"simulate", "--algo", "ring", "-n", "4", "--delay", "5\nms\x1b[31m"});
  EXPECT_EQ(control.err.find('\x1b'), std::string::npos) << control.err;
  EXPECT_EQ(control.err.find('\n'), control.err.size() - 1) << control.err;
}

// ---- 13: one rule when a plot fails --------------------------------------------------------

TEST(CliHardening, RunKeepsResultsAndExits3WhenAPlotFails) {
  ScratchDir dir("plotfail");
  dir.write("broken_plot.py", "import sys\nprint('plot stdout line')\nraise RuntimeError('no figure today')\n");
  const fs::path spec = dir.write("tiny.yaml", std::string(kTinySpec) + "plot: [broken_plot.py]\n");
  const fs::path out = dir.path() / "out";
  CerrCapture cerr;
  testing::internal::CaptureStderr();
  const auto r = run({"run", spec.string(), "--out", out.string(), "--quiet"});
  const std::string child_stderr = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_TRUE(fs::exists(out / "results.csv"));
  EXPECT_NE(cerr.text().find("collsim: warning: plot script"), std::string::npos) << cerr.text();
  EXPECT_NE(cerr.text().find("RuntimeError: no figure today"), std::string::npos) << cerr.text();
  EXPECT_EQ(child_stderr.find("Traceback"), std::string::npos) << child_stderr;
  std::ifstream log(out / "broken_plot.plot.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_NE(text.str().find("Traceback"), std::string::npos) << "the traceback is kept in the log";
}

TEST(CliHardening, CalibrateExits3WhenItsPlotFails) {
  if (!has_python_with_matplotlib()) GTEST_SKIP() << "needs /usr/bin/python3 with matplotlib";
  ScratchDir dir("calplot");
  // A matplotlib that imports but has no pyplot: the availability check passes, the script fails.
  fs::create_directories(dir.path() / "fake" / "matplotlib");
  dir.write("fake/matplotlib/__init__.py", "");
  const char* old = std::getenv("PYTHONPATH");
  const std::string saved = old ? old : "";
  ::setenv("PYTHONPATH", (dir.path() / "fake").c_str(), 1);
  CerrCapture cerr;
  testing::internal::CaptureStderr();
  const auto r = run({"calibrate", COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-allgather.txt", "--out",
                      (dir.path() / "model.yaml").string()});
  const std::string child_stderr = testing::internal::GetCapturedStderr();
  if (old) ::setenv("PYTHONPATH", saved.c_str(), 1); else ::unsetenv("PYTHONPATH");
  EXPECT_EQ(r.code, 3) << r.err << r.out;
  EXPECT_TRUE(fs::exists(dir.path() / "model.yaml"));
  EXPECT_NE(cerr.text().find("collsim: warning: plot script calibration_fit.py failed"), std::string::npos)
      << cerr.text();
  EXPECT_EQ(child_stderr.find("Traceback"), std::string::npos) << child_stderr;
}

TEST(CliHardening, ArrivalsExits3WhenItsPlotFails) {
  if (!has_python_with_matplotlib()) GTEST_SKIP() << "needs /usr/bin/python3 with matplotlib";
  ScratchDir dir("arrplot");
  fs::create_directories(dir.path() / "fake" / "matplotlib");
  dir.write("fake/matplotlib/__init__.py", "");
  const char* old = std::getenv("PYTHONPATH");
  const std::string saved = old ? old : "";
  ::setenv("PYTHONPATH", (dir.path() / "fake").c_str(), 1);
  CerrCapture cerr;
  testing::internal::CaptureStderr();
  const auto r = run({"arrivals", COLLSIM_TEST_DATA_DIR "/arrivals/small.csv", "--plot", (dir.path() / "cdf.png").string()});
  const std::string child_stderr = testing::internal::GetCapturedStderr();
  if (old) ::setenv("PYTHONPATH", saved.c_str(), 1); else ::unsetenv("PYTHONPATH");
  EXPECT_EQ(r.code, 3) << r.err << r.out;
  EXPECT_TRUE(fs::exists(dir.path() / "cdf_delays.csv"));
  EXPECT_TRUE(fs::exists(dir.path() / "cdf.plot.log"));
  EXPECT_NE(cerr.text().find("collsim: warning: plot script arrivals_cdf.py failed"), std::string::npos) << cerr.text();
  EXPECT_EQ(child_stderr.find("Traceback"), std::string::npos) << child_stderr;
}

TEST(CliHardening, QuietSuppressesPlotOutput) {
  ScratchDir dir("plotquiet");
  dir.write("chatty_plot.py", "print('CHATTY PLOT OUTPUT')\n");
  const fs::path spec = dir.write("tiny.yaml", std::string(kTinySpec) + "plot: [chatty_plot.py]\n");
  testing::internal::CaptureStdout();
  const auto quiet = run({"run", spec.string(), "--out", (dir.path() / "q").string(), "--quiet"});
  const std::string quiet_out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_EQ(quiet_out.find("CHATTY PLOT OUTPUT"), std::string::npos) << quiet_out;
  testing::internal::CaptureStdout();
  const auto loud = run({"run", spec.string(), "--out", (dir.path() / "l").string()});
  const std::string loud_out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(loud.code, 0) << loud.err;
  EXPECT_NE(loud_out.find("CHATTY PLOT OUTPUT"), std::string::npos) << "the check above can fail: " << loud_out;
}

// ---- 14: the small ones --------------------------------------------------------------------

TEST(CliHardening, VersionAndHelpCommand) {
  const auto v = run({"--version"});
  EXPECT_EQ(v.code, 0) << v.err;
  EXPECT_EQ(v.out.find("collsim "), 0u) << v.out;
  const auto h = run({"help", "run"});
  EXPECT_EQ(h.code, 0) << h.err;
  EXPECT_EQ(h.out, run({"run", "--help"}).out);
  EXPECT_NE(h.out.find("usage: collsim run"), std::string::npos) << h.out;
  EXPECT_EQ(run({"help", "frobnicate"}).code, 2);
}

TEST(CliHardening, SimulateJsonHiddenFractionIsNullWithoutDelay) {
  const auto r = run({"simulate", "--algo", "ring", "-n", "4", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"hidden_delay_fraction\":null"), std::string::npos) << r.out;
  const auto late = run({"simulate", "--algo", "ring", "-n", "4", "--delay", "1ms", "--json"});
  EXPECT_EQ(late.out.find("\"hidden_delay_fraction\":null"), std::string::npos) << late.out;
}

TEST(CliHardening, SimulateJsonStragglerIsTheLatestRankAsInResultsCsv) {
  // Rank 1 has the larger mean delay (the schedule's expected straggler), but with seed 1 its
  // exponential draw comes under rank 2's fixed 1 ms, so rank 2 arrives last.
  const auto r = run({"simulate", "--algo", "stragglar", "-n", "4", "--seed", "1", "--arrival",
                      "{model: stragglers, stragglers: [{rank: 1, delay: {distribution: exponential, mean: 3ms}}, "
                      "{rank: 2, delay: 1ms}]}",
                      "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"straggler\":2,\"expected_straggler\":1"), std::string::npos) << r.out;
}

// Counts and ranks held in 32 bits: a larger value is an error naming the option, never its low
// 32 bits (-n 4294967298 ran with n = 2, a 2^64 - 1 pipeline depth overflowed the generator).
TEST(CliHardening, ValuesBeyond32BitsAreRefusedByName) {
  const auto refused = [](std::vector<std::string> args, const std::string& what) {
    const CliRun r = run(args);
    EXPECT_NE(r.code, 0) << r.out;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
  };
  refused({"simulate", "-a", "stragglar", "-n", "4294967298", "--delay", "1ms"}, "-n: 4294967298 is too large (at most 4294967295)");
  refused({"schedule", "-a", "stragglar", "-n", "4294967298"}, "-n: 4294967298 is too large");
  refused({"schedule", "-a", "stragglar", "-n", "8", "--straggler", "4294967297"}, "--straggler: 4294967297 is too large");
  refused({"simulate", "-a", "binomial_tree", "-n", "8", "--pipeline-chunks", "18446744073709551615"},
          "--pipeline-chunks: 18446744073709551615 is too large");
  refused({"simulate", "-a", "stragglar_online", "-n", "8", "--late-ranks", "4294967296"}, "--late-ranks: 4294967296 is too large");
  refused({"simulate", "-a", "ring", "-n", "18446744073709551616"}, "-n: '18446744073709551616' is too large");
  refused({"verify", "--n", "4294967298"}, "verify: --n 4294967298 is too large");
}

// Sizes refused before the memory is spent, naming what to lower: an -n whose ranks alone pass
// the limit (topology and arrivals were built first: 2 s and 514 MB at 3,000,000 GPUs, out of
// memory at 30,000,000), a pipeline depth (extrapolated, not generated: 10^8 chunks took 8.8 s
// and 1.1 GB), and the same guard in `schedule`, which had none.
TEST(CliHardening, HugeRunsAreRefusedBeforeTheyAllocate) {
  // Memory, not wall time, is what the guard saves (a timed check failed under ASan in CI): the
  // process's peak resident size may not grow by 512 MiB (10^8 chunks used to take 1.1 GB).
  const auto peak_bytes = [] {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return static_cast<double>(usage.ru_maxrss) * 1024.0;  // ru_maxrss is in KiB on Linux
  };
  const auto refused = [&](std::vector<std::string> args, const std::string& what) {
    const double before = peak_bytes();
    const CliRun r = run(args);
    EXPECT_NE(r.code, 0) << r.out;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_LT(peak_bytes() - before, 512.0 * 1024 * 1024) << r.err;
  };
  refused({"simulate", "-a", "ring", "-n", "30000000"}, "-n 30000000 needs more than 4.5 GiB for its ranks alone");
  refused({"simulate", "-a", "binomial_tree", "-n", "8", "--pipeline-chunks", "100000000"},
          "-n 8 with --pipeline-chunks 100000000 makes a binomial_tree schedule of about 1.4e+09 transfers");
  refused({"schedule", "-a", "stragglar", "-n", "100000000"}, "schedule: -n 100000000 makes a stragglar schedule");
  refused({"schedule", "-a", "binomial_tree", "-n", "8", "--pipeline-chunks", "100000000"}, "with --pipeline-chunks 100000000");
  refused({"schedule", "-a", "stragglar", "-n", "8", "--straggler", "8"}, "schedule: --straggler 8 is not a rank of n = 8");
  // Hierarchical rows on node sizes that divide neither 256 nor 512 are estimated too.
  refused({"schedule", "-a", "nccl_tree", "-n", "3000", "--gpus-per-node", "3", "--pipeline-chunks", "100000"},
          "-n 3000 with --pipeline-chunks 100000 makes a nccl_tree schedule");
  // A depth rule is checked, naming the depth given, not extrapolated past.
  refused({"schedule", "-a", "double_binary_tree", "-n", "8", "--pipeline-chunks", "1025"}, "pipeline_chunks = 1025 must be even");
  // Rows without a pipeline do not blame the depth (and a depth given to one is refused as unread).
  const CliRun ring = run({"simulate", "-a", "ring", "-n", "30000"});
  EXPECT_EQ(ring.err.find("--pipeline-chunks"), std::string::npos) << ring.err;
  // Depths past the counted ones still run when they fit, odd (it recursed without end) or even.
  for (const char* depth : {"1025", "5000"}) {
    const CliRun deep = run({"simulate", "-a", "binomial_tree", "-n", "8", "--pipeline-chunks", depth});
    EXPECT_EQ(deep.code, 0) << deep.err;
  }
}

// From a reader of the README (stop 18): a bare gamma suggests seconds per byte, not ms (1,000
// times too small); a hierarchical algorithm on a flat topology names the topology in simulate as
// in run and advise; advise's JSON names the studied algorithm its critical delay is for; and its
// table keeps its columns with the longest algorithm name.
TEST(CliHardening, ReadersFindingsOnMessagesAndFields) {
  const CliRun gamma = run({"simulate", "-a", "ring", "-n", "8", "--gamma", "1e-12"});
  EXPECT_NE(gamma.code, 0);
  EXPECT_NE(gamma.err.find("--gamma: '1e-12' needs a unit (e.g. 1e-12s)"), std::string::npos) << gamma.err;
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "8", "--gamma", "1e-12s"}).code, 0);
  const CliRun flat = run({"simulate", "-a", "hierarchical", "-n", "16", "--topology", "nvswitch"});
  EXPECT_NE(flat.code, 0);
  EXPECT_NE(flat.err.find("simulate: algorithm 'hierarchical' does not support n = 16 on topology 'nvswitch' (it needs "
                          "the GPUs per node: a cluster topology's"),
            std::string::npos)
      << flat.err;
  const CliRun json = run({"advise", "-n", "8", "--size", "1GiB", "--delay", "5ms", "--algorithms", "stragglar,ring", "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_NE(json.out.find("\"best_baseline\":\"ring\",\"studied\":\"stragglar\",\"critical_delay_s\":"), std::string::npos)
      << json.out;
  const CliRun table = run({"advise", "-n", "6", "--size", "1GiB", "--delay", "5ms", "--algorithms",
                            "stragglar,recursive_halving_doubling_fold"});
  ASSERT_EQ(table.code, 0) << table.err;
  // Every row of the ranking puts its mean in the same column as the header's "mean".
  const std::size_t header = table.out.find("rank  algorithm");
  ASSERT_NE(header, std::string::npos) << table.out;
  const std::size_t mean_col = table.out.find("mean", header) - header;
  std::istringstream lines(table.out.substr(header));
  std::string line;
  std::getline(lines, line);
  int rows = 0;
  for (; std::getline(lines, line) && !line.empty(); ++rows) {
    ASSERT_GT(line.size(), mean_col + 4) << line;
    // The mean ends where the header's "mean" ends (its unit: "ms"), and a space follows.
    EXPECT_EQ(line[mean_col + 3], 's') << "column moved:\n" << table.out;
    EXPECT_EQ(line[mean_col + 4], ' ') << "column moved:\n" << table.out;
  }
  EXPECT_EQ(rows, 3) << table.out;  // with ring, the baseline advise adds
}

// --schedule-for where --straggler names the same thing (no delay, or a trace), and with nccl.
TEST(CliHardening, ScheduleForConflictsAreNamed) {
  const CliRun both = run({"simulate", "-a", "stragglar", "-n", "8", "--straggler", "2", "--schedule-for", "6"});
  EXPECT_NE(both.code, 0);
  EXPECT_NE(both.err.find("give either --straggler or --schedule-for, not both"), std::string::npos) << both.err;
  // --straggler without a delay names only the schedule's rank: for a schedule that ignores it,
  // a no-op the CLI refuses (in `schedule` always); with --delay it makes the rank late.
  const CliRun ring = run({"simulate", "-a", "ring", "-n", "8", "--straggler", "3"});
  EXPECT_NE(ring.code, 0);
  EXPECT_NE(ring.err.find("the schedule of 'ring' does not depend on it"), std::string::npos) << ring.err;
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "8", "--straggler", "3", "--delay", "0"}).code, 0);
  const CliRun listing = run({"schedule", "-a", "ring", "-n", "4", "--straggler", "2"});
  EXPECT_NE(listing.err.find("--straggler 2 does not apply"), std::string::npos) << listing.err;
  const CliRun nccl = run({"simulate", "-a", "nccl", "-n", "8", "--delay", "3ms", "--schedule-for", "6"});
  EXPECT_NE(nccl.code, 0);
  EXPECT_NE(nccl.err.find("not 'nccl' (NCCL's choice here: "), std::string::npos) << nccl.err;
}

TEST(CliHardening, ASecondYamlDocumentInASpecIsAnError) {
  const std::string two = std::string(kTinySpec) + "---\nname: second\nalgorithms: [ring]\nn: [4]\n";
  try {
    parse_spec(two, "two.yaml", fs::current_path());
    FAIL() << "a second document was ignored";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("second YAML document"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(parse_spec(std::string("---\n") + kTinySpec, "one.yaml", fs::current_path()));
}

TEST(CliHardening, DuplicateCalibrateInputsAreAnError) {
  const std::string log = COLLSIM_TEST_DATA_DIR "/nccl-tests/h100-nvswitch-4gpu-allgather.txt";
  const std::string same = COLLSIM_TEST_DATA_DIR "/nccl-tests/../nccl-tests/h100-nvswitch-4gpu-allgather.txt";
  expect_one_error_line(run({"calibrate", log, same, "--no-plot"}), "given twice");
  // A hard link resolves to its own path: it is the same file all the same.
  ScratchDir dir("hardlink");
  const fs::path copy = dir.path() / "copy.txt";
  const fs::path link = dir.path() / "link.txt";
  fs::copy_file(log, copy);
  fs::create_hard_link(copy, link);
  expect_one_error_line(run({"calibrate", copy.string(), link.string(), "--no-plot"}), "given twice");
}

// --hold-out matched file names only: the path as given failed, and two inputs with the same
// file name in different directories were both held out (and merged in the per-source errors).
TEST(CliHardening, CalibrateHoldOutByPathAndASharedFileName) {
  const std::string data = COLLSIM_TEST_DATA_DIR "/nccl-tests/";
  ScratchDir dir("holdout");
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  const fs::path a = dir.path() / "a" / "log.txt";
  const fs::path b = dir.path() / "b" / "log.txt";
  fs::copy_file(data + "h100-nvswitch-4gpu-allgather.txt", a);
  fs::copy_file(data + "h100-nvswitch-4gpu-reducescatter.txt", b);
  expect_one_error_line(
      run({"calibrate", a.string(), b.string(), "--hold-out", "log.txt", "--no-plot"}),
      "--hold-out log.txt: inputs " + a.string() + " and " + b.string() + " both have this file name");
  const CliRun by_path = run({"calibrate", a.string(), b.string(), "--hold-out", b.string(), "--no-plot"});
  ASSERT_EQ(by_path.code, 0) << by_path.err;
  // Only a's 28 rows are fitted; b's rows are predicted, named by b's path.
  EXPECT_NE(by_path.out.find("fit: 28 rows"), std::string::npos) << by_path.out;
  std::istringstream lines(by_path.out);
  int predicted = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(b.string() + " ", 0) != 0) continue;
    EXPECT_EQ(line.substr(line.size() - 7), "predict") << line;
    ++predicted;
  }
  EXPECT_EQ(predicted, 28) << by_path.out;
  const CliRun both = run({"calibrate", a.string(), b.string(), "--no-plot"});
  EXPECT_NE(both.out.find("fit: 56 rows"), std::string::npos) << both.out;
  const std::string rs = data + "h100-nvswitch-4gpu-reducescatter.txt";
  const std::string ag = data + "h100-nvswitch-4gpu-allgather.txt";
  const CliRun full = run({"calibrate", ag, rs, "--hold-out", rs, "--no-plot"});
  ASSERT_EQ(full.code, 0) << full.err;
  const CliRun name = run({"calibrate", ag, rs, "--hold-out", "h100-nvswitch-4gpu-reducescatter.txt", "--no-plot"});
  ASSERT_EQ(name.code, 0) << name.err;
  EXPECT_NE(full.out.find("fit: 28 rows"), std::string::npos) << full.out;
  EXPECT_EQ(full.out, name.out);
  expect_one_error_line(run({"calibrate", ag, rs, "--hold-out", data + "nope.txt", "--no-plot"}),
                        "no input file has this name or path");
}

// Options that only some rows read are refused for the others, as --schedule-for already was:
// --late-ranks 3 -a ring, --agreement-cost with stragglar and --pipeline-chunks 4 -a ring ran
// and printed a result that the option had not touched.
TEST(CliHardening, SimulateRefusesOptionsTheAlgorithmDoesNotRead) {
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--late-ranks", "3"}),
                        "simulate: --late-ranks 3 applies only to algorithms that pick the late ranks at run time "
                        "(stragglar_online), not 'ring'");
  expect_one_error_line(run({"simulate", "-a", "stragglar", "-n", "8", "--delay", "1ms", "--agreement-cost", "6us"}),
                        "--agreement-cost 6us applies only to");
  expect_one_error_line(run({"simulate", "-a", "nccl", "-n", "8", "--late-ranks", "2"}),
                        "not 'nccl' (NCCL's choice here: ring)");
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--pipeline-chunks", "4"}),
                        "simulate: --pipeline-chunks 4 applies only to pipelined algorithms");
  // Where the option is read, or left at its default, nothing changes.
  EXPECT_EQ(run({"simulate", "-a", "stragglar_online", "-n", "8", "--late-ranks", "3", "--agreement-cost", "6us"}).code, 0);
  EXPECT_EQ(run({"simulate", "-a", "binomial_tree", "-n", "8", "--pipeline-chunks", "4"}).code, 0);
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "8", "--pipeline-chunks", "0"}).code, 0);
  expect_one_error_line(run({"schedule", "-a", "ring", "-n", "8", "--late-ranks", "3"}),
                        "schedule: --late-ranks 3 applies only to");
  expect_one_error_line(run({"schedule", "-a", "ring", "-n", "8", "--pipeline-chunks", "4"}),
                        "schedule: --pipeline-chunks 4 applies only to pipelined algorithms");
  EXPECT_EQ(run({"schedule", "-a", "stragglar_online", "-n", "8", "--late-ranks", "3"}).code, 0);
}

// n < 2 is refused by verify as by every other command; it was skipped, printing "0 passed,
// 0 failed" with exit code 0.
TEST(CliHardening, VerifyRefusesNBelowTwo) {
  expect_one_error_line(run({"verify", "-a", "ring", "-n", "1"}), "verify: --n 1 is not supported (an AllReduce needs n >= 2)");
  expect_one_error_line(run({"verify", "-a", "ring", "-n", "0..4"}), "verify: --n 0 is not supported");
  EXPECT_EQ(run({"verify", "-a", "ring", "-n", "2..4"}).code, 0);
}

// ---- The last hardening hunt: memory caps, unclosed quotes, raw bytes, dry-run exit code -----

// A memory cap above the machine's memory let a run through that the kernel's OOM killer then
// ended; it is refused, naming the option, the value and the memory.
TEST(CliHardening, MemoryCapsAboveThePhysicalMemoryAreRefused) {
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  try {
    memory_cap_bytes("16GiB", "--max-run-memory", 8 * kGiB);
    FAIL() << "a cap above an 8 GiB machine was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--max-run-memory: 16GiB is more than this machine's memory (8.0 GiB)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(memory_cap_bytes("8GiB", "--max-run-memory", 8 * kGiB), 8 * kGiB);
  EXPECT_EQ(memory_cap_bytes("16GiB", "--max-run-memory", 0), 16 * kGiB) << "an unknown memory is not held against it";

  // 1 TiB is the largest size collsim parses; the machine running the tests has less memory.
  if (physical_memory_bytes() >= 1024 * kGiB) GTEST_SKIP() << "this machine has 1 TiB of memory or more";
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"simulate", "-a", "ring", "-n", "8", "--max-schedule-memory", "1TiB"},
           {"schedule", "-a", "ring", "-n", "8", "--max-schedule-memory", "1TiB"}}) {
    expect_one_error_line(run(args), "--max-schedule-memory: 1TiB is more than this machine's memory (");
  }
  ScratchDir dir("memcap");
  const fs::path spec = dir.write("tiny.yaml", kTinySpec);
  for (const bool dry : {false, true}) {
    std::vector<std::string> args{"run", spec.string(), "--max-run-memory", "1TiB", "--out", (dir.path() / "out").string()};
    if (dry) args.push_back("--dry-run");
    expect_one_error_line(run(args), "--max-run-memory: 1TiB is more than this machine's memory (");
  }
  EXPECT_FALSE(fs::exists(dir.path() / "out"));
  // The defaults and caps within the memory still run.
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "8", "--max-schedule-memory", "64MiB"}).code, 0);
}

// yaml-cpp 0.7 reads an unclosed quote to the end of the file (when a newline ends it) without
// an error: `name: "abc` swallowed the next line and collsim said 'algorithms' was missing.
TEST(CliHardening, AnUnclosedQuoteInASpecIsNamedNotAMissingKey) {
  const auto error_of = [](const std::string& yaml) {
    try {
      parse_spec(yaml, "s.yaml", fs::current_path());
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("name: \"abc\nalgorithms: [ring]\n"),
            "s.yaml: name (line 1): value \"abc\\nalgorithms: [ring]\" spans 2 lines; an unterminated quote?");
  EXPECT_EQ(error_of("name: 'abc\nalgorithms: [ring]\nn: [4]\n"),
            "s.yaml: name (line 1): value 'abc\\nalgorithms: [ring]\\nn: [4]' spans 3 lines; an unterminated quote?");
  // Any value that is a name, number or path: here one closed by the next quote of the file.
  EXPECT_EQ(error_of("name: t\nalgorithms: [ring]\nn: [4]\nengine: \"replay\ntopology: \"\n"),
            "s.yaml: engine (line 4): value \"replay\\ntopology: \" spans 2 lines; an unterminated quote?");
  EXPECT_EQ(error_of("name: t\nalgorithms:\n  - ring\n  - \"direct\nn: [4]\n"),
            "s.yaml: algorithms[1] (line 4): value \"direct\\nn: [4]\" spans 2 lines; an unterminated quote?");
  EXPECT_NE(error_of("name: abc\n  def\nalgorithms: [ring]\nn: [4]\n")
                .find("name (line 1): value 'abc\\n  def' spans 2 lines; a line indented under it continues it"),
            std::string::npos);
  // A description may be wrapped, but not left open to the end of the file.
  EXPECT_EQ(error_of("name: t\ndescription: \"one\nalgorithms: [ring]\nn: [4]\n"),
            "s.yaml: description (line 2): value \"one\\nalgorithms: [ring]\\nn: [4]\" runs to the end of the file: its "
            "closing \" is missing");
  EXPECT_EQ(error_of(std::string(kTinySpec) + "description: \"a study\n  wrapped over two lines\"\n"), "no error");
  // An unclosed quote on the last line swallows nothing, and is still named.
  EXPECT_EQ(error_of("algorithms: [ring]\nn: [4]\nname: \"t\n"),
            "s.yaml: name (line 3): value \"t\" runs to the end of the file: its closing \" is missing");
  // One-line values, quoted, with escapes, anchors or tags, and after a byte order mark, are fine.
  EXPECT_EQ(error_of("\xEF\xBB\xBFname: \"t\\\"q\"\nalgorithms: [&a 'ring', !!str direct]\nn: [4]\n"), "no error");
  // The command line says the same.
  ScratchDir dir("unclosed");
  expect_one_error_line(run({"run", dir.write("s.yaml", "name: \"abc\nalgorithms: [ring]\n").string(), "--dry-run"}),
                        "name (line 1): value \"abc\\nalgorithms: [ring]\" spans 2 lines; an unterminated quote?");
}

// Topology and model files share the YAML reader, and the check.
TEST(CliHardening, AnUnclosedQuoteInATopologyOrModelFileIsNamed) {
  ScratchDir dir("unclosed_files");
  const fs::path topology = dir.write("t.yaml", "kind: nvswitch\nname: \"abc\nn: 8\n");
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "4", "--topology", topology.string()}),
                        "t.yaml:2: 'name' value \"abc\\nn: 8\" spans 2 lines; an unterminated quote?");
  const fs::path wrapped = dir.write("w.yaml", "kind: nvswitch\ndescription: \"a long\n  description\"\nn: 8\n");
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "4", "--topology", wrapped.string()}).code, 0);

  std::ifstream in(COLLSIM_SOURCE_DIR "/configs/models/h100_nvswitch.yaml");
  std::stringstream text;
  text << in.rdbuf();
  std::string model = text.str();
  const std::string format = "format: collsim-link-model\n";
  ASSERT_NE(model.find(format), std::string::npos);
  model.replace(model.find(format), format.size(), "format: \"collsim-link-model\n  v2\"\n");
  const fs::path file = dir.write("m.yaml", model);
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "4", "--model", file.string()}),
                        "m.yaml:4: 'format' value \"collsim-link-model\\n  v2\" spans 2 lines; an unterminated quote?");
}

// Raw bytes of the input that are not UTF-8 were echoed as they were; the one place every error
// is printed escapes them (and control characters), keeping valid UTF-8.
TEST(CliHardening, ErrorsEscapeBytesThatAreNotUtf8) {
  ScratchDir dir("bytes");
  const auto r = run({"run", dir.write("s.yaml", "name: t\nalgorithms: [ring\xff]\nn: [4]\n").string(), "--dry-run"});
  expect_one_error_line(r, "unknown algorithm 'ring\\xff'");
  EXPECT_EQ(r.err.find('\xff'), std::string::npos) << r.err;
  const auto utf8 = run({"run", dir.write("u.yaml", "name: t\nalgorithms: [\xC2\xB5s]\nn: [4]\n").string(), "--dry-run"});
  expect_one_error_line(utf8, "unknown algorithm '\xC2\xB5s'");
  const auto arg = run({"simulate", "-a", "ring\xC0\xAF", "-n", "4"});
  expect_one_error_line(arg, "'ring\\xc0\\xaf'");
}

// --dry-run said "the run would be refused" and exited 0, so `run --dry-run S && run S` went on
// to the refusal; it prints the counts and the estimate, then exits 2.
TEST(CliHardening, DryRunExits2WhenTheRunWouldBeRefused) {
  ScratchDir dir("dryrefused");
  const fs::path spec = dir.write("big.yaml", "name: t\nalgorithms: [ring]\nn: [2048, 16]\nsizes: 1MiB\n");
  const auto refused = run({"run", spec.string(), "--dry-run", "--max-run-memory", "64MiB"});
  EXPECT_EQ(refused.code, 2) << refused.out << refused.err;
  for (const char* part : {"dry run t: 2 points", "estimated: 2 runs", "largest run 128.3 MiB",
                           "the run would be refused: run: the largest run, ring at n = 2048 on nvswitch"}) {
    EXPECT_NE(refused.out.find(part), std::string::npos) << part << " in " << refused.out;
  }
  const auto fits = run({"run", spec.string(), "--dry-run", "--max-run-memory", "1GiB"});
  EXPECT_EQ(fits.code, 0) << fits.out << fits.err;
  EXPECT_EQ(fits.out.find("would be refused"), std::string::npos) << fits.out;
  EXPECT_NE(run({"run", "--help"}).out.find("exit 2 if the run would be refused"), std::string::npos);
}

// A cluster's oversubscription above 1000:1 is a typo: 1e308 left the spine links with less than
// a byte per second, so replay printed a 300-digit time and SimGrid aborted its child process
// ("Deadlock detected", exit 70); inf was refused without its line or key.
TEST(CliHardening, OversubscriptionIsBounded) {
  ScratchDir dir("oversub");
  const auto topology = [&](const std::string& name, const std::string& ratio) {
    return dir.write(name + ".yaml",
                     "kind: cluster\nn: 16\ngamma: 0\ncluster:\n  gpus_per_node: 8\n  nodes_per_leaf: 1\n"
                     "  oversubscription: " + ratio + "\n").string();
  };
  for (const char* engine : {"replay", "simgrid"}) {
    const CliRun huge = run({"simulate", "-a", "ring", "-n", "16", "-s", "1MiB", "--engine", engine, "--topology",
                             topology("huge", "1e308")});
    expect_one_error_line(huge, "huge.yaml:7: 'cluster.oversubscription' = 1e+308 must be from 1 to 1000 (2 means 2:1)");
  }
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "16", "--topology", topology("inf", "inf")}),
                        "inf.yaml:7: 'cluster.oversubscription' = inf must be from 1 to 1000");
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "16", "-s", "1MiB", "--topology", topology("ok", "1000")}).code, 0);
}

// Every delay lies within 1 hour, drawn ones too: a pareto of shape 0.01 drew 2e8 s and the run
// printed a completion time that kept no digit of the collective; an empirical sample of 1e300 s
// is refused by line like one written with a unit.
TEST(CliHardening, DrawnDelaysBeyondAnHourAreRefused) {
  // A tail whose 99th percentile is past the hour is refused as given, not by the seed's luck
  // (lognormal sigma 1e300 drew inf or 0; pareto shape 0.01 drew 2e8 s for one seed).
  expect_one_error_line(
      run({"simulate", "-a", "ring", "-n", "8", "-s", "1MiB", "--distribution", "pareto:scale=1ms,shape=0.01"}),
      "pareto(scale=1.000 ms, shape=0.01) has its 99th percentile at 1e+197 s, more than 3600 s (1 hour)");
  expect_one_error_line(
      run({"simulate", "-a", "ring", "-n", "8", "-s", "1MiB", "--distribution", "lognormal:median=1ms,sigma=1e300"}),
      "has its 99th percentile at inf s, more than 3600 s");
  expect_one_error_line(run({"advise", "-n", "8", "-s", "1MiB", "--jitter", "exponential:mean=3000s"}),
                        "exponential(mean=3000.000 s, shift=0.0 ns) has its 99th percentile at 13815.5 s");
  // One within that bound still draws past the hour now and then: that draw is refused, naming it.
  expect_one_error_line(
      run({"simulate", "-a", "ring", "-n", "1024", "-s", "1MiB", "--jitter", "exponential:mean=700s"}),
      "jitter exponential(mean=700.000 s, shift=0.0 ns) drew");
  ScratchDir dir("drawn");
  const fs::path samples = dir.write("d.csv", "delay_s\n0.001\n1e300\n");
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--distribution", "empirical:file=" + samples.string()}),
                        "d.csv:3: delay '1e300' is longer than 3600 s");
  // A heavy tail that stays in range still runs.
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "8", "-s", "1MiB", "--distribution", "pareto:scale=1ms,shape=1.5"}).code, 0);
  // Each part within the hour, the sum past it: refused as well, naming the rank and the trial.
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "-s", "1MiB", "--delay", "3000s", "--straggler", "3",
                             "--jitter", "uniform:min=0,max=3000s"}),
                        "rank 3 in trial 0 arrives ");
  expect_one_error_line(
      run({"simulate", "-a", "ring", "-n", "8", "-s", "1MiB", "--delay", "3000s", "--straggler", "3", "--jitter",
           "uniform:min=0,max=3000s"}),
      "s after the first rank (its delay, explicit or traced arrival plus its jitter), more than 3600 s (1 hour)");
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "8", "-s", "1MiB", "--delay", "3000s", "--straggler", "3", "--jitter",
                 "uniform:min=0,max=500s"})
                .code,
            0);
}

// advise had no memory guard: a mistyped -n (it takes up to 2^20) ended in "out of memory",
// naming nothing, or grew to the machine's memory. It refuses as run does, naming the run.
TEST(CliHardening, AdviseRefusesARunAboveItsMemoryCap) {
  expect_one_error_line(run({"advise", "-n", "2048", "-s", "1MiB", "--algorithms", "ring,stragglar", "--delay", "1ms",
                             "--max-run-memory", "64MiB"}),
                        "advise: the largest run, ");
  const CliRun r = run({"advise", "-n", "2048", "-s", "1MiB", "--algorithms", "ring,stragglar", "--delay", "1ms",
                        "--max-run-memory", "64MiB"});
  EXPECT_NE(r.err.find("on nvswitch (replay), needs about"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("above --max-run-memory 64MiB; lower -n"), std::string::npos) << r.err;
  expect_one_error_line(run({"advise", "-n", "8", "-s", "1MiB", "--max-run-memory", "2TiB"}), "--max-run-memory: size '2TiB'");
  EXPECT_EQ(run({"advise", "-n", "8", "-s", "1MiB", "--delay", "1ms", "--max-run-memory", "64MiB"}).code, 0);
}

// What a run writes into --out is checked before it runs: a directory named results.csv cost the
// whole study and then "cannot rename 'results.csv.tmp.PID'"; a checkpoint journal that is a FIFO
// hung the run, one linked to /dev/zero read until memory ran out, and one linked to another file
// overwrote that file.
TEST(CliHardening, RunChecksItsOutputFilesBeforeItRuns) {
  ScratchDir dir("outfiles");
  const fs::path spec = dir.write("tiny.yaml", kTinySpec);
  const fs::path out = dir.path() / "out";
  fs::create_directories(out / "results.csv");
  expect_one_error_line(run({"run", spec.string(), "--out", out.string(), "--quiet", "--no-plot"}),
                        "run: --out '" + out.string() + "': 'results.csv' there is a directory, where the run writes");
  EXPECT_FALSE(fs::exists(out / "checkpoint.journal"));
  fs::remove_all(out);
  fs::create_directories(out);
  const fs::path other = dir.write("other.txt", "keep me\n");
  fs::create_symlink(other, out / "checkpoint.journal");
  const CliRun linked = run({"run", spec.string(), "--out", out.string(), "--quiet", "--no-plot"});
  ASSERT_EQ(linked.code, 2) << linked.out << linked.err;
  expect_one_error_line(linked, "'checkpoint.journal' there is not a regular file (a symbolic link)");
  std::ifstream kept(other);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(kept), {}), "keep me\n");
  fs::remove(out / "checkpoint.journal");
  ASSERT_EQ(::mkfifo((out / "checkpoint.journal").c_str(), 0600), 0);
  expect_one_error_line(run({"run", spec.string(), "--out", out.string(), "--quiet", "--no-plot"}),
                        "'checkpoint.journal' there is not a regular file (a FIFO)");
  fs::remove(out / "checkpoint.journal");
  EXPECT_EQ(run({"run", spec.string(), "--out", out.string(), "--quiet", "--no-plot"}).code, 0);
}

// Every file collsim reads goes through read_text_file: /dev/zero or /dev/urandom given as a
// trace, log, spec, model or delay samples was read until memory ran out (a hang, then the OOM
// killer); a UTF-16 export was read whole and then refused for its first field. Each is now one
// error line naming the file, the line of the first NUL byte and what the file was for.
TEST(CliHardening, InputsThatAreNotTextAreRefusedAtTheirFirstNulByte) {
  expect_one_error_line(run({"advise", "-s", "1MiB", "--arrival-trace", "/dev/zero"}),
                        "/dev/zero:1: a NUL byte: arrival trace '/dev/zero' is not a text file");
  expect_one_error_line(run({"run", "/dev/urandom"}), "a NUL byte: experiment spec '/dev/urandom' is not a text file");
  expect_one_error_line(run({"calibrate", "/dev/zero"}), "/dev/zero:1: a NUL byte: '/dev/zero' is not a text file");
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--model", "/dev/zero"}),
                        "/dev/zero:1: a NUL byte: '/dev/zero' is not a text file");
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--distribution", "empirical:file=/dev/zero"}),
                        "/dev/zero:1: a NUL byte: delay samples file '/dev/zero' is not a text file");
  ScratchDir dir("utf16");
  const fs::path utf16 = dir.write("trace.csv", std::string("\xFF\xFEi\0t\0", 6));
  expect_one_error_line(run({"advise", "-s", "1MiB", "--arrival-trace", utf16.string()}),
                        "trace.csv:1: a NUL byte: arrival trace '" + utf16.string() + "' is not a text file (binary? a "
                        "UTF-16 export? save it as UTF-8)");
}

// A dozen lines whose aliases repeat aliases ("billion laughs") expand to 9^12 values: the
// readers walk every value, and a spec, topology, model or --arrival like this ran for hours.
// Each is now refused at 1,000,000 values, naming the file or option; anchors used as intended
// still work.
TEST(CliHardening, YamlAliasBombsAreRefused) {
  const auto bomb = [](const std::string& last_key) {
    std::string yaml = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i <= 12; ++i) {
      yaml += fmt::format("a{0}: &a{0} [*a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}]\n", i, i - 1);
    }
    return yaml + last_key + ": *a12\n";
  };
  ScratchDir dir("bomb");
  const std::string limit = "holds more than 1000000 values once its aliases are expanded";
  const fs::path spec = dir.write("spec.yaml", "name: bomb\n" + bomb("algorithms"));
  expect_one_error_line(run({"run", spec.string(), "--dry-run"}), "spec.yaml: the YAML " + limit);
  const fs::path topology = dir.write("topo.yaml", "kind: nvswitch\n" + bomb("x"));
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--topology", topology.string()}),
                        "topo.yaml: the YAML " + limit);
  const fs::path model = dir.write("model.yaml", bomb("x"));
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--model", model.string()}),
                        "model.yaml: the YAML " + limit);
  std::string inline_bomb = "{a0: &a0 [x, x, x, x, x, x, x, x, x]";
  for (int i = 1; i <= 12; ++i) inline_bomb += fmt::format(", a{0}: &a{0} [*a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}, *a{1}]", i, i - 1);
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "8", "--arrival", inline_bomb + "}"}),
                        "simulate: --arrival: the YAML " + limit);
  // An anchor reused as intended: one straggler in two arrival models.
  const fs::path anchors = dir.write(
      "anchors.yaml", "name: anchors\nalgorithms: [ring]\nn: [8]\nsizes: [1MiB]\ntopology: nvswitch\narrival:\n"
                      "  - {label: one, model: stragglers, stragglers: [&late {rank: 7, delay: 1ms}]}\n"
                      "  - {label: two, model: stragglers, stragglers: [*late, {rank: 6, delay: 2ms}]}\n");
  EXPECT_EQ(run({"run", anchors.string(), "--dry-run"}).code, 0) << run({"run", anchors.string(), "--dry-run"}).err;
}

// Outputs never replace a file the command read, whichever option named it: a topology by name,
// a delay samples file, a trace inside --arrival (each replaced its input, exit 0, before).
TEST(CliHardening, NoOutputReplacesAnInputItRead) {
  const test::TempDir dir;
  const auto path = [&](const char* name) { return (dir.path() / name).string(); };
  std::ofstream(path("D.txt")) << "1ms\n2ms\n";
  std::ofstream(path("T.csv")) << "iteration,rank,arrival_s\n0,0,0\n0,1,0.001\n0,2,0\n0,3,0\n";
  fs::copy_file(COLLSIM_SOURCE_DIR "/configs/topologies/dgx_h100.yaml", path("dgx.yaml"));
  const std::string samples_before = "1ms\n2ms\n";
  const auto samples = run({"simulate", "-a", "ring", "-n", "4", "--distribution", "empirical:file=" + path("D.txt"),
                            "--trace", path("D.txt")});
  EXPECT_EQ(samples.code, 2);
  test::expect_contains(samples.err, "is an input this command read");
  std::ifstream in(path("D.txt"));
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), samples_before);
  const auto trace = run({"simulate", "-a", "ring", "-n", "4", "--arrival", fmt::format("{{model: trace, file: {}}}", path("T.csv")),
                          "--trace", path("T.csv")});
  EXPECT_EQ(trace.code, 2);
  test::expect_contains(trace.err, "is an input this command read");
  const auto model = run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-8gpu-allreduce-nvidia-exemplar.txt", "--topology",
                          path("dgx.yaml"), "--out", path("dgx.yaml"), "--no-plot"});
  EXPECT_EQ(model.code, 2);
  EXPECT_FALSE(fs::exists(path("dgx_fit.csv")));  // neither output is written
  // Not regular files: a pipe is refused, a link is written through.
  ASSERT_EQ(::mkfifo(path("f.yaml").c_str(), 0644), 0);
  const auto fifo = run({"arrivals", path("T.csv"), "--fit", path("f.yaml")});
  EXPECT_EQ(fifo.code, 2);
  test::expect_contains(fifo.err, "arrivals: --fit '" + path("f.yaml") + "' exists and is not a regular file");
  EXPECT_EQ(fifo.out, "");  // refused before the summary, not after it
  // The files a plot writes beside its named one too (matplotlib waited on a pipe for ever).
  ASSERT_EQ(::mkfifo(path("p_delays.csv").c_str(), 0644), 0);
  const auto plot_fifo = run({"arrivals", path("T.csv"), "--plot", path("p.png")});
  EXPECT_EQ(plot_fifo.code, 2);
  test::expect_contains(plot_fifo.err,
                        "arrivals: --plot (writes p_delays.csv) '" + path("p_delays.csv") + "' exists and is not");
  EXPECT_EQ(plot_fifo.out, "");
  ASSERT_EQ(::mkfifo(path("m_fit.svg").c_str(), 0644), 0);
  const auto fit_fifo = run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-nvswitch-4gpu-allgather.txt",
                             "--out", path("m.yaml")});
  EXPECT_EQ(fit_fifo.code, 2);
  test::expect_contains(fit_fifo.err, "calibrate: the plot (writes m_fit.svg; --no-plot skips it)");
  EXPECT_FALSE(fs::exists(path("m.yaml")));
  EXPECT_EQ(run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-nvswitch-4gpu-allgather.txt", "--out",
                 path("m.yaml"), "--no-plot"})
                .code,
            0);
  // A device under an output's name is refused with the option's name, before any work.
  const auto null_trace = run({"simulate", "-a", "ring", "-n", "4", "--trace", "/dev/null"});
  EXPECT_EQ(null_trace.code, 2);
  test::expect_contains(null_trace.err, "simulate: --trace '/dev/null' exists and is not a regular file");
  EXPECT_EQ(null_trace.out, "");
  const auto null_csv = run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-nvswitch-4gpu-allgather.txt",
                             "--csv", "/dev/null", "--no-plot"});
  EXPECT_EQ(null_csv.code, 2);
  test::expect_contains(null_csv.err, "calibrate: --csv '/dev/null' exists and is not a regular file");
  fs::create_symlink("/dev/null", path("null.csv"));
  test::expect_contains(run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-nvswitch-4gpu-allgather.txt",
                             "--out", path("null.csv"), "--no-plot"})
                            .err,
                        "calibrate: --out '" + path("null.csv") + "' is a link, and not to a regular file");
  std::ofstream(path("real.yaml")) << "x\n";
  fs::create_symlink(path("real.yaml"), path("link.yaml"));
  ASSERT_EQ(run({"arrivals", path("T.csv"), "--fit", path("link.yaml")}).code, 0);
  EXPECT_TRUE(fs::is_symlink(path("link.yaml")));
  EXPECT_GT(fs::file_size(path("real.yaml")), 10u);
  // The next command starts a new list: writing what an earlier command read is fine.
  EXPECT_EQ(run({"simulate", "-a", "ring", "-n", "4", "--trace", path("D.txt")}).code, 0);
  EXPECT_EQ(run({"simulate", "-a", "ring", "--arrival-trace", ""}).code, 2);
}

// A newline or tab in an output name is a quoting mistake: --out $'r5\n' made a directory whose
// name ended in a newline. Without --out, a problem with the directory names the spec's name.
TEST(CliHardening, OutputNamesWithControlCharactersAndTheDefaultDirectory) {
  ScratchDir dir("ctrl");
  expect_one_error_line(run({"run", COLLSIM_TEST_DATA_DIR "/experiments/mpi_small.yaml", "--out",
                             (dir.path() / "r5\n").string(), "--quiet", "--no-plot"}),
                        "r5?' holds a control character (a newline or tab?)");
  EXPECT_TRUE(fs::is_empty(dir.path()));
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "4", "--trace", (dir.path() / "t\t.json").string()}),
                        "simulate: --trace '");
  const fs::path spec = dir.write("long.yaml", "name: " + std::string(5000, 'a') + "\nalgorithms: [ring]\nn: [4]\n");
  const CliRun r = run({"run", spec.string(), "--quiet", "--no-plot"});
  EXPECT_EQ(r.code, 2);
  test::expect_contains(r.err, "run: the output directory (no --out: results/<the spec's name>) 'results/aaa");
}

// Messages that named the wrong problem: an empty plot or trace name resolved to the spec's
// directory ("does not exist", "is a directory"), a plot script that is a directory "did not
// exist", a YAML list given to --arrival was "no such file", and an nvls row of a measurement CSV
// on a switch that cannot reduce named no file or line.
TEST(CliHardening, MessagesNameTheRealProblem) {
  ScratchDir dir("messages");
  const std::string head = "name: p\nalgorithms: [ring]\nn: [4]\n";
  expect_one_error_line(run({"run", dir.write("p1.yaml", head + "plot: \"\"\n").string(), "--dry-run"}),
                        "p1.yaml: plot (line 4): is empty (give a Python script)");
  expect_one_error_line(
      run({"run", dir.write("p2.yaml", head + "plot: " + dir.path().string() + "\n").string(), "--dry-run"}),
      "' is a directory (give a Python script)");
  expect_one_error_line(
      run({"run", dir.write("p3.yaml", head + "arrival: {model: trace, file: \"\"}\n").string(), "--dry-run"}),
      "p3.yaml: arrival.file (line 4): is empty (give the trace file)");
  expect_one_error_line(run({"simulate", "-a", "ring", "-n", "4", "--arrival", "[1, 2]"}),
                        "--arrival (line 1): expected a map {model: ..., ...}, got a list");
  const fs::path csv =
      dir.write("nv.csv", "algorithm,n,size_bytes,time_s\nnvls,8,1048576,2.5e-05\nnvls,8,2097152,3.5e-05\n");
  expect_one_error_line(
      run({"calibrate", csv.string(), "--no-plot"}),
      "nv.csv:2: cannot explain this all_reduce measurement of nvls on 8 ranks on topology 'nvswitch'");
}

// Bad input that shows only while a study runs (an engine that cannot run a point, a draw past
// the hour in trial 49) is exit 2 and writes nothing: the journal and the output directory it
// had made stayed behind, and a rerun "resumed" into the same error.
TEST(CliHardening, BadInputMetMidRunLeavesNothingBehind) {
  ScratchDir dir("midrun");
  const fs::path engine = dir.write("engine.yaml",
                                    "name: e\nalgorithms: [ring]\nn: [8]\nsizes: [1KiB]\nengine: closed_form\n"
                                    "execution: fused\nlaunch: 1us\ndelays: [0, 1ms]\n");
  const fs::path draw = dir.write("draw.yaml",
                                  "name: d\nalgorithms: [ring]\nn: [64]\nsizes: [1KiB]\ntrials: 20\narrival:\n"
                                  "  - {label: ok, model: stragglers, rank: 1, delay: 1ms}\n"
                                  "  - {label: bad, model: stragglers, rank: 1, delay: 1ms,\n"
                                  "     jitter: {distribution: exponential, mean: 700s}}\n");
  for (const fs::path& spec : {engine, draw}) {
    const fs::path out = dir.path() / "made" / spec.stem();
    const CliRun r = run({"run", spec.string(), "--out", out.string(), "--quiet", "--no-plot"});
    EXPECT_EQ(r.code, 2) << r.err;
    test::expect_contains(r.err, spec == engine ? "the closed_form engine charges a fused launch" : "drew ");
    EXPECT_EQ(run({"run", spec.string(), "--dry-run"}).code, 0);  // it is found only by running
    EXPECT_FALSE(fs::exists(dir.path() / "made")) << spec;
    // A directory that was there stays, empty as it was.
    fs::create_directories(dir.path() / "kept");
    EXPECT_EQ(run({"run", spec.string(), "--out", (dir.path() / "kept").string(), "--quiet", "--no-plot"}).code, 2);
    EXPECT_TRUE(fs::is_empty(dir.path() / "kept"));
  }
}

// Rerunning a study from its own config.resolved.yaml into its directory is the documented
// rerun, not an output replacing an input; a pipe where a result file goes is refused before the
// study runs (results.csv was written first, then the run failed).
TEST(CliHardening, RerunFromTheResolvedConfigAndPipesRefusedUpFront) {
  const test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  const std::string spec = COLLSIM_TEST_DATA_DIR "/experiments/mpi_small.yaml";
  ASSERT_EQ(run({"run", spec, "--out", out, "--quiet", "--no-plot"}).code, 0);
  const auto rerun = run({"run", out + "/config.resolved.yaml", "--out", out, "--quiet", "--no-plot"});
  EXPECT_EQ(rerun.code, 0) << rerun.err;
  const std::string piped = (dir.path() / "piped").string();
  fs::create_directories(piped);
  ASSERT_EQ(::mkfifo((piped + "/summary.csv").c_str(), 0644), 0);
  const auto fifo = run({"run", spec, "--out", piped, "--quiet", "--no-plot"});
  EXPECT_EQ(fifo.code, 2);
  test::expect_contains(fifo.err, "not a regular file");
  EXPECT_FALSE(fs::exists(piped + "/results.csv"));
}

// What a run writes or removes at the end (the checkpoint journal it clears, a failing plot
// script's log) is checked against its inputs before it starts: a spec saved as
// checkpoint.journal was deleted by its own run, a trace saved as p.plot.log emptied.
TEST(CliHardening, RunKeepsInputsNamedLikeItsJournalOrPlotLog) {
  const test::TempDir dir;
  const std::string out = (dir.path() / "out").string();
  fs::create_directories(out);
  const std::string spec_text = "name: t\nalgorithms: [ring]\nn: [4]\nsizes: [1MiB]\n";
  std::ofstream(out + "/checkpoint.journal") << spec_text;
  const auto journal = run({"run", out + "/checkpoint.journal", "--out", out, "--quiet", "--no-plot"});
  EXPECT_EQ(journal.code, 2);
  test::expect_contains(journal.err, "checkpoint journal");
  EXPECT_TRUE(fs::exists(out + "/checkpoint.journal"));
  EXPECT_FALSE(fs::exists(out + "/results.csv"));
  const std::string trace = "iteration,rank,arrival_s\n0,0,0\n0,1,0.001\n0,2,0\n0,3,0\n";
  std::ofstream(out + "/p.plot.log") << trace;
  std::ofstream(out + "/p.py") << "import sys\nsys.exit(1)\n";
  std::ofstream(out + "/spec.yaml") << spec_text << "arrival: [{model: trace, file: p.plot.log}]\nplot: p.py\n";
  const auto log = run({"run", out + "/spec.yaml", "--out", out, "--quiet"});
  EXPECT_EQ(log.code, 2);
  test::expect_contains(log.err, "writes its error log there");
  std::ifstream in(out + "/p.plot.log");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), trace);
}

// Calibrate and verify refuse what would not fit in memory before building it (--nranks 100000
// was killed by the kernel; verify -n 100000 or --elements 10^9 ran out of memory), and verify
// with nothing supported is an error, not "0 passed, 0 failed" and exit 0.
TEST(CliHardening, CalibrateAndVerifyRefuseRunsThatDoNotFit) {
  const auto cal = run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-8gpu-allreduce-nvidia-exemplar.txt", "--nranks", "100000",
                        "--no-plot"});
  EXPECT_EQ(cal.code, 2);
  test::expect_contains(cal.err, "a ring schedule on 100000 ranks needs about");
  test::expect_contains(cal.err, "--max-schedule-memory 4GiB");
  // The limit is the user's to raise (a real 16,384-rank log needs 8 GiB for a ring), up to the machine.
  const auto raised = run({"calibrate", COLLSIM_SOURCE_DIR "/tests/data/nccl-tests/h100-8gpu-allreduce-nvidia-exemplar.txt",
                           "--nranks", "100000", "--max-schedule-memory", "1TiB", "--no-plot"});
  EXPECT_EQ(raised.code, 2);
  test::expect_contains(raised.err, "--max-schedule-memory");
  const auto big = run({"verify", "-n", "2..100000", "-a", "ring"});
  EXPECT_EQ(big.code, 2);
  test::expect_contains(big.err, "ring at n = 100000 needs about");
  const auto elements = run({"verify", "-n", "8", "-a", "ring", "--elements", "100000000"});
  EXPECT_EQ(elements.code, 2);
  test::expect_contains(elements.err, "--elements 100000000 needs about");
  const auto none = run({"verify", "-n", "8", "-a", "hierarchical"});
  EXPECT_EQ(none.code, 2);
  test::expect_contains(none.err, "nothing was checked");
}

}  // namespace
}  // namespace collsim
