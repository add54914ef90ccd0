// Helpers shared by the benchmark executables.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace collsim::bench {

/// Least-squares slope of log(y) against log(x): the exponent e of y ~ x^e that the benchmarks
/// report for time and memory against n. NaN with fewer than two points.
inline double growth_exponent(const std::vector<double>& x, const std::vector<double>& y) {
  const std::size_t k = x.size();
  if (k < 2) return NAN;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < k; ++i) {
    const double lx = std::log(x[i]);
    const double ly = std::log(y[i]);
    sx += lx;
    sy += ly;
    sxx += lx * lx;
    sxy += lx * ly;
  }
  const auto count = static_cast<double>(k);
  return (count * sxy - sx * sy) / (count * sxx - sx * sx);
}

}  // namespace collsim::bench
