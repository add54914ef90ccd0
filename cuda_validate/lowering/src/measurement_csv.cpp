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

std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

std::string format_csv_row(const MeasurementRow& row) {
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(row.algorithm), row.n, row.size_bytes,
                     row.delay_s, row.straggler, row.iteration, row.time_s, row.algbw_GBps, row.busbw_GBps,
                     csv_field(row.device), csv_field(row.driver_version), csv_field(row.nccl_version));
}

}  // namespace collsim::cuda_validate
