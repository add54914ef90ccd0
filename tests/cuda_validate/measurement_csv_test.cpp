#include <gtest/gtest.h>

#include <optional>

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
  compute_bandwidths(row, Collective::AllReduce);
  EXPECT_DOUBLE_EQ(row.algbw_GBps, 2.0);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 3.5);
  row.launch = "gated";
  EXPECT_EQ(format_measurement_csv_row(row), "ring,8,1000000000,0.005,7,3,0.5,2,3.5,gated,,,NVIDIA H100 80GB HBM3,13.0,2.28.9");

  row.time_s = 0;
  EXPECT_THROW(compute_bandwidths(row, Collective::AllReduce), ConfigError);
}

TEST(MeasurementCsv, BandwidthsOfEachKindOfRow) {
  MeasurementRow row;
  row.n = 4;
  row.size_bytes = 4'000'000'000;
  row.time_s = 1.0;
  compute_bandwidths(row, Collective::ReduceScatter);
  EXPECT_DOUBLE_EQ(row.algbw_GBps, 4.0);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 3.0);
  row.n = 2;
  compute_bandwidths(row, Collective::SendRecv);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 4.0);
  // A local kernel (reduce_kernel, n = 1) moves nothing over a bus; AllReduce's factor would give 0.
  row.n = 1;
  compute_bandwidths(row, std::nullopt);
  EXPECT_DOUBLE_EQ(row.busbw_GBps, 4.0);
  row.n = 0;
  EXPECT_THROW(compute_bandwidths(row, Collective::AllReduce), ConfigError);
}

}  // namespace
}  // namespace collsim::cuda_validate
