// How a buffer of `count` elements is cut into a schedule's `num_chunks` chunks.
//
// The rule (the same on the CPU host backend and on the GPUs) hands out whole 16-byte units of
// kChunkAlignElements floats:
//   units = count / 4, q = units / num_chunks, r = units % num_chunks;
//   chunk c (c < num_chunks) starts at element 4 * (c*q + min(c, r)); the last chunk also takes
//   the count % 4 trailing elements.
// Why units: every chunk then starts on a 16-byte boundary of the (256-byte aligned) buffer, so
// NCCL's reduce-copy and our reduction kernel use vector loads on every chunk. With one-element
// remainders, StragglAR's 7 chunks of a power-of-two buffer put every odd chunk on a 4-byte
// boundary and only StragglAR paid the narrow loads.
// So chunk sizes differ by at most 4 elements (the last one by up to 3 more), the larger chunks
// come first, the chunks tile the buffer without gaps, and when 4 * num_chunks divides count every
// chunk has exactly count / num_chunks elements. When count < 4 * num_chunks some chunks are
// empty; transfers of empty ranges are dropped by the lowering on both endpoints, so no zero-byte
// NCCL call is ever made.
#pragma once

#include <cstddef>
#include <cstdint>

namespace collsim::cuda_validate {

/// Chunks start at multiples of this many elements (16 bytes of float).
inline constexpr std::size_t kChunkAlignElements = 4;

/// A contiguous range of elements: [offset, offset + count).
struct ElementRange {
  std::size_t offset = 0;  ///< first element
  std::size_t count = 0;   ///< number of elements

  std::size_t end() const { return offset + count; }
  bool overlaps(const ElementRange& other) const {
    return count > 0 && other.count > 0 && offset < other.end() && other.offset < end();
  }
};

/// The chunk layout of one buffer (see the rule above).
class ChunkSplit {
 public:
  /// `count` elements (>= 0) cut into `num_chunks` chunks. Throws ConfigError if num_chunks == 0.
  ChunkSplit(std::size_t count, std::uint32_t num_chunks);

  std::size_t count() const { return count_; }
  std::uint32_t num_chunks() const { return num_chunks_; }

  /// First element of chunk c, for 0 <= c <= num_chunks (c == num_chunks gives count); a multiple
  /// of kChunkAlignElements for c < num_chunks. Throws ConfigError if c > num_chunks.
  std::size_t begin(std::uint32_t chunk) const;
  /// Number of elements of chunk c. Throws ConfigError if c >= num_chunks.
  std::size_t size(std::uint32_t chunk) const;
  /// The elements of chunks [chunk_begin, chunk_begin + chunk_count). Throws ConfigError if the
  /// range extends past num_chunks.
  ElementRange range(std::uint32_t chunk_begin, std::uint32_t chunk_count) const;
  /// True when every chunk has the same number of elements (4 * num_chunks divides count).
  bool equal_chunks() const { return count_ % (kChunkAlignElements * num_chunks_) == 0; }

 private:
  std::size_t count_;
  std::uint32_t num_chunks_;
  std::size_t quotient_units_;
  std::size_t remainder_units_;
};

}  // namespace collsim::cuda_validate
