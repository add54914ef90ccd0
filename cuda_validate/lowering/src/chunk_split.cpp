#include "collsim/cuda_validate/chunk_split.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {

ChunkSplit::ChunkSplit(std::size_t count, std::uint32_t num_chunks)
    : count_(count), num_chunks_(num_chunks), quotient_units_(0), remainder_units_(0) {
  if (num_chunks == 0) throw ConfigError("chunk split: num_chunks must be at least 1");
  const std::size_t units = count / kChunkAlignElements;
  quotient_units_ = units / num_chunks;
  remainder_units_ = units % num_chunks;
}

std::size_t ChunkSplit::begin(std::uint32_t chunk) const {
  if (chunk > num_chunks_) {
    throw ConfigError(fmt::format("chunk split: chunk {} is past the {} chunks", chunk, num_chunks_));
  }
  if (chunk == num_chunks_) return count_;
  return kChunkAlignElements *
         (static_cast<std::size_t>(chunk) * quotient_units_ + std::min<std::size_t>(chunk, remainder_units_));
}

std::size_t ChunkSplit::size(std::uint32_t chunk) const {
  if (chunk >= num_chunks_) {
    throw ConfigError(fmt::format("chunk split: chunk {} is out of range (num_chunks = {})", chunk,
                                  num_chunks_));
  }
  return begin(chunk + 1) - begin(chunk);
}

ElementRange ChunkSplit::range(std::uint32_t chunk_begin, std::uint32_t chunk_count) const {
  const std::uint64_t last = static_cast<std::uint64_t>(chunk_begin) + chunk_count;
  if (last > num_chunks_) {
    throw ConfigError(fmt::format("chunk split: chunks [{}, {}) extend past the {} chunks", chunk_begin,
                                  last, num_chunks_));
  }
  const std::size_t first = begin(chunk_begin);
  return ElementRange{first, begin(static_cast<std::uint32_t>(last)) - first};
}

}  // namespace collsim::cuda_validate
