#include "collsim/cuda_validate/host_backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <numeric>
#include <random>
#include <unordered_map>

#include "collsim/cuda_validate/input_data.hpp"
#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

struct PostedOp {
  Rank rank;
  std::size_t index;  // into the rank's current step's peer_ops
};

// Posted but unmatched operations of one ordered pair (src -> dst), in posting order.
struct Channel {
  std::deque<PostedOp> sends;
  std::deque<PostedOp> recvs;
};

class HostMachine {
 public:
  HostMachine(const LoweredSchedule& lowered, std::vector<std::vector<float>>& buffers)
      : lowered_(lowered), buffers_(buffers), ranks_(lowered.n), arrived_(lowered.collectives.size(), 0) {
    for (Rank r = 0; r < lowered.n; ++r) ranks_[r].scratch.assign(lowered.programs[r].scratch_elements, 0.0f);
  }

  HostRunStats run(std::uint64_t seed) {
    std::vector<Rank> order(lowered_.n);
    std::iota(order.begin(), order.end(), Rank{0});
    std::mt19937_64 rng(seed);
    while (!all_done()) {
      ++stats_.sweeps;
      if (seed != 0) shuffle(order, rng);
      bool progress = false;
      for (Rank r : order) {
        if (!done(r)) progress |= advance(r);
      }
      if (!progress) throw ScheduleError(deadlock_message());
    }
    return stats_;
  }

 private:
  struct RankState {
    std::size_t cursor = 0;
    bool posted = false;
    std::size_t remaining = 0;
    std::vector<bool> op_done;
    std::vector<float> scratch;
  };

  static void shuffle(std::vector<Rank>& order, std::mt19937_64& rng) {
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  }

  bool done(Rank r) const { return ranks_[r].cursor == lowered_.programs[r].steps.size(); }
  bool all_done() const {
    for (Rank r = 0; r < lowered_.n; ++r) {
      if (!done(r)) return false;
    }
    return true;
  }
  const Step& step_of(Rank r) const { return lowered_.programs[r].steps[ranks_[r].cursor]; }

  Channel& channel(Rank src, Rank dst) {
    return channels_[static_cast<std::uint64_t>(src) * lowered_.n + dst];
  }

  // Posts, matches and completes what rank r can; returns whether anything happened.
  bool advance(Rank r) {
    bool progress = false;
    RankState& state = ranks_[r];
    const Step& step = step_of(r);
    if (!state.posted) {
      state.posted = true;
      progress = true;
      if (step.kind == Step::Kind::ReduceScatter) {
        ++arrived_[step.collective];
      } else {
        state.remaining = step.peer_ops.size();
        state.op_done.assign(step.peer_ops.size(), false);
        for (std::size_t i = 0; i < step.peer_ops.size(); ++i) {
          const PeerOp& op = step.peer_ops[i];
          if (op.kind == PeerOp::Kind::Send) {
            channel(r, op.peer).sends.push_back(PostedOp{r, i});
          } else {
            channel(op.peer, r).recvs.push_back(PostedOp{r, i});
          }
        }
      }
    }
    if (step.kind == Step::Kind::ReduceScatter) {
      const CollectiveSpec& spec = lowered_.collectives[step.collective];
      if (arrived_[step.collective] < spec.ranks.size()) return progress;
      run_reduce_scatter(spec);
      for (Rank q : spec.ranks) {
        ranks_[q].posted = false;
        ++ranks_[q].cursor;
      }
      arrived_[step.collective] = 0;
      return true;
    }
    for (const PeerOp& op : step.peer_ops) {
      progress |= op.kind == PeerOp::Kind::Send ? match(channel(r, op.peer)) : match(channel(op.peer, r));
    }
    if (state.remaining == 0) {
      apply(r, step);
      state.posted = false;
      ++state.cursor;
      progress = true;
    }
    return progress;
  }

  bool match(Channel& ch) {
    bool progress = false;
    while (!ch.sends.empty() && !ch.recvs.empty()) {
      const PostedOp send = ch.sends.front();
      const PostedOp recv = ch.recvs.front();
      ch.sends.pop_front();
      ch.recvs.pop_front();
      const PeerOp& s = step_of(send.rank).peer_ops[send.index];
      const PeerOp& d = step_of(recv.rank).peer_ops[recv.index];
      if (s.range.count != d.range.count) {
        throw ScheduleError(fmt::format("host backend: send {} -> {} of {} elements matched a receive of {} elements",
                                        send.rank, recv.rank, s.range.count, d.range.count));
      }
      const float* from = buffers_[send.rank].data() + s.range.offset;
      float* to = d.scratch_offset == kNoScratch ? buffers_[recv.rank].data() + d.range.offset
                                                 : ranks_[recv.rank].scratch.data() + d.scratch_offset;
      std::copy(from, from + s.range.count, to);
      complete(send);
      complete(recv);
      ++stats_.matched_pairs;
      progress = true;
    }
    return progress;
  }

  void complete(const PostedOp& posted) {
    RankState& state = ranks_[posted.rank];
    state.op_done[posted.index] = true;
    --state.remaining;
  }

  void apply(Rank r, const Step& step) {
    const std::vector<float>& scratch = ranks_[r].scratch;
    for (const ApplyOp& a : step.apply_ops) {
      float* dst = buffers_[r].data() + a.range.offset;
      const float* src = scratch.data() + a.scratch_offset;
      if (a.op == Op::Copy) {
        std::copy(src, src + a.range.count, dst);
      } else {
        for (std::size_t i = 0; i < a.range.count; ++i) dst[i] += src[i];
      }
    }
  }

  void run_reduce_scatter(const CollectiveSpec& spec) {
    const std::size_t block = spec.block_elements;
    std::vector<float> sums(spec.ranks.size() * block, 0.0f);
    for (std::size_t i = 0; i < spec.ranks.size(); ++i) {
      const std::size_t begin = spec.input.offset + i * block;
      for (Rank q : spec.ranks) {
        const float* src = buffers_[q].data() + begin;
        for (std::size_t j = 0; j < block; ++j) sums[i * block + j] += src[j];
      }
    }
    for (std::size_t i = 0; i < spec.ranks.size(); ++i) {
      std::copy(sums.begin() + static_cast<std::ptrdiff_t>(i * block),
                sums.begin() + static_cast<std::ptrdiff_t>((i + 1) * block),
                buffers_[spec.ranks[i]].begin() + static_cast<std::ptrdiff_t>(spec.input.offset + i * block));
    }
    ++stats_.collectives;
  }

  std::string deadlock_message() const {
    std::string message = fmt::format("host backend: the programs of '{}' deadlock:", lowered_.algorithm);
    for (Rank r = 0; r < lowered_.n; ++r) {
      if (done(r)) continue;
      const Step& step = step_of(r);
      std::string waits;
      if (step.kind == Step::Kind::ReduceScatter) {
        waits = fmt::format("reduce_scatter ({} of {} participants arrived)", arrived_[step.collective],
                            lowered_.collectives[step.collective].ranks.size());
      } else {
        for (std::size_t i = 0; i < step.peer_ops.size(); ++i) {
          if (ranks_[r].op_done[i]) continue;
          const PeerOp& op = step.peer_ops[i];
          waits += fmt::format("{}{} {} [{}, {})", waits.empty() ? "" : ", ",
                               op.kind == PeerOp::Kind::Send ? "send to" : "recv from", op.peer, op.range.offset,
                               op.range.end());
        }
      }
      message += fmt::format(" rank {} in round {} waits for {};", r, step.round, waits);
    }
    return message;
  }

  const LoweredSchedule& lowered_;
  std::vector<std::vector<float>>& buffers_;
  std::vector<RankState> ranks_;
  std::vector<std::size_t> arrived_;
  std::unordered_map<std::uint64_t, Channel> channels_;
  HostRunStats stats_;
};

}  // namespace

HostRunStats execute_on_host(const LoweredSchedule& lowered, std::vector<std::vector<float>>& buffers,
                             const HostRunOptions& options) {
  if (buffers.size() != lowered.n || lowered.programs.size() != lowered.n) {
    throw ConfigError(fmt::format("host backend: {} buffers and {} programs for n = {}", buffers.size(),
                                  lowered.programs.size(), lowered.n));
  }
  for (Rank r = 0; r < lowered.n; ++r) {
    if (buffers[r].size() != lowered.count) {
      throw ConfigError(fmt::format("host backend: buffer of rank {} has {} elements, expected {}", r,
                                    buffers[r].size(), lowered.count));
    }
  }
  return HostMachine(lowered, buffers).run(options.seed);
}

std::vector<std::vector<float>> make_input_buffers(Rank n, std::size_t count) {
  std::vector<std::vector<float>> buffers(n, std::vector<float>(count));
  for (Rank r = 0; r < n; ++r) {
    for (std::size_t e = 0; e < count; ++e) buffers[r][e] = input_value(r, e);
  }
  return buffers;
}

ValidationResult validate_allreduce(const std::vector<std::vector<float>>& buffers) {
  ValidationResult result;
  if (buffers.empty()) return result;
  const std::size_t count = buffers.front().size();
  std::vector<float> expected(count, 0.0f);
  for (Rank r = 0; r < buffers.size(); ++r) {
    for (std::size_t e = 0; e < count; ++e) expected[e] += input_value(r, e);
  }
  for (Rank r = 0; r < buffers.size(); ++r) {
    if (buffers[r].size() != count) {
      throw ConfigError(fmt::format("validate_allreduce: buffer of rank {} has {} elements, rank 0 has {}", r,
                                    buffers[r].size(), count));
    }
    for (std::size_t e = 0; e < count; ++e) {
      if (buffers[r][e] == expected[e]) continue;
      if (result.mismatches++ == 0) {
        result.first_mismatch =
            fmt::format("rank {} element {}: got {}, expected {}", r, e, buffers[r][e], expected[e]);
      }
    }
  }
  return result;
}

}  // namespace collsim::cuda_validate
