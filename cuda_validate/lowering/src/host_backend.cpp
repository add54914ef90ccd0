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

// What one GPU's stream holds, in enqueue order: the GPU's share of one NCCL group (one kernel on
// a real GPU), or one copy/reduce operation.
struct StreamItem {
  bool nccl = false;
  std::size_t group = 0;             // index into plan.groups
  std::vector<std::size_t> calls;    // nccl: indices into the group's calls issued by this GPU
  std::size_t op = 0;                // otherwise: index into the group's `after`
};

struct PostedCall {
  Rank rank;
  std::size_t call;  // index into the posting rank's current item's calls
};

// Posted but unmatched operations of one ordered pair (src -> dst) of the world communicator.
struct Channel {
  std::deque<PostedCall> sends;
  std::deque<PostedCall> recvs;
};

class HostMachine {
 public:
  HostMachine(const ExecutionPlan& plan, std::vector<std::vector<float>>& buffers)
      : plan_(plan), buffers_(buffers), streams_(plan.n), ranks_(plan.n), arrived_(plan.groups.size()) {
    for (Rank r = 0; r < plan.n; ++r) ranks_[r].scratch.assign(plan.scratch_elements[r], 0.0f);
    for (std::size_t g = 0; g < plan.groups.size(); ++g) enqueue(g);
  }

  HostRunStats run(std::uint64_t seed) {
    std::vector<Rank> order(plan_.n);
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
    std::vector<bool> call_done;
    std::vector<float> scratch;
  };

  // Group g as the GPUs' streams see it: each GPU with calls gets one NCCL item, then the
  // stream operations follow on their GPUs.
  void enqueue(std::size_t g) {
    const PlanGroup& group = plan_.groups[g];
    std::vector<std::size_t> item_of(plan_.n, static_cast<std::size_t>(-1));
    for (std::size_t i = 0; i < group.calls.size(); ++i) {
      const NcclCall& call = group.calls[i];
      if (call.rank >= plan_.n || (call.kind != NcclCall::Kind::ReduceScatter && call.peer >= plan_.n)) {
        throw ScheduleError(fmt::format("host backend: group {} names a GPU >= n = {}", g, plan_.n));
      }
      if (item_of[call.rank] == static_cast<std::size_t>(-1)) {
        item_of[call.rank] = streams_[call.rank].size();
        streams_[call.rank].push_back(StreamItem{true, g, {}, 0});
      }
      streams_[call.rank][item_of[call.rank]].calls.push_back(i);
    }
    for (std::size_t k = 0; k < group.after.size(); ++k) {
      const Rank r = group.after[k].rank;
      if (r >= plan_.n) throw ScheduleError(fmt::format("host backend: group {} names a GPU >= n = {}", g, plan_.n));
      streams_[r].push_back(StreamItem{false, g, {}, k});
    }
  }

  static void shuffle(std::vector<Rank>& order, std::mt19937_64& rng) {
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng() % i]);
  }

  bool done(Rank r) const { return ranks_[r].cursor == streams_[r].size(); }
  bool all_done() const {
    for (Rank r = 0; r < plan_.n; ++r) {
      if (!done(r)) return false;
    }
    return true;
  }
  const StreamItem& item_of(Rank r) const { return streams_[r][ranks_[r].cursor]; }
  const NcclCall& call_of(const PostedCall& posted) const {
    const StreamItem& item = item_of(posted.rank);
    return plan_.groups[item.group].calls[item.calls[posted.call]];
  }

  Channel& channel(Rank src, Rank dst) { return channels_[static_cast<std::uint64_t>(src) * plan_.n + dst]; }

  float* memory(Rank r, const DeviceRegion& region) {
    std::vector<float>& target = region.memory == DeviceRegion::Memory::Buffer ? buffers_[r] : ranks_[r].scratch;
    if (region.range.end() > target.size()) {
      throw ScheduleError(fmt::format("host backend: GPU {} {} [{}, {}) is past its {} elements", r,
                                      region.memory == DeviceRegion::Memory::Buffer ? "buffer" : "scratch",
                                      region.range.offset, region.range.end(), target.size()));
    }
    return target.data() + region.range.offset;
  }

  // Runs the head of rank r's stream as far as it can; returns whether anything happened.
  bool advance(Rank r) {
    RankState& state = ranks_[r];
    const StreamItem& item = item_of(r);
    if (!item.nccl) {
      apply(r, plan_.groups[item.group].after[item.op]);
      ++state.cursor;
      return true;
    }
    bool progress = false;
    if (!state.posted) {
      state.posted = true;
      progress = true;
      state.remaining = item.calls.size();
      state.call_done.assign(item.calls.size(), false);
      for (std::size_t i = 0; i < item.calls.size(); ++i) {
        const NcclCall& call = plan_.groups[item.group].calls[item.calls[i]];
        if (call.kind == NcclCall::Kind::Send) {
          channel(r, call.peer).sends.push_back(PostedCall{r, i});
        } else if (call.kind == NcclCall::Kind::Recv) {
          channel(call.peer, r).recvs.push_back(PostedCall{r, i});
        } else {
          arrived_[item.group].push_back(PostedCall{r, i});
        }
      }
    }
    for (std::size_t i = 0; i < item.calls.size(); ++i) {
      const NcclCall& call = plan_.groups[item.group].calls[item.calls[i]];
      if (call.kind == NcclCall::Kind::Send) {
        progress |= match(channel(r, call.peer));
      } else if (call.kind == NcclCall::Kind::Recv) {
        progress |= match(channel(call.peer, r));
      } else {
        progress |= try_reduce_scatter(item.group, call.collective);
      }
    }
    if (state.remaining == 0) {
      state.posted = false;
      ++state.cursor;
      progress = true;
    }
    return progress;
  }

  bool match(Channel& ch) {
    bool progress = false;
    while (!ch.sends.empty() && !ch.recvs.empty()) {
      const PostedCall send = ch.sends.front();
      const PostedCall recv = ch.recvs.front();
      ch.sends.pop_front();
      ch.recvs.pop_front();
      const NcclCall& s = call_of(send);
      const NcclCall& d = call_of(recv);
      if (s.data.range.count != d.data.range.count) {
        throw ScheduleError(fmt::format("host backend: send {} -> {} of {} elements matched a receive of {} elements",
                                        send.rank, recv.rank, s.data.range.count, d.data.range.count));
      }
      const float* from = memory(send.rank, s.data);
      std::copy(from, from + s.data.range.count, memory(recv.rank, d.data));
      complete(send);
      complete(recv);
      ++stats_.matched_pairs;
      progress = true;
    }
    return progress;
  }

  // NCCL's ReduceScatter: comm rank i receives, for j < recvcount, the sum over every member of
  // sendbuff[i * recvcount + j]. It runs once every member has posted it.
  bool try_reduce_scatter(std::size_t group, std::uint32_t collective) {
    if (collective >= plan_.collectives.size()) {
      throw ScheduleError(fmt::format("host backend: group {} names collective {} of {}", group, collective,
                                      plan_.collectives.size()));
    }
    std::vector<PostedCall>& posted = arrived_[group];
    const CollectiveSpec& spec = plan_.collectives[collective];
    if (posted.size() < spec.ranks.size()) return false;
    const std::size_t members = posted.size();
    std::vector<const NcclCall*> calls(members, nullptr);
    for (const PostedCall& p : posted) {
      const NcclCall& call = call_of(p);
      if (call.comm_rank >= members || calls[call.comm_rank] != nullptr) {
        throw ScheduleError(fmt::format("host backend: reduce_scatter of group {}: comm rank {} is out of range or "
                                        "taken twice",
                                        group, call.comm_rank));
      }
      calls[call.comm_rank] = &call;
    }
    const std::size_t block = calls.front()->data.range.count;
    for (std::size_t i = 0; i < members; ++i) {
      const NcclCall& call = *calls[i];
      if (call.data.memory != DeviceRegion::Memory::Buffer || call.data.range.count != block ||
          call.input.count != members * block || call.data.range.offset != call.input.offset + i * block) {
        throw ScheduleError(fmt::format("host backend: reduce_scatter of group {}: GPU {} (comm rank {}) is not an "
                                        "in-place ncclReduceScatter of {} equal blocks",
                                        group, call.rank, i, members));
      }
    }
    std::vector<float> sums(members * block, 0.0f);
    for (std::size_t i = 0; i < members; ++i) {
      const float* src = memory(calls[i]->rank, DeviceRegion{DeviceRegion::Memory::Buffer, calls[i]->input});
      for (std::size_t e = 0; e < members * block; ++e) sums[e] += src[e];
    }
    for (std::size_t i = 0; i < members; ++i) {
      const auto first = sums.begin() + static_cast<std::ptrdiff_t>(i * block);
      std::copy(first, first + static_cast<std::ptrdiff_t>(block), memory(calls[i]->rank, calls[i]->data));
    }
    for (const PostedCall& p : posted) complete(p);
    posted.clear();
    ++stats_.collectives;
    return true;
  }

  void complete(const PostedCall& posted) {
    RankState& state = ranks_[posted.rank];
    state.call_done[posted.call] = true;
    --state.remaining;
  }

  void apply(Rank r, const StreamOp& op) {
    const DeviceRegion slot{DeviceRegion::Memory::Scratch, ElementRange{op.scratch_offset, op.range.count}};
    const float* src = memory(r, slot);
    float* dst = memory(r, DeviceRegion{DeviceRegion::Memory::Buffer, op.range});
    if (op.op == Op::Copy) {
      std::copy(src, src + op.range.count, dst);
    } else {
      for (std::size_t i = 0; i < op.range.count; ++i) dst[i] += src[i];
    }
  }

  std::string deadlock_message() const {
    std::string message = fmt::format("host backend: the plan of '{}' deadlocks:", plan_.algorithm);
    for (Rank r = 0; r < plan_.n; ++r) {
      if (done(r)) continue;
      const StreamItem& item = item_of(r);
      std::string waits;
      for (std::size_t i = 0; i < item.calls.size(); ++i) {
        if (ranks_[r].posted && ranks_[r].call_done[i]) continue;
        const NcclCall& call = plan_.groups[item.group].calls[item.calls[i]];
        std::string what;
        if (call.kind == NcclCall::Kind::ReduceScatter) {
          what = fmt::format("reduce_scatter ({} of {} participants arrived)", arrived_[item.group].size(),
                             plan_.collectives[call.collective].ranks.size());
        } else {
          what = fmt::format("{} {} [{}, {})", call.kind == NcclCall::Kind::Send ? "send to" : "recv from", call.peer,
                             call.data.range.offset, call.data.range.end());
        }
        waits += fmt::format("{}{}", waits.empty() ? "" : ", ", what);
      }
      message += fmt::format(" rank {} in round {} waits for {};", r, plan_.groups[item.group].round, waits);
    }
    return message;
  }

  const ExecutionPlan& plan_;
  std::vector<std::vector<float>>& buffers_;
  std::vector<std::vector<StreamItem>> streams_;
  std::vector<RankState> ranks_;
  std::vector<std::vector<PostedCall>> arrived_;  // per group: posted ReduceScatter calls
  std::unordered_map<std::uint64_t, Channel> channels_;
  HostRunStats stats_;
};

}  // namespace

HostRunStats execute_plan_on_host(const ExecutionPlan& plan, std::vector<std::vector<float>>& buffers,
                                  const HostRunOptions& options) {
  if (buffers.size() != plan.n || plan.scratch_elements.size() != plan.n) {
    throw ConfigError(fmt::format("host backend: {} buffers and {} scratch sizes for n = {}", buffers.size(),
                                  plan.scratch_elements.size(), plan.n));
  }
  for (Rank r = 0; r < plan.n; ++r) {
    if (buffers[r].size() != plan.count) {
      throw ConfigError(fmt::format("host backend: buffer of rank {} has {} elements, expected {}", r,
                                    buffers[r].size(), plan.count));
    }
  }
  return HostMachine(plan, buffers).run(options.seed);
}

HostRunStats execute_on_host(const LoweredSchedule& lowered, std::vector<std::vector<float>>& buffers,
                             const HostRunOptions& options) {
  if (buffers.size() != lowered.n || lowered.programs.size() != lowered.n) {
    throw ConfigError(fmt::format("host backend: {} buffers and {} programs for n = {}", buffers.size(),
                                  lowered.programs.size(), lowered.n));
  }
  return execute_plan_on_host(build_execution_plan(lowered), buffers, options);
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
