#include "collsim/models/formats/model_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>

#include "collsim/models/error.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::expect_contains;

ModelFile sample() {
  ModelFile m;
  m.name = "h100 \"test\"";
  m.link.latency_s = 6.568123456789e-6;
  m.link.bandwidth_Bps = 322.2e9 / 3.0;
  m.link.gamma_s_per_byte = 5.6e-15;
  FittedRegime a, b;
  a.link.latency_s = 6.1e-6;
  a.link.bandwidth_Bps = 89e9;
  a.min_size_bytes = 64;
  a.max_size_bytes = 65536;
  a.rows = 22;
  a.gamma_fitted = true;
  b.protocol = Protocol::Simple;
  b.link.latency_s = 7.1e-6;
  b.link.bandwidth_Bps = 299e9;
  b.min_size_bytes = 131072;
  b.max_size_bytes = 8589934592.0;
  b.rows = 34;
  m.regimes = {a, b};
  m.provenance.tool = "collsim calibrate";
  m.provenance.command = "collsim calibrate a.txt --out 'x y.yaml'";
  m.provenance.algorithm = "ring";
  m.provenance.method = "wls: 'relative', weights 1/t";
  m.provenance.time_column = "min";
  m.provenance.fit_on = {"reduce_scatter", "all_gather"};
  m.provenance.sources = {{"dir with space/rs,log.txt", "nccl-tests", "reduce_scatter", 4, 28, "0123456789abcdef"}};
  m.median_abs_rel_error = 0.056;
  m.max_abs_rel_error = 0.2;
  m.fit_rows = {{"rs.txt", "reduce_scatter", "ring", 4, 64, 21.49e-6, 22.26e-6, 22.26 / 21.49 - 1, "fit", 0},
                {"ar.txt", "all_reduce", "ring", 8, 17179869184.0, 62.636e-3, 92.0e-3, 0.4688, "predict", 1}};
  return m;
}

std::string error_of(const std::string& yaml) {
  try {
    parse_model_file(yaml, "m.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted:\n" << yaml;
  return {};
}

std::filesystem::path temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / ("collsim_model_file_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// One thread driving G GPUs: each regime's launch grows by G-1 times its own launch per extra
// GPU (a regime without a launch of its own follows the execution default, which takes the first
// regime's); G = 1 changes nothing; a model without regimes has no such term and is refused.
TEST(ModelFile, DrivenByOneThreadAddsTheLaunchPerExtraGpu) {
  ModelFile m = sample();
  m.execution.launch_s = 20e-6;
  m.regimes[0].launch_s = 10e-6;
  m.regimes[0].launch_fitted = true;
  m.regimes[0].launch_per_extra_gpu_s = 2e-6;
  m.regimes[1].launch_s = 0;  // none of its own: the execution default
  m.regimes[1].launch_per_extra_gpu_s = 3e-6;
  const ModelFile eight = driven_by_one_thread(m, 8);
  EXPECT_DOUBLE_EQ(eight.regimes[0].launch_s, 10e-6 + 7 * 2e-6);
  EXPECT_DOUBLE_EQ(eight.execution.launch_s, 20e-6 + 7 * 2e-6);
  EXPECT_DOUBLE_EQ(eight.execution_for_size(64).launch_s, 24e-6);
  EXPECT_DOUBLE_EQ(eight.execution_for_size(1e9).launch_s, 34e-6);  // the default's, adjusted
  EXPECT_DOUBLE_EQ(driven_by_one_thread(m, 1).execution_for_size(64).launch_s, 10e-6);
  expect_contains([&] {
    try {
      driven_by_one_thread(m, 0);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  }(), "0 must be at least 1");
  ModelFile flat = sample();
  flat.regimes.clear();
  EXPECT_THROW(driven_by_one_thread(flat, 2), ConfigError);
  EXPECT_NO_THROW(driven_by_one_thread(flat, 1));
}

TEST(ModelFile, RoundTripsExactly) {
  const ModelFile m = sample();
  const auto dir = temp_dir();
  const auto path = dir / "models" / "h100.yaml";
  // Writers never create directories (issue 10 §5.4): a missing one is an error naming it.
  try {
    write_model_file(m, path);
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "models"));
  std::filesystem::create_directories(dir / "models");
  write_model_file(m, path);
  const ModelFile r = read_model_file(path);
  EXPECT_EQ(r.name, m.name);
  EXPECT_EQ(r.link.latency_s, m.link.latency_s);
  EXPECT_EQ(r.link.bandwidth_Bps, m.link.bandwidth_Bps);
  EXPECT_EQ(r.link.gamma_s_per_byte, m.link.gamma_s_per_byte);
  ASSERT_EQ(r.regimes.size(), 2u);
  for (std::size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(r.regimes[k].link.latency_s, m.regimes[k].link.latency_s);
    EXPECT_EQ(r.regimes[k].link.bandwidth_Bps, m.regimes[k].link.bandwidth_Bps);
    EXPECT_EQ(r.regimes[k].min_size_bytes, m.regimes[k].min_size_bytes);
    EXPECT_EQ(r.regimes[k].max_size_bytes, m.regimes[k].max_size_bytes);
    EXPECT_EQ(r.regimes[k].rows, m.regimes[k].rows);
    EXPECT_EQ(r.regimes[k].gamma_fitted, m.regimes[k].gamma_fitted);
  }
  EXPECT_EQ(r.provenance.method, m.provenance.method);
  EXPECT_EQ(r.provenance.command, m.provenance.command);
  EXPECT_EQ(r.provenance.fit_on, m.provenance.fit_on);
  ASSERT_EQ(r.provenance.sources.size(), 1u);
  EXPECT_EQ(r.provenance.sources[0].file, "dir with space/rs,log.txt");
  EXPECT_EQ(r.provenance.sources[0].fnv1a64, "0123456789abcdef");
  EXPECT_EQ(r.provenance.sources[0].rows, 28u);
  EXPECT_EQ(r.median_abs_rel_error, m.median_abs_rel_error);
  ASSERT_EQ(r.fit_rows.size(), 2u);
  EXPECT_EQ(r.fit_rows[1].size_bytes, 17179869184.0);
  EXPECT_EQ(r.fit_rows[0].rel_error, m.fit_rows[0].rel_error);
  EXPECT_EQ(r.fit_rows[1].role, "predict");
  EXPECT_EQ(r.fit_rows[1].regime, 1u);
  // Deterministic text: writing what was read gives the same bytes.
  EXPECT_EQ(model_file_to_yaml(r), model_file_to_yaml(m));
  // No temporary file is left next to the model.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path.parent_path())) ++entries;
  EXPECT_EQ(entries, 1u);
  std::filesystem::remove_all(dir);
}

TEST(ModelFile, MinimalHandWrittenFileWithUnits) {
  const ModelFile m = parse_model_file(
      "format: collsim-link-model\nversion: 1\nlink: {latency_s: 3us, bandwidth_Bps: 450GBps}\n", "m.yaml");
  EXPECT_DOUBLE_EQ(m.link.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(m.link.bandwidth_Bps, 450e9);
  EXPECT_EQ(m.link.gamma_s_per_byte, 0.0);
  EXPECT_TRUE(m.regimes.empty());
  EXPECT_DOUBLE_EQ(m.link_for_size(1e9).latency_s, 3e-6);
}

TEST(ModelFile, LinkForSizeFollowsRegimeRanges) {
  const ModelFile m = sample();
  EXPECT_EQ(m.link_for_size(8).latency_s, 6.1e-6);
  EXPECT_EQ(m.link_for_size(65536).latency_s, 6.1e-6);
  EXPECT_EQ(m.link_for_size(90000).latency_s, 6.1e-6);   // below sqrt(65536 * 131072) ~ 92682
  EXPECT_EQ(m.link_for_size(95000).latency_s, 7.1e-6);
  EXPECT_EQ(m.link_for_size(1e12).latency_s, 7.1e-6);
}

TEST(ModelFile, WriterRejectsBadParameters) {
  ModelFile m = sample();
  m.link.bandwidth_Bps = std::numeric_limits<double>::infinity();
  EXPECT_THROW(model_file_to_yaml(m), ConfigError);
  m = sample();
  m.regimes[1].min_size_bytes = 100;
  EXPECT_THROW(model_file_to_yaml(m), ConfigError);
  m = sample();
  m.regimes[1].protocol = m.regimes[0].protocol;  // a file no reader would take back
  EXPECT_THROW(model_file_to_yaml(m), ConfigError);
}

constexpr const char* kHead = "format: collsim-link-model\nversion: 1\n";

TEST(ModelFile, BadFilesNameKeyAndLine) {
  const std::string head = kHead;
  const std::string link = "link: {latency_s: 3e-6, bandwidth_Bps: 4.5e11}\n";
  expect_contains(error_of(""), "m.yaml:1: the model file is empty");
  expect_contains(error_of(head + link + "colour: blue\n"), "m.yaml:4: unknown key 'colour' in '<top>'");
  expect_contains(error_of(head + "link:\n  latency_s: 3e-6\n  bandwidth_Bps: 4.5e11\n  jitter_s: 1e-6\n"),
                  "m.yaml:6: unknown key 'jitter_s' in 'link' (known: latency_s, bandwidth_Bps, gamma_s_per_byte)");
  expect_contains(error_of(head), "'<top>' has no key 'link'");
  expect_contains(error_of("version: 1\n" + link), "'<top>' has no key 'format'");
  expect_contains(error_of("format: collsim-model\nversion: 1\n" + link), "m.yaml:1: 'format' = 'collsim-model' must be 'collsim-link-model'");
  expect_contains(error_of("format: collsim-link-model\nversion: 3\n" + link), "m.yaml:2: 'version' = 3 is not supported");
  expect_contains(error_of(head + "link:\n  latency_s: -3us\n  bandwidth_Bps: 4.5e11\n"), "m.yaml:4: 'link.latency_s'");
  expect_contains(error_of(head + "link:\n  latency_s: 3us\n  bandwidth_Bps: 0\n"), "m.yaml:5: 'link.bandwidth_Bps'");
  expect_contains(error_of(head + "link:\n  latency_s: 3us\n  bandwidth_Bps: fast\n"), "'fast' is not a bandwidth");
  expect_contains(error_of(head + "link:\n  latency_s: 3us\n"), "m.yaml:4: 'link' has no key 'bandwidth_Bps'");
  expect_contains(error_of(head + "link:\n  latency_s: 3us\n  bandwidth_Bps: 1e9\n  gamma_s_per_byte: -1e-12\n"),
                  "m.yaml:6: 'link.gamma_s_per_byte' = -1e-12 must not be negative");
  // The flags' ranges: 1e300 s/B ran and printed a 9e305 s AllReduce.
  expect_contains(error_of(head + "link:\n  latency_s: 3us\n  bandwidth_Bps: 1e9\n  gamma_s_per_byte: 1e300\n"),
                  "m.yaml:6: 'link.gamma_s_per_byte' = 1e+300 must be in 0..0.001");
  expect_contains(error_of(head + "link: [1, 2]\n"), "m.yaml:3: 'link' must be a mapping");
  expect_contains(error_of(head + link + "regimes: []\n"), "'regimes' must be a non-empty list");
  expect_contains(error_of(head + link +
                           "regimes:\n"
                           "  - {min_size_bytes: 8, max_size_bytes: 4096, latency_s: 1e-6, bandwidth_Bps: 1e10}\n"
                           "  - {min_size_bytes: 2048, max_size_bytes: 1e9, latency_s: 1e-5, bandwidth_Bps: 3e11}\n"),
                  "m.yaml:6: 'regimes[1].min_size_bytes' = 2048 must be above regimes[0].max_size_bytes = 4096");
  expect_contains(error_of(head + link +
                           "regimes:\n  - {min_size_bytes: 8, max_size_bytes: 4, latency_s: 1e-6, bandwidth_Bps: 1e10}\n"),
                  "max_size_bytes 4 is below min_size_bytes 8");
  expect_contains(
      error_of(head + link +
               "regimes:\n  - {min_size_bytes: 1.5, max_size_bytes: 4096, latency_s: 1e-6, bandwidth_Bps: 1e10}\n"),
      "m.yaml:5: 'regimes[0].min_size_bytes' = 1.5 is not a whole number of bytes");
  expect_contains(error_of(head + link + "regimes:\n  - {min_size_bytes: 8, max_size_bytes: 16, latency_s: 1e-6}\n"),
                  "m.yaml:5: 'regimes[0]' has no key 'bandwidth_Bps'");
  // Two regimes for one protocol left a time under that protocol to their order.
  const std::string v2 = "format: collsim-link-model\nversion: 2\n" + link;
  const std::string two_ll =
      "regimes:\n"
      "  - {protocol: LL, min_size_bytes: 8, max_size_bytes: 4096, latency_s: 1e-6, bandwidth_Bps: 1e10}\n"
      "  - {protocol: LL, min_size_bytes: 8192, max_size_bytes: 1e9, latency_s: 1e-5, bandwidth_Bps: 3e11}\n";
  expect_contains(error_of(v2 + two_ll),
                  "m.yaml:6: 'regimes[1].protocol' = LL is also regimes[0]'s: each protocol has one regime");
  std::string ll_simple = two_ll;
  ll_simple.replace(ll_simple.rfind("LL"), 2, "Simple");
  EXPECT_EQ(parse_model_file(v2 + ll_simple, "m.yaml").regimes.size(), 2u);
  // A regime that names no protocol is LL: two of them are the same clash.
  const std::string unnamed =
      "regimes:\n"
      "  - {min_size_bytes: 8, max_size_bytes: 4096, latency_s: 1e-6, bandwidth_Bps: 1e10}\n"
      "  - {protocol: LL, min_size_bytes: 8192, max_size_bytes: 1e9, latency_s: 1e-5, bandwidth_Bps: 3e11}\n";
  expect_contains(error_of(v2 + unnamed), "m.yaml:6: 'regimes[1].protocol' = LL is also regimes[0]'s");
  std::string none_named = unnamed;
  none_named.erase(none_named.find("protocol: LL, "), std::string("protocol: LL, ").size());
  expect_contains(error_of(v2 + none_named), "m.yaml:6: 'regimes[1].protocol' = LL (the default) is also regimes[0]'s");
  // Version 1 regimes are size ranges with no protocol, and load as they always did.
  EXPECT_EQ(parse_model_file(head + link + none_named, "m.yaml").regimes.size(), 2u);
  expect_contains(error_of(head + link + "fit:\n  rows:\n    - {source: a, collective: all_reduce, algorithm: ring, n: 8, "
                                         "size_bytes: 8, measured_s: 1e-5, predicted_s: 1e-5, rel_error: 0, role: guess}\n"),
                  "m.yaml:6: 'fit.rows[0].role' = 'guess' must be fit or predict");
  expect_contains(error_of(head + link + "fit:\n  rows:\n    - {source: a, collective: all_reduce, algorithm: ring, n: -8, "
                                         "size_bytes: 8, measured_s: 1e-5, predicted_s: 1e-5, rel_error: 0, role: fit}\n"),
                  "'fit.rows[0].n' = '-8' is not a non-negative integer");
  expect_contains(error_of(head + link + "fit:\n  rows:\n    - {source: a, collective: all_reduce, algorithm: ring, n: 4294967298, "
                                         "size_bytes: 8, measured_s: 1e-5, predicted_s: 1e-5, rel_error: 0, role: fit}\n"),
                  "m.yaml:6: 'fit.rows[0].n' = 4294967298 is too large");
  expect_contains(error_of(head + link + "provenance:\n  sources:\n    - {file: a, n: 4294967296}\n"),
                  "'provenance.sources[0].n' = 4294967296 is too large");
  expect_contains(error_of(head + link + "provenance:\n  sources:\n    - {file: a, colour: red}\n"),
                  "m.yaml:6: unknown key 'colour' in 'provenance.sources[0]'");
  expect_contains(error_of(head + link + "fit: {median_abs_rel_error: lots}\n"),
                  "'fit.median_abs_rel_error' = 'lots' is not a finite number");
  expect_contains(error_of(head + "link: {latency_s: 3us, bandwidth_Bps: [1}\n"), "m.yaml:3: YAML syntax error");
  expect_contains(error_of(head + "link: " + std::string(600, '[') + std::string(600, ']') + "\n"), "m.yaml:3: YAML syntax error: the document nests too deeply");
}

// A key given twice, a second document and a key that is not a name are refused by line: the
// reader saw only the first of each, so a second 'link' or a second model was ignored unseen.
TEST(ModelFile, RepeatedKeysSecondDocumentsAndNonScalarKeysAreRefused) {
  const std::string head = kHead;
  const std::string link = "link: {latency_s: 3e-6, bandwidth_Bps: 4.5e11}\n";
  expect_contains(error_of(head + link + "link: {latency_s: 1, bandwidth_Bps: 1e3}\n"), "m.yaml:4: key 'link' is given twice");
  expect_contains(error_of(head + "link: {latency_s: 3e-6, latency_s: 1, bandwidth_Bps: 4.5e11}\n"),
                  "m.yaml:3: key 'link.latency_s' is given twice");
  expect_contains(error_of(head + link + "---\n" + head + link), "m.yaml:5: a second YAML document starts here");
  EXPECT_NO_THROW(parse_model_file(head + link + "---\n", "m.yaml"));
  expect_contains(error_of(head + link + "[a]: 1\n"), "m.yaml:4: a key of '<top>' is a list; keys are plain names");
}

// An empty value (`key:` and nothing) is reported on its key's line, not where yaml-cpp marks
// the null (the next token's line).
TEST(ModelFile, EmptyValueNamesItsKeysLine) {
  const std::string head = kHead;
  expect_contains(error_of(head + "link:\n  latency_s:\n  bandwidth_Bps: 1e9\n"), "m.yaml:4: 'link.latency_s' must be a scalar");
  expect_contains(error_of(head + "link:\n  latency_s: 3us\n  bandwidth_Bps: 1e9\n  gamma_s_per_byte:\n\nname: x\n"),
                  "m.yaml:6: 'link.gamma_s_per_byte' must be a scalar");
}

// Version 2: execution defaults, the origin of each term, and per-regime protocol and launch,
// all round-tripped; execution_for_size takes the launch of the size's regime.
TEST(ModelFile, Version2ExecutionTermsAndLaunchRoundTrip) {
  ModelFile m = sample();
  m.has_execution = true;
  m.execution = ExecutionCosts{ExecutionStyle::P2pRounds, 17.5e-6};
  m.terms = {{"launch_s", "fitted", ""}, {"latency_s", "prior", "NCCL tuning.cc, \"quoted\""}};
  m.regimes[0].protocol = Protocol::LL;
  m.regimes[0].launch_s = 16e-6;
  m.regimes[0].launch_fitted = true;
  m.regimes[0].latency_fitted = false;
  m.regimes[1].protocol = Protocol::Simple;
  m.regimes[1].launch_s = 16e-6;
  m.regimes[1].launch_fitted = true;
  const std::string text = model_file_to_yaml(m);
  expect_contains(text, "version: 2");
  const ModelFile back = parse_model_file(text, "m.yaml");
  EXPECT_TRUE(back.has_execution);
  EXPECT_EQ(back.execution.style, ExecutionStyle::P2pRounds);
  EXPECT_EQ(back.execution.launch_s, 17.5e-6);
  ASSERT_EQ(back.terms.size(), 2u);
  EXPECT_EQ(back.terms[1].origin, "prior");
  EXPECT_EQ(back.terms[1].source, "NCCL tuning.cc, \"quoted\"");
  EXPECT_EQ(back.regimes[1].protocol, Protocol::Simple);
  EXPECT_FALSE(back.regimes[0].latency_fitted);
  EXPECT_EQ(back.execution_for_size(64).launch_s, 16e-6);
  EXPECT_EQ(back.execution_for_size(64).style, ExecutionStyle::P2pRounds);
  EXPECT_EQ(model_file_to_yaml(back), text);
}

// Old files (version 1: link and regimes only) still load, with no launch overhead; their
// schema stays closed (no version-2 keys).
TEST(ModelFile, Version1FilesStillLoad) {
  const std::string v1 =
      "format: collsim-link-model\nversion: 1\nlink: {latency_s: 3us, bandwidth_Bps: 450GiBps}\n"
      "regimes:\n  - {min_size_bytes: 8, max_size_bytes: 64, latency_s: 5e-6, bandwidth_Bps: 1e10, gamma_s_per_byte: 0}\n";
  const ModelFile m = parse_model_file(v1, "old.yaml");
  EXPECT_FALSE(m.has_execution);
  EXPECT_TRUE(m.terms.empty());
  EXPECT_EQ(m.execution_for_size(8).launch_s, 0.0);
  EXPECT_EQ(m.execution_for_size(8).style, ExecutionStyle::Fused);
  expect_contains(error_of("format: collsim-link-model\nversion: 1\nexecution: {style: fused}\n"
                           "link: {latency_s: 3us, bandwidth_Bps: 450GiBps}\n"),
                  "unknown key 'execution'");
}

TEST(ModelFile, Version2BadExecutionAndTerms) {
  const std::string head = "format: collsim-link-model\nversion: 2\nlink: {latency_s: 3us, bandwidth_Bps: 450GiBps}\n";
  expect_contains(error_of(head + "execution: {style: async}\n"), "unknown execution style 'async'");
  expect_contains(error_of(head + "execution: {launch_s: -3us}\n"), "execution.launch_s");
  expect_contains(error_of(head + "terms:\n  launch_s: {origin: guessed}\n"), "must be fitted or prior");
  expect_contains(error_of(head + "terms:\n  launch_s: {origin: prior}\n"), "a prior names its source");
  expect_contains(error_of(head + "terms:\n  beta: {origin: fitted}\n"), "unknown key 'beta'");
  expect_contains(error_of(head + "regimes:\n  - {protocol: LL256, min_size_bytes: 8, max_size_bytes: 64, latency_s: 1e-6, "
                                  "bandwidth_Bps: 1e9}\n"),
                  "is not a protocol");
}

TEST(ModelFile, MissingFile) {
  EXPECT_THROW(read_model_file("/nonexistent/dir/model.yaml"), ConfigError);
}

TEST(ModelFile, NameDefaultsToFileStem) {
  const auto dir = temp_dir();
  const auto path = dir / "my_box.yaml";
  std::ofstream(path) << kHead << "link: {latency_s: 3e-6, bandwidth_Bps: 4.5e11}\n";
  EXPECT_EQ(read_model_file(path).name, "my_box");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace collsim
