// How a buffer of `count` elements is cut into a schedule's `num_chunks` chunks.
//
// The rule (the same on the CPU host backend and on the GPUs):
//   q = count / num_chunks, r = count % num_chunks;
//   chunk c starts at element c*q + min(c, r); the first r chunks hold q+1 elements, the others q.
// So chunk sizes differ by at most one element, the larger chunks come first, the chunks tile the
// buffer without gaps, and when num_chunks divides count every chunk has exactly count/num_chunks
// elements. When count < num_chunks the last chunks are empty; transfers of empty ranges are
// dropped by the lowering on both endpoints, so no zero-byte NCCL call is ever made.
#pragma once

#include <cstddef>
#include <cstdint>

namespace collsim::cuda_validate {

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

  /// First element of chunk c, for 0 <= c <= num_chunks (c == num_chunks gives count).
  /// Throws ConfigError if c > num_chunks.
  std::size_t begin(std::uint32_t chunk) const;
  /// Number of elements of chunk c (q or q+1). Throws ConfigError if c >= num_chunks.
  std::size_t size(std::uint32_t chunk) const;
  /// The elements of chunks [chunk_begin, chunk_begin + chunk_count). Throws ConfigError if the
  /// range extends past num_chunks.
  ElementRange range(std::uint32_t chunk_begin, std::uint32_t chunk_count) const;
  /// True when every chunk has the same number of elements (num_chunks divides count).
  bool equal_chunks() const { return count_ % num_chunks_ == 0; }

 private:
  std::size_t count_;
  std::uint32_t num_chunks_;
  std::size_t quotient_;
  std::size_t remainder_;
};

}  // namespace collsim::cuda_validate
