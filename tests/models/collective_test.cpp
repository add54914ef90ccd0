#include "collsim/models/collective.hpp"

#include <gtest/gtest.h>

#include "collsim/models/error.hpp"

namespace collsim {
namespace {

TEST(BusFactor, NcclTestsFactors) {
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 8), 1.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::ReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllGather, 8), 0.875);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::SendRecv, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::SendRecv, 16), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(Collective::AllReduce, 1), 0.0);
  EXPECT_THROW(bus_factor(Collective::AllReduce, 0), ConfigError);
}

TEST(BusFactor, NamesRoundTrip) {
  for (const Collective c : kCollectives) {
    EXPECT_EQ(parse_collective(collective_name(c)), c);
    EXPECT_EQ(parse_collective(std::string(collective_name(c)) + "_perf"), c);
  }
}

}  // namespace
}  // namespace collsim
