#include "collsim/cuda_validate/measurement_csv.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {

double bus_factor(CollectiveKind kind, std::uint32_t n) {
  if (n == 0) throw ConfigError("bus_factor: n must be at least 1");
  const double ranks = n;
  switch (kind) {
    case CollectiveKind::AllReduce:
      return 2.0 * (ranks - 1.0) / ranks;
    case CollectiveKind::ReduceScatter:
      return (ranks - 1.0) / ranks;
    case CollectiveKind::PointToPoint:
    case CollectiveKind::LocalKernel:
      return 1.0;
  }
  return 1.0;
}

void compute_bandwidths(MeasurementRow& row, CollectiveKind kind) {
  if (!(row.time_s > 0.0)) {
    throw ConfigError(fmt::format("measurement of '{}': time_s = {} is not positive", row.algorithm, row.time_s));
  }
  row.algbw_GBps = static_cast<double>(row.size_bytes) / row.time_s / 1e9;
  row.busbw_GBps = row.algbw_GBps * bus_factor(kind, row.n);
}

}  // namespace collsim::cuda_validate
