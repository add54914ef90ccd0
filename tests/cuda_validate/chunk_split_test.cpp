#include <gtest/gtest.h>

#include "collsim/cuda_validate/chunk_split.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

TEST(ChunkSplit, EqualChunksWhenDivisible) {
  const ChunkSplit split(12, 4);
  EXPECT_TRUE(split.equal_chunks());
  for (std::uint32_t c = 0; c < 4; ++c) {
    EXPECT_EQ(split.begin(c), 3u * c);
    EXPECT_EQ(split.size(c), 3u);
  }
  EXPECT_EQ(split.begin(4), 12u);
}

TEST(ChunkSplit, RemainderGoesToTheFirstChunks) {
  // 10 elements in 4 chunks: 3, 3, 2, 2.
  const ChunkSplit split(10, 4);
  EXPECT_FALSE(split.equal_chunks());
  EXPECT_EQ(split.size(0), 3u);
  EXPECT_EQ(split.size(1), 3u);
  EXPECT_EQ(split.size(2), 2u);
  EXPECT_EQ(split.size(3), 2u);
  EXPECT_EQ(split.begin(0), 0u);
  EXPECT_EQ(split.begin(1), 3u);
  EXPECT_EQ(split.begin(2), 6u);
  EXPECT_EQ(split.begin(3), 8u);
  EXPECT_EQ(split.begin(4), 10u);
  const ElementRange r = split.range(1, 2);
  EXPECT_EQ(r.offset, 3u);
  EXPECT_EQ(r.count, 5u);
}

TEST(ChunkSplit, TilesTheBufferForManyShapes) {
  for (std::size_t count : {0u, 1u, 2u, 6u, 7u, 8u, 99u, 1000u, 4099u}) {
    for (std::uint32_t chunks = 1; chunks <= 17; ++chunks) {
      const ChunkSplit split(count, chunks);
      std::size_t next = 0;
      std::size_t smallest = count;
      std::size_t largest = 0;
      for (std::uint32_t c = 0; c < chunks; ++c) {
        ASSERT_EQ(split.begin(c), next) << count << "/" << chunks;
        next += split.size(c);
        smallest = std::min(smallest, split.size(c));
        largest = std::max(largest, split.size(c));
        if (c > 0) {
          ASSERT_LE(split.size(c), split.size(c - 1)) << "larger chunks first";
        }
      }
      ASSERT_EQ(next, count);
      ASSERT_LE(largest - smallest, 1u);
    }
  }
}

TEST(ChunkSplit, FewerElementsThanChunksLeavesTrailingChunksEmpty) {
  const ChunkSplit split(3, 8);
  EXPECT_EQ(split.size(2), 1u);
  EXPECT_EQ(split.size(3), 0u);
  EXPECT_EQ(split.range(3, 5).count, 0u);
  EXPECT_EQ(split.range(3, 5).offset, 3u);
}

TEST(ChunkSplit, RejectsBadArguments) {
  EXPECT_THROW(ChunkSplit(10, 0), ConfigError);
  const ChunkSplit split(10, 4);
  EXPECT_THROW(split.size(4), ConfigError);
  EXPECT_THROW(split.begin(5), ConfigError);
  EXPECT_THROW(split.range(3, 2), ConfigError);
  EXPECT_NO_THROW(split.range(3, 1));
}

TEST(ElementRange, Overlap) {
  EXPECT_TRUE((ElementRange{0, 4}.overlaps(ElementRange{3, 2})));
  EXPECT_FALSE((ElementRange{0, 4}.overlaps(ElementRange{4, 2})));
  EXPECT_FALSE((ElementRange{2, 0}.overlaps(ElementRange{0, 8})));
}

}  // namespace
}  // namespace collsim::cuda_validate
