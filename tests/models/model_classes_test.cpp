// Link classes: the topology's class labels, set_link_class, per-class model files and
// apply_model, and the per-class fit on hand-made coefficients.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collsim/models/calibration.hpp"
#include "collsim/models/error.hpp"
#include "collsim/models/formats/model_file.hpp"
#include "collsim/models/topology.hpp"
#include "test_support.hpp"

namespace collsim {
namespace {

using test::error_of;
using test::expect_contains;

const std::string kHeader = "format: collsim-link-model\nversion: 1\n";

TEST(LinkClasses, EveryKindLabelsItsLinks) {
  for (const Topology& t : {make_nvswitch(4, LinkModel{}), make_full_mesh(4, LinkModel{}), make_dgx1(8, LinkModel{})}) {
    ASSERT_EQ(t.link_classes.size(), 1u) << t.name;
    EXPECT_EQ(t.link_classes[0].name, "nvlink");
    for (const auto& l : t.links) {
      EXPECT_EQ(l.link_class, 0u);
      EXPECT_DOUBLE_EQ(l.latency_s, l.latency_share * t.link_classes[0].latency_s) << l.name;
      EXPECT_DOUBLE_EQ(l.bandwidth_Bps, l.bandwidth_multiple * t.link_classes[0].bandwidth_Bps) << l.name;
    }
  }
  ClusterSpec spec;
  spec.gpus_per_node = 4;
  spec.nodes_per_leaf = 1;
  const Topology c = make_cluster(16, spec);
  ASSERT_EQ(c.link_classes.size(), 2u);
  EXPECT_EQ(c.link_classes[1].name, "network");
  for (const auto& l : c.links) {
    const auto& cls = c.link_classes.at(l.link_class);
    EXPECT_DOUBLE_EQ(l.latency_s, l.latency_share * cls.latency_s) << l.name;
    EXPECT_NEAR(l.bandwidth_Bps / (l.bandwidth_multiple * cls.bandwidth_Bps), 1.0, 1e-15) << l.name;
    EXPECT_EQ(l.link_class, l.name.find("nvl") != std::string::npos ? 0u : 1u) << l.name;
  }
  // Route latencies per class add up to the class alpha (intra-node NVLink, inter-node network).
  EXPECT_DOUBLE_EQ(c.route_latency_s(0, 1), spec.nvlink_latency_s);
  EXPECT_DOUBLE_EQ(c.route_latency_s(0, 9), spec.network_latency_s);
}

TEST(LinkClasses, SetLinkClassRescalesOnlyThatClass) {
  Topology c = make_cluster(16, ClusterSpec{});
  const double nvl_before = c.links[0].bandwidth_Bps;
  c.set_link_class(*c.find_link_class("network"), 20e-6, 25e9);
  EXPECT_DOUBLE_EQ(c.route_latency_s(0, 8), 20e-6);
  EXPECT_DOUBLE_EQ(c.route_latency_s(0, 1), ClusterSpec{}.nvlink_latency_s);
  EXPECT_DOUBLE_EQ(c.links[0].bandwidth_Bps, nvl_before);
  EXPECT_DOUBLE_EQ(c.links[2 * 16].bandwidth_Bps, 25e9);    // a NIC
  EXPECT_DOUBLE_EQ(c.links[2 * 16].latency_s, 10e-6);       // half of the end-to-end alpha
  EXPECT_DOUBLE_EQ(c.links.back().bandwidth_Bps, 32 * 25e9);  // the spine bundle of a 32-GPU leaf
  EXPECT_DOUBLE_EQ(c.cluster.nic_bandwidth_Bps, 25e9);
  EXPECT_DOUBLE_EQ(c.link.latency_s, 20e-6);
  EXPECT_FALSE(c.find_link_class("pcie").has_value());
  EXPECT_THROW(c.set_link_class(2, 1e-6, 1e9), ConfigError);
  EXPECT_THROW(c.set_link_class(0, -1e-6, 1e9), ConfigError);
  EXPECT_THROW(c.set_link_class(0, 1e-6, 0), ConfigError);
  Topology bad = make_nvswitch(2, LinkModel{});
  bad.links[0].link_class = 3;
  expect_contains(error_of([&] { bad.check(); }), "link class 3");
}

TEST(ModelClasses, RoundTripAndApply) {
  ModelFile m;
  m.name = "two";
  m.link_classes = {{"nvlink", 2e-6, 300e9, 0}, {"network", 9e-6, 40e9, 0}};
  m.link = LinkModel{2e-6, 300e9, 1e-13};
  const std::string yaml = model_file_to_yaml(m);
  expect_contains(yaml, "link_classes:\n  \"nvlink\": {latency_s: 2e-06, bandwidth_Bps: 300000000000}");
  EXPECT_EQ(yaml.find("\nlink:"), std::string::npos);
  const ModelFile back = parse_model_file(yaml, "two.yaml");
  ASSERT_EQ(back.link_classes.size(), 2u);
  EXPECT_EQ(back.link_classes[1].name, "network");
  EXPECT_EQ(back.link_classes[1].bandwidth_Bps, 40e9);
  EXPECT_GT(back.link_classes[1].line, back.link_classes[0].line);
  EXPECT_EQ(back.link.gamma_s_per_byte, 1e-13);
  EXPECT_EQ(model_file_to_yaml(back), yaml);

  Topology c = make_cluster(16, ClusterSpec{});
  apply_model(back, 1e6, c);
  EXPECT_DOUBLE_EQ(c.route_latency_s(0, 1), 2e-6);
  EXPECT_DOUBLE_EQ(c.route_latency_s(0, 8), 9e-6);
  EXPECT_DOUBLE_EQ(c.links[0].bandwidth_Bps, 300e9);
  EXPECT_DOUBLE_EQ(c.links[2 * 16].bandwidth_Bps, 40e9);
  EXPECT_DOUBLE_EQ(c.link.gamma_s_per_byte, 1e-13);
}

TEST(ModelClasses, SingleClassModelSetsNvlinkExactlyAsTheFlagsDo) {
  const ModelFile m = parse_model_file(kHeader + "link: {latency_s: 5e-6, bandwidth_Bps: 2e11, gamma_s_per_byte: 1e-13}\n",
                                       "one.yaml");
  const LinkModel link{5e-6, 2e11, 1e-13};
  for (Topology t : {make_nvswitch(8, LinkModel{}), make_full_mesh(8, LinkModel{})}) {
    const Topology want = t.kind == TopologyKind::NvSwitch ? make_nvswitch(8, link) : make_full_mesh(8, link);
    apply_model(m, 1e6, t);
    for (std::size_t l = 0; l < t.links.size(); ++l) {
      EXPECT_EQ(t.links[l].latency_s, want.links[l].latency_s);
      EXPECT_EQ(t.links[l].bandwidth_Bps, want.links[l].bandwidth_Bps);
    }
    EXPECT_EQ(t.link.gamma_s_per_byte, 1e-13);
  }
  // dgx1: alpha per hop, bandwidth per NVLink, times the pair's NVLink count.
  Topology d = make_dgx1(8, LinkModel{});
  apply_model(m, 1e6, d);
  EXPECT_DOUBLE_EQ(d.links[d.route(0, 3)[0]].bandwidth_Bps, 2 * 2e11);
  EXPECT_DOUBLE_EQ(d.route_latency_s(0, 5), 2 * 5e-6);
  // The cluster's network has no parameters in a single-class model: an error, not a guess.
  Topology c = make_cluster(16, ClusterSpec{});
  const std::string e = error_of([&] { apply_model(m, 1e6, c); });
  expect_contains(e, "one.yaml");
  expect_contains(e, "link class 'network'");
}

TEST(ModelClasses, UnknownAndMissingClasses) {
  const ModelFile unknown =
      parse_model_file(kHeader + "link_classes:\n  nvlink: {latency_s: 2us, bandwidth_Bps: 300GBps}\n"
                                 "  pcie: {latency_s: 2us, bandwidth_Bps: 30GBps}\n",
                       "u.yaml");
  Topology t = make_nvswitch(4, LinkModel{});
  const std::string e = error_of([&] { apply_model(unknown, 1e6, t); });
  expect_contains(e, "u.yaml:5");
  expect_contains(e, "link_classes.pcie");
  expect_contains(e, "its classes: nvlink");
  const ModelFile missing =
      parse_model_file(kHeader + "link_classes:\n  nvlink: {latency_s: 2us, bandwidth_Bps: 300GBps}\n", "m.yaml");
  Topology c = make_cluster(16, ClusterSpec{});
  const std::string e2 = error_of([&] { apply_model(missing, 1e6, c); });
  expect_contains(e2, "m.yaml");
  expect_contains(e2, "no parameters for link class 'network'");
}

TEST(ModelClasses, RejectsMalformedFiles) {
  const std::string nvl = "  nvlink: {latency_s: 2e-6, bandwidth_Bps: 3e11}\n";
  const std::string link = "link: {latency_s: 3e-6, bandwidth_Bps: 4e11}\n";
  expect_contains(error_of([&] { parse_model_file(kHeader + link + "link_classes:\n" + nvl, "a.yaml"); }),
                  "not both");
  expect_contains(error_of([&] { parse_model_file(kHeader + "name: x\n", "a.yaml"); }), "no key 'link'");
  expect_contains(error_of([&] { parse_model_file(kHeader + link + "gamma_s_per_byte: 0\n", "a.yaml"); }),
                  "a.yaml:4: 'gamma_s_per_byte' belongs to a model with 'link_classes'");
  expect_contains(error_of([&] { parse_model_file(kHeader + link + "unidentified_classes: [network]\n", "a.yaml"); }),
                  "'unidentified_classes' belongs");
  expect_contains(error_of([&] { parse_model_file(kHeader + "link_classes: []\n", "a.yaml"); }), "non-empty mapping");
  expect_contains(error_of([&] {
                    parse_model_file(kHeader + "link_classes:\n  nvlink: {latency_s: 2e-6, bandwidth_Bps: 0}\n", "a.yaml");
                  }),
                  "a.yaml:4");
  expect_contains(error_of([&] {
                    parse_model_file(kHeader + "link_classes:\n  nvlink: {latency_s: 2e-6, bandwidth_Bps: 3e11, x: 1}\n",
                                     "a.yaml");
                  }),
                  "unknown key 'x'");
  expect_contains(
      error_of([&] { parse_model_file(kHeader + "link_classes:\n" + nvl + "unidentified_classes: [nvlink]\n", "a.yaml"); }),
      "lists 'nvlink'");
  expect_contains(error_of([&] {
                    parse_model_file(kHeader + "link_classes:\n" + nvl +
                                         "regimes:\n  - {min_size_bytes: 1, max_size_bytes: 2, latency_s: 1e-6, "
                                         "bandwidth_Bps: 1e9}\n",
                                     "a.yaml");
                  }),
                  "'regimes' apply to single-class models");
  ModelFile bad;
  bad.link_classes = {{"nvlink", 1e-6, 1e9, 0}};
  bad.regimes = {FittedRegime{}};
  EXPECT_THROW(model_file_to_yaml(bad), ConfigError);
}

// Hand-made coefficients: class 0 alone, class 1 alone, both; exact recovery and the checks.
TEST(ClassFit, RecoversTwoClassesAndRejectsBadRows) {
  const std::vector<std::string> names{"nvlink", "network"};
  const double a0 = 2e-6, b0 = 1 / 300e9, a1 = 10e-6, b1 = 1 / 40e9;
  std::vector<ClassFitRow> rows;
  for (double s = 1024; s <= 1e9; s *= 8) {
    const std::vector<std::vector<double>> shapes{{3, 0, 0, 0}, {0, 3, 0, 0}, {2, 1, 0, 0}};
    for (const auto& k : shapes) {
      ClassCostCoefficients c{{k[0], k[1]}, {k[0] * s / 4, k[1] * s / 4}, 0};
      const double t = c.latency[0] * a0 + c.latency[1] * a1 + c.bytes[0] * b0 + c.bytes[1] * b1;
      rows.push_back({c, t, s});
    }
  }
  const ClassFitResult fit = fit_link_classes(rows, names, true);
  ASSERT_TRUE(fit.classes[0].identified && fit.classes[1].identified);
  EXPECT_NEAR(fit.classes[0].link.latency_s / a0, 1.0, 1e-9);
  EXPECT_NEAR(fit.classes[1].link.bandwidth_Bps * b1, 1.0, 1e-9);
  EXPECT_FALSE(fit.gamma_fitted);
  EXPECT_LT(fit.stats.max_abs, 1e-9);

  // Collinear classes: every row crosses both in the same proportion.
  std::vector<ClassFitRow> collinear;
  for (double s = 1024; s <= 1e9; s *= 8) collinear.push_back({{{1, 1}, {s, s}, 0}, 1e-5 + s * 1e-11, s});
  expect_contains(error_of([&] { fit_link_classes(collinear, names, true); }), "cannot separate");
  std::vector<ClassFitRow> wrong_size{{{{1}, {1}, 0}, 1e-5, 8}};
  expect_contains(error_of([&] { fit_link_classes(wrong_size, names, true); }), "for 2 link classes");
  std::vector<ClassFitRow> negative = rows;
  negative[1].coefficients.bytes[1] = -1;
  expect_contains(error_of([&] { fit_link_classes(negative, names, true); }), "fit row 1");
  const std::vector<ClassFitRow> one_size(rows.begin(), rows.begin() + 3);
  expect_contains(error_of([&] { fit_link_classes(one_size, names, true); }), "2 distinct sizes");
  EXPECT_THROW(fit_link_classes(rows, std::vector<std::string>{}, true), ConfigError);
}

}  // namespace
}  // namespace collsim
