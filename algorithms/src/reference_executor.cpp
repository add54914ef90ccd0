#include "collsim/algorithms/reference_executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "collsim/models/error.hpp"

namespace collsim {

double reference_input(Rank rank, std::size_t element) {
  // Small positive integers (1..64): a sum over 65536 ranks stays below 2^22, exact in double,
  // and the values differ between ranks and elements so a wrong permutation cannot pass.
  const std::uint64_t mixed = (static_cast<std::uint64_t>(rank) * 2654435761u) ^ (element * 40503u + 17u);
  return static_cast<double>(mixed % 64u + 1u);
}

void execute_on_buffers(const Schedule& schedule, std::size_t elements_per_chunk,
                        std::vector<std::vector<double>>& buffers) {
  const std::size_t chunk_elems = elements_per_chunk;
  const std::size_t buffer_elems = schedule.num_chunks * chunk_elems;
  if (buffers.size() != schedule.n) {
    throw ScheduleError(fmt::format("reference executor: {} buffers for n = {}", buffers.size(), schedule.n));
  }
  for (const auto& b : buffers) {
    if (b.size() != buffer_elems) throw ScheduleError("reference executor: buffer of the wrong size");
  }
  struct Incoming {
    Rank dst;
    std::size_t offset;
    Op op;
    std::size_t staged;  // offset in the staging area
    std::size_t count;
  };
  // Switch ranks hold zeros at first; contributions reduced into one add up, whatever their number.
  std::vector<std::vector<double>> switch_buffers(schedule.num_switch_ranks, std::vector<double>(buffer_elems, 0.0));
  // A switch stores nothing once it has multicast a chunk: per (switch, chunk), whether it has
  // sent the chunk since the last contribution, which then starts a new sum from zero.
  std::vector<bool> multicast(static_cast<std::size_t>(schedule.num_switch_ranks) * schedule.num_chunks, false);
  const auto buffer = [&](Rank r) -> std::vector<double>& {
    return r < schedule.n ? buffers[r] : switch_buffers[r - schedule.n];
  };
  std::vector<double> staging;
  std::vector<Incoming> incoming;
  for (const Phase& phase : schedule.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      // Every send of a round reads the sender's data as of the round start: stage first, apply after.
      staging.clear();
      incoming.clear();
      for (const Transfer& t : phase.round(r)) {
        if (t.src >= schedule.num_ranks() || t.dst >= schedule.num_ranks() ||
            static_cast<std::size_t>(t.chunk_begin) + t.chunk_count > schedule.num_chunks) {
          throw ScheduleError(fmt::format("reference executor: transfer {} -> {} chunks [{}, {}) out of bounds",
                                          t.src, t.dst, t.chunk_begin, t.chunk_begin + t.chunk_count));
        }
        const std::size_t offset = t.chunk_begin * chunk_elems;
        const std::size_t count = t.chunk_count * chunk_elems;
        const auto& src = buffer(t.src);
        if (schedule.is_switch(t.src)) {
          for (std::uint32_t c = t.chunk_begin; c < t.chunk_begin + t.chunk_count; ++c) {
            multicast[static_cast<std::size_t>(t.src - schedule.n) * schedule.num_chunks + c] = true;
          }
        }
        incoming.push_back(Incoming{t.dst, offset, t.op, staging.size(), count});
        staging.insert(staging.end(), src.begin() + static_cast<std::ptrdiff_t>(offset),
                       src.begin() + static_cast<std::ptrdiff_t>(offset + count));
      }
      for (const Incoming& in : incoming) {
        double* dst = buffer(in.dst).data() + in.offset;
        const double* data = staging.data() + in.staged;
        if (schedule.is_switch(in.dst)) {
          for (std::size_t c = in.offset / chunk_elems; c < (in.offset + in.count) / chunk_elems; ++c) {
            const std::size_t cell = static_cast<std::size_t>(in.dst - schedule.n) * schedule.num_chunks + c;
            if (!multicast[cell]) continue;
            multicast[cell] = false;
            std::fill_n(buffer(in.dst).data() + c * chunk_elems, chunk_elems, 0.0);
          }
        }
        if (in.op == Op::Copy) {
          std::copy(data, data + in.count, dst);
        } else {
          for (std::size_t i = 0; i < in.count; ++i) dst[i] += data[i];
        }
      }
    }
  }
}

ReferenceResult execute_reference(const Schedule& schedule, std::size_t elements_per_chunk) {
  if (elements_per_chunk == 0) throw ScheduleError("reference executor: elements_per_chunk must be >= 1");
  const std::size_t elems = schedule.num_chunks * elements_per_chunk;
  std::vector<std::vector<double>> buffers(schedule.n, std::vector<double>(elems));
  std::vector<double> expected(elems, 0.0);
  for (Rank r = 0; r < schedule.n; ++r) {
    for (std::size_t e = 0; e < elems; ++e) {
      buffers[r][e] = reference_input(r, e);
      expected[e] += buffers[r][e];
    }
  }
  execute_on_buffers(schedule, elements_per_chunk, buffers);
  ReferenceResult result;
  for (Rank r = 0; r < schedule.n; ++r) {
    for (std::size_t e = 0; e < elems; ++e) {
      if (buffers[r][e] == expected[e]) continue;
      if (result.mismatches++ == 0) {
        result.first_mismatch = fmt::format("rank {} element {} (chunk {}): got {}, expected {}", r, e,
                                            e / elements_per_chunk, buffers[r][e], expected[e]);
      }
    }
  }
  result.correct = result.mismatches == 0;
  return result;
}

}  // namespace collsim
