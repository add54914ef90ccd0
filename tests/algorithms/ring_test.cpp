#include <gtest/gtest.h>

#include "collsim/algorithms/reference_executor.hpp"
#include "collsim/algorithms/registry.hpp"
#include "collsim/algorithms/verifier.hpp"

namespace collsim {
namespace {

TEST(Ring, ShapeAndCorrectness) {
  for (Rank n = 2; n <= 64; ++n) {
    const Schedule s = generate_schedule("ring", AlgorithmOptions{n, {}, 0});
    ASSERT_EQ(s.num_chunks, n);
    ASSERT_EQ(s.num_rounds(), 2u * (n - 1)) << n;
    ASSERT_EQ(s.num_transfers(), 2u * n * (n - 1)) << n;
    const auto d = verify_schedule(s);
    ASSERT_TRUE(d.empty()) << "n=" << n << ": " << format_diagnostic(s, d[0]);
    const auto ref = execute_reference(s, 2);
    ASSERT_TRUE(ref.correct) << "n=" << n << ": " << ref.first_mismatch;
  }
}

}  // namespace
}  // namespace collsim
