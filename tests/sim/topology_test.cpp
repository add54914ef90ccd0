#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "collsim/models/error.hpp"
#include "collsim/models/topology.hpp"

namespace collsim {
namespace {

namespace fs = std::filesystem;

const LinkModel kLink{3e-6, 450e9, 0.0};

// The message of the ConfigError `fn` throws ("" if it throws nothing, which fails the caller).
template <typename Fn>
std::string config_error(Fn fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(Topology, NvSwitchLinksAndRoutes) {
  const Topology t = make_nvswitch(4, kLink);
  t.check();
  EXPECT_EQ(t.kind, TopologyKind::NvSwitch);
  ASSERT_EQ(t.links.size(), 8u);
  EXPECT_EQ(t.route(1, 3), (std::vector<std::uint32_t>{1, 7}));
  EXPECT_EQ(t.links[1].name, "gpu1_up");
  EXPECT_EQ(t.links[7].name, "gpu3_down");
  for (const auto& l : t.links) {
    EXPECT_EQ(l.bandwidth_Bps, 450e9);
    EXPECT_EQ(l.latency_s, 1.5e-6);
  }
  EXPECT_EQ(t.route_latency_s(0, 2), 3e-6);  // exactly alpha, not alpha +- rounding
  EXPECT_TRUE(t.non_blocking());
  EXPECT_TRUE(t.links_owned_by_endpoints());
  EXPECT_FALSE(t.never_binding(0));
  EXPECT_NE(config_error([&] { (void)t.route(0, 4); }), "");
  EXPECT_NE(config_error([&] { (void)t.route(2, 2); }), "");
  EXPECT_NE(config_error([] { (void)make_nvswitch(0, kLink); }), "");
  EXPECT_NE(config_error([] { (void)make_nvswitch(4, LinkModel{3e-6, 0.0, 0.0}); }), "");
  EXPECT_NE(config_error([] { (void)make_nvswitch(4, LinkModel{-1e-6, 1e9, 0.0}); }), "");
}

TEST(Topology, FullMeshOneLinkPerOrderedPair) {
  const Topology t = make_full_mesh(4, kLink);
  t.check();
  ASSERT_EQ(t.links.size(), 12u);
  std::set<std::uint32_t> used;
  for (std::uint32_t a = 0; a < 4; ++a) {
    for (std::uint32_t b = 0; b < 4; ++b) {
      if (a == b) continue;
      const auto r = t.route(a, b);
      ASSERT_EQ(r.size(), 1u);
      EXPECT_EQ(t.links[r[0]].name, "gpu" + std::to_string(a) + "_to_gpu" + std::to_string(b));
      EXPECT_EQ(t.links[r[0]].latency_s, 3e-6);
      used.insert(r[0]);
    }
  }
  EXPECT_EQ(used.size(), 12u);
  EXPECT_TRUE(t.links_owned_by_endpoints());
  EXPECT_NE(config_error([] { (void)make_full_mesh(kMaxFullMeshGpus + 1, kLink); }).find("nvswitch"), std::string::npos);
}

TEST(Topology, Dgx1HybridCubeMesh) {
  const LinkModel nvlink{3e-6, 25e9, 0.0};
  const Topology t = make_dgx1(8, nvlink);
  t.check();
  ASSERT_EQ(t.nvlink_count.size(), 8u);
  std::size_t connected = 0;
  for (std::uint32_t a = 0; a < 8; ++a) {
    std::uint32_t row = 0;
    for (std::uint32_t b = 0; b < 8; ++b) {
      EXPECT_EQ(t.nvlink_count[a][b], t.nvlink_count[b][a]);
      row += t.nvlink_count[a][b];
      connected += t.nvlink_count[a][b] > 0 ? 1 : 0;
    }
    EXPECT_EQ(row, 6u) << "every V100 has six NVLinks, GPU " << a;
  }
  EXPECT_EQ(t.links.size(), connected);
  EXPECT_EQ(connected, 32u);  // four NVLink neighbours per GPU
  // Double link 0-3: one hop at 2 x 25 GB/s.
  auto r = t.route(0, 3);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(t.links[r[0]].bandwidth_Bps, 50e9);
  r = t.route(0, 1);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(t.links[r[0]].bandwidth_Bps, 25e9);
  // 0-7 has no NVLink: the widest two-hop path is 0 -> 4 -> 7 (two double links).
  r = t.route(0, 7);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(t.links[r[0]].name, "gpu0_to_gpu4_nv2");
  EXPECT_EQ(t.links[r[1]].name, "gpu4_to_gpu7_nv2");
  EXPECT_EQ(t.route_latency_s(0, 7), 6e-6);
  // 0-5: both two-hop paths have width 1; the lowest intermediate (1) wins.
  r = t.route(0, 5);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(t.links[r[0]].name, "gpu0_to_gpu1_nv1");
  // Every route is a connected NVLink path from src to dst.
  for (std::uint32_t a = 0; a < 8; ++a) {
    for (std::uint32_t b = 0; b < 8; ++b) {
      if (a == b) continue;
      std::string at = "gpu" + std::to_string(a) + "_";
      for (std::uint32_t l : t.route(a, b)) {
        ASSERT_EQ(t.links[l].name.rfind(at, 0), 0u) << a << "->" << b;
        const std::string& name = t.links[l].name;
        const auto to = name.find("_to_gpu") + 7;
        at = "gpu" + name.substr(to, name.find('_', to) - to) + "_";
      }
      EXPECT_EQ(at, "gpu" + std::to_string(b) + "_");
    }
  }
  EXPECT_TRUE(t.non_blocking());
  EXPECT_FALSE(t.links_owned_by_endpoints());  // forwarded routes share the intermediate's links
  const Topology four = make_dgx1(4, nvlink);
  EXPECT_EQ(four.n, 4u);
  EXPECT_EQ(four.route(0, 3).size(), 1u);
  EXPECT_NE(config_error([&] { (void)make_dgx1(9, nvlink); }).find("do not fit"), std::string::npos);
}

TEST(Topology, ClusterRoutesAndCapacities) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nvlink_bandwidth_Bps = 450e9;
  c.nvlink_latency_s = 3e-6;
  c.nic_bandwidth_Bps = 50e9;
  c.network_latency_s = 10e-6;
  c.nodes_per_leaf = 2;
  const Topology t = make_cluster(32, c);  // 4 nodes, 2 leaves
  t.check();
  ASSERT_EQ(t.num_leaves(), 2u);
  ASSERT_EQ(t.links.size(), 4u * 32 + 4);
  EXPECT_EQ(t.route(0, 1), (std::vector<std::uint32_t>{0, 33}));                  // NVSwitch
  EXPECT_EQ(t.route(0, 8), (std::vector<std::uint32_t>{64, 96 + 8}));            // same leaf
  EXPECT_EQ(t.route(0, 16), (std::vector<std::uint32_t>{64, 128, 131, 96 + 16}));// via spine
  EXPECT_EQ(t.route_latency_s(0, 1), 3e-6);
  EXPECT_EQ(t.route_latency_s(0, 8), 10e-6);
  EXPECT_EQ(t.route_latency_s(0, 16), 10e-6);
  EXPECT_EQ(t.links[0].bandwidth_Bps, 450e9);
  EXPECT_EQ(t.links[64].bandwidth_Bps, 50e9);
  EXPECT_EQ(t.links[128].bandwidth_Bps, 16 * 50e9);  // 16 NICs per leaf, 1:1
  EXPECT_TRUE(t.non_blocking());
  EXPECT_TRUE(t.never_binding(128));
  EXPECT_FALSE(t.never_binding(64));
  EXPECT_TRUE(t.links_owned_by_endpoints());

  c.oversubscription = 2;
  const Topology over = make_cluster(32, c);
  EXPECT_EQ(over.links[128].bandwidth_Bps, 8 * 50e9);
  EXPECT_FALSE(over.non_blocking());
  EXPECT_FALSE(over.never_binding(128));
  EXPECT_FALSE(over.links_owned_by_endpoints());

  c.oversubscription = 1;
  c.rail_optimized = true;
  const Topology rail = make_cluster(32, c);  // 2 groups x 8 rails
  ASSERT_EQ(rail.num_leaves(), 16u);
  EXPECT_EQ(rail.leaf_of(0), 0u);
  EXPECT_EQ(rail.leaf_of(8), 0u);   // GPU 0 of node 1: same rail leaf
  EXPECT_EQ(rail.leaf_of(9), 1u);
  EXPECT_EQ(rail.leaf_of(16), 8u);  // next scalable unit
  EXPECT_EQ(rail.route(0, 8).size(), 2u);
  EXPECT_EQ(rail.route(0, 9).size(), 4u);
  EXPECT_EQ(rail.links[4 * 32].bandwidth_Bps, 2 * 50e9);  // 2 nodes per rail leaf

  // PXN: a send to another rail crosses NVLink to the sender's node peer on the receiver's rail
  // and leaves through its NIC, so it stays under one rail leaf; same-rail and same-node routes
  // do not change.
  ClusterSpec p = c;
  p.pxn = true;
  const Topology pxn = make_cluster(32, p);  // links: 32 NVL up, 32 NVL down, 32 NIC up, 32 NIC down, 16 + 16 leaves
  EXPECT_EQ(pxn.route(0, 9), (std::vector<std::uint32_t>{0, 32 + 1, 64 + 1, 96 + 9}));  // via GPU 1's NIC, rail 1
  EXPECT_EQ(pxn.route_latency_s(0, 9), 3e-6 + 10e-6);
  EXPECT_EQ(pxn.route(0, 8), rail.route(0, 8));
  EXPECT_EQ(pxn.route(0, 1), rail.route(0, 1));
  EXPECT_EQ(pxn.route(3, 17), (std::vector<std::uint32_t>{3, 32 + 1, 64 + 1, 128 + 1, 128 + 16 + 9, 96 + 17}));  // rail 1, next unit
  EXPECT_FALSE(pxn.links_owned_by_endpoints());
  EXPECT_NE(config_error([&] { ClusterSpec b = p; b.rail_optimized = false; (void)make_cluster(32, b); }).find("pxn needs rail_optimized"),
            std::string::npos);
  // Two GPUs per NIC: the peer at the sender's place among the receiver's NIC's GPUs.
  ClusterSpec shared = p;
  shared.nics_per_node = 4;  // 8 GPUs per node: GPUs 2k and 2k+1 share NIC k
  const Topology two = make_cluster(32, shared);
  EXPECT_EQ(two.route(1, 8 + 6), (std::vector<std::uint32_t>{1, 32 + 7, 64 + 3, 64 + 16 + 7}));
  EXPECT_EQ(two.route(0, 8 + 7), (std::vector<std::uint32_t>{0, 32 + 6, 64 + 3, 64 + 16 + 7}));
  // A partial last node without the peer: the sender's own NIC.
  const Topology partial = make_cluster(10, p);  // node 1 holds GPUs 8 and 9
  EXPECT_EQ(partial.route(9, 2), (std::vector<std::uint32_t>{20 + 9, 40 + 1, 40 + 8 + 2, 30 + 2}));  // via the spine: rails 1 and 2
  EXPECT_EQ(partial.route(8, 1), (std::vector<std::uint32_t>{8, 10 + 9, 20 + 9, 30 + 1}));

  // A partial last node is fine; bad parameters are not.
  EXPECT_EQ(make_cluster(13, c).n, 13u);
  EXPECT_NE(config_error([&] { ClusterSpec b = c; b.oversubscription = 0.5; (void)make_cluster(32, b); }), "");
  EXPECT_NE(config_error([&] { ClusterSpec b = c; b.gpus_per_node = 0; (void)make_cluster(32, b); }), "");
  EXPECT_NE(config_error([&] { (void)t.leaf_of(32); }), "");
  EXPECT_NE(config_error([] { (void)make_nvswitch(4, kLink).leaf_of(0); }), "");
}

// Build time against n is collsim_bench_topology's job; this checks the structure at scale.
// Node and leaf counts from file values near 2^32: 16 GPUs in nodes of 4294967295 were 0 nodes
// (n + gpus_per_node - 1 wrapped), a leaf of 2^31 nodes x 8 NICs had 0 NICs and a 0 B/s link
// (refused without naming a key), and a rail-optimized node declaring 3e9 NICs got a leaf per
// rail whether a GPU used it or not ("out of memory" for 16 GPUs).
TEST(Topology, ClusterCountsNearTwoToThe32Stay32BitSafe) {
  ClusterSpec c;
  c.gpus_per_node = 8;
  c.nodes_per_leaf = 2147483648u;
  const Topology wide = make_cluster(16, c);
  EXPECT_NO_THROW(wide.check());
  ASSERT_EQ(wide.num_leaves(), 1u);
  EXPECT_DOUBLE_EQ(wide.links.back().bandwidth_Bps, 2147483648.0 * 8 * c.nic_bandwidth_Bps);

  ClusterSpec huge;
  huge.gpus_per_node = 3000000000u;
  huge.nics_per_node = 3000000000u;
  huge.nodes_per_leaf = 1;
  huge.rail_optimized = true;
  const Topology one_node = make_cluster(16, huge);
  EXPECT_NO_THROW(one_node.check());
  EXPECT_EQ(one_node.num_nics(), 16u);
  EXPECT_EQ(one_node.num_leaves(), 16u);  // the 16 rails that have a GPU
  EXPECT_EQ(one_node.leaf_of(15), 15u);
  huge.gpus_per_node = huge.nics_per_node = 4294967295u;
  EXPECT_EQ(make_cluster(16, huge).num_leaves(), 16u);

  // A last group of one partial node reaches only its first rails; full groups keep every rail.
  ClusterSpec rail;
  rail.gpus_per_node = 8;
  rail.nodes_per_leaf = 2;
  rail.rail_optimized = true;
  EXPECT_EQ(make_cluster(20, rail).num_leaves(), 8u + 4u);  // group 0: 2 full nodes; group 1: GPUs 16..19
  EXPECT_EQ(make_cluster(28, rail).num_leaves(), 16u);      // group 1: a full node and a partial one
  EXPECT_EQ(make_cluster(4, rail).num_leaves(), 4u);
}

TEST(Topology, LargeClusterLinksAndRoutes) {
  const Topology t = make_cluster(8192, ClusterSpec{});
  t.check();
  EXPECT_EQ(t.links.size(), 4u * 8192 + 2 * t.num_leaves());
  EXPECT_EQ(t.route(8191, 0).size(), 4u);
}

TEST(Topology, CheckRejectsHandBuiltInconsistentTopology) {
  Topology t;
  t.name = "hand";
  t.n = 4;
  EXPECT_NE(config_error([&] { t.check(); }).find("make_nvswitch"), std::string::npos);
}

// ---- YAML ------------------------------------------------------------------------------------

class TopologyYaml : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("collsim_topology_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                        "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "topologies");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const fs::path p = dir_ / "topologies" / (name + ".yaml");
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST(TopologyFiles, EveryShippedFileLoads) {
  const std::string configs = std::string(COLLSIM_SOURCE_DIR) + "/configs";
  const auto names = known_topology_names(configs);
  for (const char* required : {"nvswitch", "full_mesh", "dgx1", "dgx_h100", "dgx_a100", "nvl72", "cluster_h100_1024",
                               "cluster_h100_4096"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
  for (const auto& name : names) {
    const bool scalable = name == "nvswitch" || name == "full_mesh";
    const Topology t = load_topology(name, scalable ? std::optional<std::uint32_t>(16) : std::nullopt, configs);
    EXPECT_NO_THROW(t.check()) << name;
    EXPECT_EQ(t.name, name);
  }
  const Topology h100 = load_topology("dgx_h100");
  EXPECT_EQ(h100.kind, TopologyKind::NvSwitch);
  EXPECT_EQ(h100.n, 8u);
  EXPECT_EQ(h100.link.bandwidth_Bps, 450e9);
  EXPECT_EQ(h100.link.latency_s, 3e-6);
  EXPECT_EQ(load_topology("dgx_a100").link.bandwidth_Bps, 300e9);
  const Topology nvl = load_topology("nvl72");
  EXPECT_EQ(nvl.n, 72u);
  EXPECT_EQ(nvl.link.bandwidth_Bps, 900e9);
  const Topology big = load_topology("cluster_h100_4096");
  EXPECT_EQ(big.kind, TopologyKind::Cluster);
  EXPECT_EQ(big.n, 4096u);
  EXPECT_TRUE(big.cluster.rail_optimized);
  EXPECT_EQ(big.cluster.nic_bandwidth_Bps, 50e9);  // 400 Gb/s
  EXPECT_TRUE(big.non_blocking());
  EXPECT_EQ(load_topology("cluster_h100_1024", 256u).n, 256u);
  EXPECT_EQ(load_topology("dgx1").links[load_topology("dgx1").route(0, 3)[0]].bandwidth_Bps, 50e9);
  EXPECT_EQ(load_topology(std::string(COLLSIM_SOURCE_DIR) + "/configs/topologies/dgx_h100.yaml").n, 8u);
}

TEST(TopologyFiles, ResolveShorthands) {
  const LinkModel link{5e-6, 100e9, 1e-12};
  const Topology s = resolve_topology("nvswitch", 16, link);
  EXPECT_EQ(s.kind, TopologyKind::NvSwitch);
  EXPECT_EQ(s.n, 16u);
  EXPECT_EQ(s.link.latency_s, 5e-6);
  EXPECT_EQ(s.link.gamma_s_per_byte, 1e-12);
  EXPECT_EQ(resolve_topology("", 3, link).n, 3u);
  EXPECT_EQ(resolve_topology("full_mesh", 5, link).links.size(), 20u);
  EXPECT_EQ(resolve_topology("dgx_a100", 4, link).link.bandwidth_Bps, 300e9);
  EXPECT_NE(config_error([&] { (void)resolve_topology("dgx_h100", 9, link); }).find("do not fit"), std::string::npos);
}

TEST_F(TopologyYaml, UnknownKeysNameThePathAndLine) {
  write("typo", "kind: nvswitch\nn: 4\nbandwith: 1GBps\n");
  std::string msg = config_error([&] { (void)load_topology("typo", {}, dir_.string()); });
  EXPECT_NE(msg.find("typo.yaml:3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'bandwith'"), std::string::npos) << msg;

  write("nested", "kind: cluster\nn: 16\ncluster:\n  gpus_per_node: 8\n  oversubscriptoin: 2\n");
  msg = config_error([&] { (void)load_topology("nested", {}, dir_.string()); });
  EXPECT_NE(msg.find("nested.yaml:5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'cluster.oversubscriptoin'"), std::string::npos) << msg;
}

// As in experiment specs: a key given twice, a second document and a key that is not a name are
// refused by line. The reader saw only the first of a repeated key and only the first document,
// so 'oversubscription: 1' then 'oversubscription: 2' ran a non-blocking fabric without a word.
TEST_F(TopologyYaml, RepeatedKeysSecondDocumentsAndNonScalarKeysAreRefused) {
  write("twice", "kind: cluster\nn: 16\ncluster:\n  oversubscription: 1\n  oversubscription: 2\n");
  std::string msg = config_error([&] { (void)load_topology("twice", {}, dir_.string()); });
  EXPECT_NE(msg.find("twice.yaml:5: key 'cluster.oversubscription' is given twice"), std::string::npos) << msg;
  write("twice", "kind: nvswitch\nn: 8\nkind: cluster\n");
  msg = config_error([&] { (void)load_topology("twice", {}, dir_.string()); });
  EXPECT_NE(msg.find("twice.yaml:3: key 'kind' is given twice"), std::string::npos) << msg;
  write("two", "kind: nvswitch\nn: 8\n---\nkind: cluster\nn: 16\n");
  msg = config_error([&] { (void)load_topology("two", {}, dir_.string()); });
  EXPECT_NE(msg.find("two.yaml:4: a second YAML document starts here"), std::string::npos) << msg;
  write("two", "kind: nvswitch\nn: 8\n---\n");  // an empty document after '---' holds nothing to lose
  EXPECT_EQ(load_topology("two", {}, dir_.string()).n, 8u);
  write("key", "kind: nvswitch\nn: 8\n? [a, b]\n: 1\n");
  msg = config_error([&] { (void)load_topology("key", {}, dir_.string()); });
  EXPECT_NE(msg.find("key.yaml:3: a key of 'top level' is a list; keys are plain names"), std::string::npos) << msg;
}

// An empty value (`key:` and nothing) is reported on its key's line, not where yaml-cpp marks
// the null (the next token's line), and the file is named once.
TEST_F(TopologyYaml, EmptyValueNamesItsKeysLine) {
  write("empty", "kind: cluster\nn: 64\ncluster:\n  gpus_per_node:\n  nics_per_node: 8\n");
  std::string msg = config_error([&] { (void)load_topology("empty", {}, dir_.string()); });
  EXPECT_NE(msg.find("empty.yaml:4: 'cluster.gpus_per_node' must be a single value"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("empty.yaml:", msg.find("empty.yaml:") + 1), std::string::npos) << msg;
  write("empty", "kind: nvswitch\nn: 8\nlatency:\n\nbandwidth: 1GBps\n");
  msg = config_error([&] { (void)load_topology("empty", {}, dir_.string()); });
  EXPECT_NE(msg.find("empty.yaml:3: 'latency'"), std::string::npos) << msg;
}

TEST_F(TopologyYaml, BadInputIsRejectedClearly) {
  const std::string d = dir_.string();
  auto error_of = [&](const std::string& text, std::optional<std::uint32_t> n = {}) {
    write("bad", text);
    return config_error([&] { (void)load_topology("bad", n, d); });
  };
  EXPECT_NE(error_of("n: 4\n").find("missing key 'kind'"), std::string::npos);
  EXPECT_NE(error_of("kind: torus\nn: 4\n").find("kind 'torus' is unknown"), std::string::npos);
  EXPECT_NE(error_of("kind: nvswitch\nn: 4\nbandwidth: fast\n").find("bandwidth"), std::string::npos);
  EXPECT_NE(error_of("kind: nvswitch\nn: 4\nlatency: -3us\n").find("negative"), std::string::npos);
  EXPECT_NE(error_of("kind: nvswitch\nn: 0\n").find("'n'"), std::string::npos);
  EXPECT_NE(error_of("kind: nvswitch\nn: four\n").find("'n'"), std::string::npos);
  EXPECT_NE(error_of("kind: nvswitch\n").find("has no 'n'"), std::string::npos);
  EXPECT_EQ(error_of("kind: nvswitch\n", 6u), "");  // scalable: n from the caller
  EXPECT_NE(error_of("kind: nvswitch\nn: 8\n", 16u).find("16 ranks do not fit"), std::string::npos);
  EXPECT_NE(error_of("kind: dgx1\n", 9u).find("do not fit"), std::string::npos);
  EXPECT_NE(error_of("kind: cluster\nn: 16\nbandwidth: 1GBps\n").find("does not apply to kind cluster"),
            std::string::npos);
  EXPECT_NE(error_of("kind: nvswitch\nn: 4\ncluster:\n  gpus_per_node: 8\n").find("applies only to kind cluster"),
            std::string::npos);
  EXPECT_NE(error_of("kind: cluster\nn: 16\ncluster:\n  oversubscription: 0.5\n").find("from 1 to 1000"), std::string::npos);
  EXPECT_NE(error_of("kind: cluster\nn: 16\ncluster:\n  rail_optimized: maybe\n").find("true or false"),
            std::string::npos);
  const std::string pxn_alone = error_of("kind: cluster\nn: 16\ncluster:\n  gpus_per_node: 4\n  pxn: true\n");
  EXPECT_NE(pxn_alone.find(":5"), std::string::npos) << pxn_alone;
  EXPECT_NE(pxn_alone.find("'cluster.pxn' = true needs 'cluster.rail_optimized: true'"), std::string::npos) << pxn_alone;
  EXPECT_NE(error_of("kind: cluster\nn: 16\ncluster:\n  rail_optimized: true\n  pxn: often\n").find("true or false"),
            std::string::npos);
  EXPECT_EQ(error_of("kind: cluster\nn: 16\ncluster:\n  rail_optimized: true\n  pxn: true\n"), "");
  EXPECT_NE(error_of("kind: nvswitch\nn: [4\n").find("invalid YAML"), std::string::npos);
  EXPECT_NE(error_of("").find("empty"), std::string::npos);
  EXPECT_NE(error_of("- kind\n").find("mapping"), std::string::npos);
}

TEST_F(TopologyYaml, UnknownNamesAndMissingFiles) {
  write("mine", "kind: nvswitch\nn: 4\n");
  const std::string msg = config_error([&] { (void)load_topology("nvswich", {}, dir_.string()); });
  EXPECT_NE(msg.find("unknown topology 'nvswich'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mine"), std::string::npos) << msg;  // lists what exists
  EXPECT_NE(config_error([&] { (void)load_topology((dir_ / "nope.yaml").string()); }).find("does not exist"),
            std::string::npos);
  EXPECT_NE(config_error([] { (void)load_topology(""); }), "");
  EXPECT_EQ(load_topology("mine", {}, dir_.string()).n, 4u);
}

}  // namespace
}  // namespace collsim
