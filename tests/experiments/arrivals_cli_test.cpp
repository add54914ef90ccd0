// `collsim arrivals`, `--arrival-trace` of simulate and advise, and `model: trace` in specs.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <filesystem>
#include <string>
#include <vector>

#include "cli_test_support.hpp"
#include "collsim/experiments/spec.hpp"
#include "collsim/models/formats/arrival_yaml.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::json_field;
using test::run;

const std::string kSmall = std::string(COLLSIM_TEST_DATA_DIR) + "/arrivals/small.csv";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes `spec_text` to DIR/t.yaml and runs it into DIR/out; returns results.csv.
std::string run_spec(const test::TempDir& dir, const std::string& spec_text) {
  const std::string spec = (dir.path() / "t.yaml").string();
  {
    std::ofstream out(spec);
    out << spec_text;
  }
  const auto r = run({"run", spec, "--out", (dir.path() / "out").string(), "--quiet", "--no-plot"});
  EXPECT_EQ(r.code, 0) << r.err;
  return read((dir.path() / "out" / "results.csv").string());
}

// --skip-incomplete and --communicator reach the reader from arrivals, simulate and specs; alone
// they are refused.
TEST(ArrivalsCli, TraceReadingOptions) {
  const test::TempDir dir;
  const std::string trace = (dir.path() / "gaps.csv").string();
  std::ofstream(trace) << "iteration,rank,arrival_s\n0,0,0\n0,1,0.002\n1,0,0\n2,0,0.001\n2,1,0\n";
  const auto refused = run({"arrivals", trace});
  EXPECT_EQ(refused.code, 2);
  test::expect_contains(refused.err, "iteration 1 has no row for rank 1");
  test::expect_contains(refused.err, "--skip-incomplete");
  const auto summary = run({"arrivals", trace, "--skip-incomplete"});
  ASSERT_EQ(summary.code, 0) << summary.err;
  test::expect_contains(summary.out, "2 iterations of 2 ranks");
  const auto sim = run({"simulate", "-a", "ring", "--arrival-trace", trace, "--skip-incomplete", "-s", "1MiB", "--json"});
  ASSERT_EQ(sim.code, 0) << sim.err;
  const auto alone = run({"simulate", "-a", "ring", "-n", "4", "--skip-incomplete"});
  EXPECT_EQ(alone.code, 2);
  test::expect_contains(alone.err, "--skip-incomplete needs --arrival-trace FILE");
  const auto csv_comm = run({"arrivals", trace, "--communicator", "0x1", "--skip-incomplete"});
  EXPECT_EQ(csv_comm.code, 2);
  test::expect_contains(csv_comm.err, "is CSV");
  const auto csv_spec = run_spec(dir, fmt::format("name: t\nn: 2\nalgorithms: [ring]\nsizes: [1MiB]\ntopology: [nvswitch]\n"
                                                  "arrival: [{{label: gaps, model: trace, file: {}, skip_incomplete: true}}]\n",
                                                  trace));
  EXPECT_NE(csv_spec.find("gaps"), std::string::npos) << csv_spec;
}

// What --fit writes is given to --arrival as a file: inline, a long trace's fit is too long for
// one argument.
TEST(ArrivalsCli, ArrivalTakesTheFittedFile) {
  const test::TempDir dir;
  const std::string fit = (dir.path() / "fit.yaml").string();
  ASSERT_EQ(run({"arrivals", kSmall, "--fit", fit}).code, 0);
  const auto sim = run({"simulate", "-a", "ring", "-n", "4", "-s", "1MiB", "--arrival", fit, "--json"});
  ASSERT_EQ(sim.code, 0) << sim.err;
  const auto inline_yaml = run({"simulate", "-a", "ring", "-n", "4", "-s", "1MiB", "--arrival", read(fit), "--json"});
  ASSERT_EQ(inline_yaml.code, 0) << inline_yaml.err;
  EXPECT_EQ(json_field(sim.out, "time_s"), json_field(inline_yaml.out, "time_s"));
  const auto missing = run({"simulate", "-a", "ring", "-n", "4", "--arrival", (dir.path() / "none.yaml").string()});
  EXPECT_EQ(missing.code, 2);
  test::expect_contains(missing.err, "no such file");
  // A directory or a name without an extension is a path too, not "a scalar where a map belongs".
  const auto directory = run({"simulate", "-a", "ring", "-n", "4", "--arrival", dir.path().string()});
  EXPECT_EQ(directory.code, 2);
  test::expect_contains(directory.err, "is a directory");
  const auto typo = run({"simulate", "-a", "ring", "-n", "4", "--arrival", (dir.path() / "fit.yam").string()});
  EXPECT_EQ(typo.code, 2);
  test::expect_contains(typo.err, "no such file");
}

TEST(ArrivalsCli, SummaryOfTheHandMadeTrace) {
  const auto r = run({"arrivals", kSmall, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"spread\":{\"p50_s\":1,\"p90_s\":3,\"p99_s\":3,\"max_s\":3}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"late_histogram\":[2,3,0,0]"), std::string::npos) << r.out;
  // The last iteration, where all arrive together, names no last rank.
  EXPECT_NE(r.out.find("\"last_by_rank\":[1,0,1,2]"), std::string::npos) << r.out;
  EXPECT_DOUBLE_EQ(json_field(r.out, "persistence"), 1.0 / 3.0);
  EXPECT_DOUBLE_EQ(json_field(r.out, "chance_empirical"), 0.375);

  const auto text = run({"arrivals", kSmall});
  ASSERT_EQ(text.code, 0) << text.err;
  test::expect_contains(text.out, "5 iterations of 4 ranks");
  test::expect_contains(text.out, "persistence of the last rank: 0.333 of 3 consecutive pairs");

  // A 1.5 s floor leaves only rank 3 of iteration 1 (2 s late) late.
  const auto strict = run({"arrivals", kSmall, "--late-floor", "1.5s", "--json"});
  ASSERT_EQ(strict.code, 0) << strict.err;
  EXPECT_NE(strict.out.find("\"late_histogram\":[4,1,0,0]"), std::string::npos) << strict.out;
}

TEST(ArrivalsCli, FitWritesAModelThatLoadsBack) {
  test::TempDir dir;
  const std::string fit = (dir.path() / "fit.yaml").string();
  const auto r = run({"arrivals", kSmall, "--fit", fit});
  ASSERT_EQ(r.code, 0) << r.err;
  const ArrivalSpec spec = parse_arrival_yaml(YAML::LoadFile(fit), "arrival", 4u);
  ASSERT_EQ(spec.stragglers.size(), 1u);
  EXPECT_EQ(spec.stragglers[0].rank, 3u);
  EXPECT_DOUBLE_EQ(spec.persistence, 1.0 / 3.0);
  // And collsim samples it: advise with the file's text as --arrival.
  const auto advise = run({"advise", "-n", "4", "-s", "1MiB", "--arrival", read(fit), "--trials", "3",
                           "--algorithms", "ring,stragglar", "--json"});
  EXPECT_EQ(advise.code, 0) << advise.err;
}

TEST(ArrivalsCli, PlotWritesTheDelaysItDraws) {
  test::TempDir dir;
  const auto r = run({"arrivals", kSmall, "--plot", (dir.path() / "cdf.png").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string csv = read((dir.path() / "cdf_delays.csv").string());
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 21);  // header + 5 iterations x 4 ranks
  EXPECT_EQ(csv.rfind("iteration,rank,delay_s,late,last\n", 0), 0u);
  test::expect_contains(csv, "\n1,3,2,1,1\n");  // iteration 1: rank 3, 2 s late, late and last
  test::expect_contains(csv, "\n3,2,3,0,1\n");  // iteration 3: rank 2 last but not late
}

// An output named like the trace, or like another output, is refused before anything is
// written: --fit T.csv replaced the trace T.csv with the model, and --plot T.png replaced a
// trace named T_delays.csv with the plotted delays, both with exit code 0.
TEST(ArrivalsCli, OutputsThatWouldReplaceTheTraceOrEachOtherAreRefused) {
  namespace fs = std::filesystem;
  test::TempDir dir;
  const fs::path trace = dir.path() / "t_delays.csv";
  fs::copy_file(kSmall, trace);
  const std::string before = read(trace.string());
  auto r = run({"arrivals", trace.string(), "--fit", trace.string()});
  EXPECT_EQ(r.code, 2) << r.out;
  test::expect_contains(r.err, "arrivals: --fit '" + trace.string() + "' is the input trace");
  r = run({"arrivals", trace.string(), "--plot", (dir.path() / "t.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  test::expect_contains(r.err, "arrivals: --plot (writes t_delays.csv)");
  test::expect_contains(r.err, "is the input trace");
  EXPECT_EQ(read(trace.string()), before);
  r = run({"arrivals", kSmall, "--fit", (dir.path() / "p_delays.csv").string(), "--plot", (dir.path() / "p.png").string()});
  EXPECT_EQ(r.code, 2) << r.out;
  test::expect_contains(r.err, "is the --fit file");
  EXPECT_FALSE(fs::exists(dir.path() / "p_delays.csv"));
  // simulate --trace is written after the run, over whichever input it names.
  r = run({"simulate", "-a", "ring", "--arrival-trace", trace.string(), "--iteration", "1", "--trace", trace.string()});
  EXPECT_EQ(r.code, 2) << r.out;
  test::expect_contains(r.err, "simulate: --trace '" + trace.string() + "' is the --arrival-trace file");
  EXPECT_EQ(read(trace.string()), before);
}

TEST(ArrivalsCli, BadInputIsOneLineAndExitCode2) {
  const std::string data = COLLSIM_TEST_DATA_DIR;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"arrivals", data + "/arrivals"}, {"arrivals", data + "/arrivals/none.csv"},
        {"arrivals", kSmall, "-n", "8"}, {"arrivals", kSmall, "--late-k", "x"}, {"arrivals", kSmall, "--late-k", "-1"},
        {"arrivals"}, {"simulate", "-a", "ring", "--arrival-trace", kSmall, "--stragglers", "1:1ms"},
        {"simulate", "-a", "ring", "--arrival-trace", kSmall, "--delay", "1ms"},
        {"simulate", "-a", "ring", "-n", "4", "--iteration", "1"},
        {"simulate", "-a", "ring", "-n", "8", "--arrival-trace", kSmall},
        {"simulate", "-a", "ring", "--arrival-trace", kSmall, "--iteration", "9"},
        {"advise", "-s", "1MiB", "--arrival-trace", kSmall, "--delay", "1ms"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  const auto n = run({"simulate", "-a", "ring", "-n", "8", "--arrival-trace", kSmall});
  test::expect_contains(n.err, "group has 4 ranks");
  test::expect_contains(n.err, "n = 8");
}

TEST(ArrivalsCli, SimulateReportsEveryIterationAndTheMean) {
  const auto r = run({"simulate", "-a", "ring", "--arrival-trace", kSmall, "--size", "1MiB", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_field(r.out, "n"), 4);
  // Delays 1, 2, .5, 3, 0 s: the mean arrival spread is 1.3 s.
  EXPECT_NEAR(json_field(r.out, "mean_delay_s"), 1.3, 1e-9);
  // Ring under barrier start: the same time after the last arrival every iteration.
  const auto one = run({"simulate", "-a", "ring", "-n", "4", "--size", "1MiB", "--json"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NEAR(json_field(r.out, "mean_time_after_last_arrival_s"), json_field(one.out, "time_after_last_arrival_s"),
              1e-15);
  EXPECT_NEAR(json_field(r.out, "mean_time_s"), 1.3 + json_field(one.out, "time_s"), 1e-9);
  EXPECT_NE(r.out.find("{\"iteration\":3,\"last_rank\":2,\"delay_s\":3,"), std::string::npos) << r.out;

  const auto k = run({"simulate", "-a", "ring", "--arrival-trace", kSmall, "--iteration", "1", "--json"});
  ASSERT_EQ(k.code, 0) << k.err;
  EXPECT_NEAR(json_field(k.out, "delay_s"), 2.0, 1e-9);
}

// One iteration run alone takes the time it takes inside the whole trace: the schedule is built
// for the rank most often last in the whole trace (what profiling names), not for the
// iteration's own last rank, which is known only after the fact. small.csv: rank 3 is most often
// last; iterations 2 and 3 end with ranks 0 and 2, and a schedule built for them was faster.
TEST(ArrivalsCli, OneIterationIsBuiltForTheWholeTracesStraggler) {
  // `extra` arguments for both runs; `field` compared per iteration.
  const auto each_iteration_alone_matches = [](const std::vector<std::string>& extra, const std::string& field) {
    std::vector<std::string> whole = {"simulate", "-a", "stragglar", "--arrival-trace", kSmall, "--size", "1MiB", "--json"};
    whole.insert(whole.end(), extra.begin(), extra.end());
    const auto all = run(whole);
    ASSERT_EQ(all.code, 0) << all.err;
    EXPECT_EQ(json_field(all.out, "expected_straggler"), 3);
    for (int k = 0; k < 5; ++k) {
      const auto at = all.out.find(fmt::format("{{\"iteration\":{},", k));
      ASSERT_NE(at, std::string::npos) << k;
      std::vector<std::string> alone = whole;
      alone.insert(alone.end(), {"--iteration", std::to_string(k)});
      const auto one = run(alone);
      ASSERT_EQ(one.code, 0) << one.err;
      const double expected = json_field(all.out.substr(at), field);
      EXPECT_NEAR(json_field(one.out, field), expected, 1e-12 * expected) << "iteration " << k << " " << extra.size();
    }
  };
  each_iteration_alone_matches({}, "time_after_last_arrival_s");
  // With jitter too: iteration K alone draws the jitter of its place in the whole trace.
  each_iteration_alone_matches({"--jitter", "uniform:min=0,max=200us"}, "time_s");
}

// advise on an iteration whose last rank is not the trace's usual one: StragglAR's schedule is
// built for rank 3 while rank 0 is late, so it loses although the delay is far above its critical
// delay, and the advice says why instead of "needs a delay above 1 us; the mean delay is 500 ms".
TEST(ArrivalsCli, AdviseOnAnIterationWithAnotherLateRankSaysWhyTheScheduleLoses) {
  const auto r = run({"advise", "-s", "1MiB", "--arrival-trace", kSmall, "--iteration", "2", "--algorithms",
                      "ring,stragglar", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  test::expect_contains(r.out, "\"best\":\"ring\"");
  test::expect_contains(r.out, "another GPU was last in 100% of the trials");
}

// `iteration: K` in a spec: the same schedule rule as simulate --iteration (the whole trace's
// straggler), so iteration 2 takes the time it takes inside the trace.
TEST(ArrivalsSpec, OneIterationInASpecIsBuiltForTheWholeTracesStraggler) {
  test::TempDir dir;
  const std::string csv = run_spec(dir, fmt::format("name: t\nalgorithms: [stragglar]\nn: 4\nsizes: [1MiB]\n"
                                                    "arrival: [{{label: it2, model: trace, file: {}, iteration: 2}}]\n",
                                                    kSmall));
  const auto all = run({"simulate", "-a", "stragglar", "--arrival-trace", kSmall, "--size", "1MiB", "--json"});
  ASSERT_EQ(all.code, 0) << all.err;
  const auto at = all.out.find("{\"iteration\":2,");
  ASSERT_NE(at, std::string::npos);
  const double expected = json_field(all.out.substr(at), "time_s");
  // results.csv: a header, then one row (one trial); time_s found by its column name.
  std::istringstream results(csv);
  std::string header, row;
  ASSERT_TRUE(std::getline(results, header) && std::getline(results, row));
  const auto split = [](const std::string& text) {
    std::vector<std::string> cells;
    std::istringstream in(text);
    for (std::string cell; std::getline(in, cell, ',');) cells.push_back(cell);
    return cells;
  };
  const std::vector<std::string> names = split(header), values = split(row);
  const auto column = static_cast<std::size_t>(std::find(names.begin(), names.end(), "time_s") - names.begin());
  ASSERT_LT(column, values.size());
  EXPECT_NEAR(std::stod(values[column]), expected, 1e-12 * expected);
}

TEST(ArrivalsCli, AdviseRunsOneTrialPerIteration) {
  const auto r = run({"advise", "-s", "1MiB", "--arrival-trace", kSmall, "--algorithms", "ring,stragglar", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(json_field(r.out, "trials"), 5);
  EXPECT_NEAR(json_field(r.out, "mean_delay_s"), 1.3, 1e-9);
}

TEST(ArrivalsSpec, TrialsDefaultToTheIterationCount) {
  const std::string spec_text = fmt::format(
      "name: t\nalgorithms: [ring]\nn: 4\nsizes: [1MiB]\narrival: [{{label: real, model: trace, file: {}}}]\n", kSmall);
  const ExperimentSpec spec = parse_spec(spec_text, "t.yaml", ".");
  EXPECT_EQ(spec.trials, 5u);
  EXPECT_EQ(spec.arrivals.at(0).label, "real");
  EXPECT_EQ(parse_spec(spec_text + "trials: 3\n", "t.yaml", ".").trials, 3u);
  // Traces of 5 and 2 iterations: 10 trials, each iteration of each trace equally often (with the
  // longest count, 5, the 2-iteration trace ran its first iteration 3 times and its second twice).
  const test::TempDir dir;
  const std::string two = (dir.path() / "two.csv").string();
  std::ofstream(two) << "iteration,rank,arrival_s\n0,0,0\n0,1,0\n0,2,0\n0,3,1\n1,0,0\n1,1,0\n1,2,0\n1,3,0\n";
  const std::string both = fmt::format("name: t\nalgorithms: [ring]\nn: 4\nsizes: [1MiB]\narrival: [{{label: a, model: "
                                       "trace, file: {}}}, {{label: b, model: trace, file: {}}}]\n",
                                       kSmall, two);
  EXPECT_EQ(parse_spec(both, "t.yaml", ".").trials, 10u);
  test::expect_config_error(
      [&] {
        ExperimentSpec wrong_n = parse_spec(
            fmt::format("name: t\nalgorithms: [ring]\nn: 8\narrival: {{model: trace, file: {}}}\n", kSmall), "t.yaml", ".");
        validate(wrong_n);
      },
      {"group of 4 ranks but n = 8"});
  test::expect_config_error([&] { parse_spec("name: t\nalgorithms: [ring]\nn: 4\narrival: {model: trace, file: no.csv}\n", "t.yaml", "."); },
                            {"t.yaml", "arrival.file", "line 4", "no.csv"});
}

// Without a label, a trace's model is labelled by its path; a path holding a newline would have
// split rows of results.csv and reached the terminal through the summary, so it needs a label.
TEST(ArrivalsSpec, ADefaultLabelWithAControlCharacterNeedsALabel) {
  const test::TempDir dir;
  const std::string odd = (dir.path() / "two\nlines.csv").string();
  std::ofstream(odd) << "iteration,rank,arrival_s\n0,0,0\n0,1,0\n0,2,0\n0,3,1\n";
  // The file name is quoted in YAML with its newline escaped.
  const std::string escaped = (dir.path() / "two").string() + "\\nlines.csv";
  test::expect_config_error(
      [&] {
        parse_spec(fmt::format("name: t\nalgorithms: [ring]\nn: 4\narrival: {{model: trace, file: \"{}\"}}\n", escaped),
                   "t.yaml", ".");
      },
      {"t.yaml", "arrival (line 4)", "holds a control character", "give it a 'label:'"});
  const ExperimentSpec labelled = parse_spec(
      fmt::format("name: t\nalgorithms: [ring]\nn: 4\narrival: {{label: odd, model: trace, file: \"{}\"}}\n", escaped),
      "t.yaml", ".");
  EXPECT_EQ(labelled.arrivals.at(0).label, "odd");
}

TEST(ArrivalsSpec, RunReplaysIterationTModCount) {
  test::TempDir dir;
  const std::string results = run_spec(dir, fmt::format("name: t\nalgorithms: [ring]\nn: 4\nsizes: [1MiB]\ntrials: 7\n"
                                                        "arrival: [{{label: real, model: trace, file: {}}}]\n",
                                                        kSmall));
  // Trial 6 replays iteration index 1 (6 mod 5), whose last rank is 3, 2 s late.
  std::istringstream lines(results);
  std::string line, header;
  std::getline(lines, header);
  int trials = 0;
  while (std::getline(lines, line)) {
    if (line.find(",real,") == std::string::npos) continue;
    ++trials;
    if (line.find(",6,") != std::string::npos) test::expect_contains(line, ",2,6,");
  }
  EXPECT_EQ(trials, 7);
}

}  // namespace
}  // namespace collsim
