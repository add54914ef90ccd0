#include <gtest/gtest.h>

#include "collsim/cuda_validate/measurement_csv.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

TEST(MeasurementCsv, HeaderIsTheDocumentedSchema) {
  EXPECT_EQ(kMeasurementCsvHeader,
            "algorithm,n,size_bytes,delay_s,straggler,iteration,time_s,algbw_GBps,busbw_GBps,launch,nccl_algo,"
            "nccl_proto,device,driver_version,nccl_version");
}

TEST(MeasurementCsv, RowFormatAndBandwidths) {
  MeasurementRow row;
  row.algorithm = "ring";
  row.n = 8;
  row.size_bytes = 1'000'000'000;
  row.delay_s = 0.005;
  row.straggler = 7;
  row.iteration = 3;
  row.time_s = 0.5;
  row.device = "NVIDIA H100 80GB HBM3";
  row.driver_version = "13.0";
  row.nccl_version = "2.28.9";
  compute_bandwidths(row, CollectiveKind::AllReduce);
  EXPECT_DOUBLE_EQ(row.algbw_GBps, 2.0);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 3.5);
  row.launch = "gated";
  EXPECT_EQ(format_measurement_csv_row(row), "ring,8,1000000000,0.005,7,3,0.5,2,3.5,gated,,,NVIDIA H100 80GB HBM3,13.0,2.28.9");

  row.time_s = 0;
  EXPECT_THROW(compute_bandwidths(row, CollectiveKind::AllReduce), ConfigError);
}

TEST(MeasurementCsv, BusFactors) {
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::AllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::ReduceScatter, 4), 0.75);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::PointToPoint, 2), 1.0);
  EXPECT_DOUBLE_EQ(bus_factor(CollectiveKind::LocalKernel, 1), 1.0);
  EXPECT_THROW(bus_factor(CollectiveKind::AllReduce, 0), ConfigError);
}

}  // namespace
}  // namespace collsim::cuda_validate
