#include <gtest/gtest.h>

#include "collsim/cuda_validate/chunk_split.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

TEST(ChunkSplit, EqualChunksWhenDivisible) {
  const ChunkSplit split(48, 4);
  EXPECT_TRUE(split.equal_chunks());
  for (std::uint32_t c = 0; c < 4; ++c) {
    EXPECT_EQ(split.begin(c), 12u * c);
    EXPECT_EQ(split.size(c), 12u);
  }
  EXPECT_EQ(split.begin(4), 48u);
  EXPECT_FALSE(ChunkSplit(12, 4).equal_chunks()) << "3 elements per chunk would break 16-byte alignment";
}

TEST(ChunkSplit, RemainderGoesOutInSixteenByteUnits) {
  // 42 elements = 10 units of 4 + 2 in 4 chunks: 3, 3, 2, 2 units, the last chunk takes the 2 extra.
  const ChunkSplit split(42, 4);
  EXPECT_FALSE(split.equal_chunks());
  EXPECT_EQ(split.size(0), 12u);
  EXPECT_EQ(split.size(1), 12u);
  EXPECT_EQ(split.size(2), 8u);
  EXPECT_EQ(split.size(3), 10u);
  EXPECT_EQ(split.begin(1), 12u);
  EXPECT_EQ(split.begin(2), 24u);
  EXPECT_EQ(split.begin(3), 32u);
  EXPECT_EQ(split.begin(4), 42u);
  const ElementRange r = split.range(1, 2);
  EXPECT_EQ(r.offset, 12u);
  EXPECT_EQ(r.count, 20u);
}

TEST(ChunkSplit, StragglarChunksOfAPowerOfTwoBufferAreAligned) {
  // 1 MiB of float in StragglAR's 7 chunks (n = 8): one-element remainders put every odd chunk
  // on a 4-byte boundary; units of 4 keep all of them on 16 bytes.
  const ChunkSplit split(262'144, 7);
  for (std::uint32_t c = 0; c < 7; ++c) {
    EXPECT_EQ(split.begin(c) * sizeof(float) % 16, 0u) << "chunk " << c;
    EXPECT_GE(split.size(c), 37'448u);
    EXPECT_LE(split.size(c), 37'452u);
  }
}

TEST(ChunkSplit, TilesTheBufferAlignedForManyShapes) {
  for (std::size_t count : {0u, 1u, 2u, 6u, 7u, 8u, 99u, 1000u, 4099u, 262'147u}) {
    for (std::uint32_t chunks = 1; chunks <= 17; ++chunks) {
      const ChunkSplit split(count, chunks);
      std::size_t next = 0;
      std::size_t smallest = count;
      std::size_t largest = 0;
      for (std::uint32_t c = 0; c < chunks; ++c) {
        ASSERT_EQ(split.begin(c), next) << count << "/" << chunks;
        ASSERT_EQ(split.begin(c) % kChunkAlignElements, 0u) << count << "/" << chunks << " chunk " << c;
        next += split.size(c);
        const std::size_t without_tail = c + 1 == chunks ? split.size(c) - count % kChunkAlignElements : split.size(c);
        smallest = std::min(smallest, without_tail);
        largest = std::max(largest, without_tail);
        if (c > 0 && c + 1 < chunks) {
          ASSERT_LE(split.size(c), split.size(c - 1)) << "larger chunks first";
        }
      }
      ASSERT_EQ(next, count);
      ASSERT_LE(largest - smallest, kChunkAlignElements);
    }
  }
}

TEST(ChunkSplit, FewerUnitsThanChunksLeavesChunksEmpty) {
  const ChunkSplit split(9, 8);  // 2 units + 1: chunks 0 and 1 hold 4, the last holds 1
  EXPECT_EQ(split.size(1), 4u);
  EXPECT_EQ(split.size(2), 0u);
  EXPECT_EQ(split.size(7), 1u);
  EXPECT_EQ(split.range(3, 4).count, 0u);
  EXPECT_EQ(split.range(3, 4).offset, 8u);
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
