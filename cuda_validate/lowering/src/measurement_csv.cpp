#include "collsim/cuda_validate/measurement_csv.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/csv.hpp"

namespace collsim::cuda_validate {

void compute_bandwidths(MeasurementRow& row, std::optional<Collective> collective) {
  if (!(row.time_s > 0.0)) {
    throw ConfigError(fmt::format("measurement of '{}': time_s = {} is not positive", row.algorithm, row.time_s));
  }
  row.algbw_GBps = static_cast<double>(row.size_bytes) / row.time_s / 1e9;
  row.busbw_GBps = collective ? row.algbw_GBps * bus_factor(*collective, row.n) : row.algbw_GBps;
}

}  // namespace collsim::cuda_validate
