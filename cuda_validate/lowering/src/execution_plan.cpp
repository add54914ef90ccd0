#include "collsim/cuda_validate/execution_plan.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

DeviceRegion buffer_region(const ElementRange& range) { return DeviceRegion{DeviceRegion::Memory::Buffer, range}; }

DeviceRegion receive_region(const PeerOp& op) {
  if (op.scratch_offset == kNoScratch) return buffer_region(op.range);
  return DeviceRegion{DeviceRegion::Memory::Scratch, ElementRange{op.scratch_offset, op.range.count}};
}

std::string region_text(const DeviceRegion& region) {
  return fmt::format("{} [{}, {})", region.memory == DeviceRegion::Memory::Buffer ? "buffer" : "scratch",
                     region.range.offset, region.range.end());
}

// Walks the per-rank programs round by round; each rank's cursor points at its next step.
class Planner {
 public:
  explicit Planner(const LoweredSchedule& lowered) : lowered_(lowered), cursor_(lowered.n, 0) {
    if (lowered.programs.size() != lowered.n) {
      throw ScheduleError(fmt::format("execution plan: {} programs for n = {}", lowered.programs.size(), lowered.n));
    }
    for (Rank r = 0; r < lowered.n; ++r) {
      const auto& steps = lowered.programs[r].steps;
      for (std::size_t i = 0; i < steps.size(); ++i) {
        if (i > 0 && steps[i].round <= steps[i - 1].round) {
          throw ScheduleError(fmt::format("execution plan: rank {} has steps of rounds {} and {} out of order", r,
                                          steps[i - 1].round, steps[i].round));
        }
        rounds_ = std::max(rounds_, steps[i].round + 1);
      }
    }
  }

  ExecutionPlan build() {
    ExecutionPlan plan;
    plan.algorithm = lowered_.algorithm;
    plan.n = lowered_.n;
    plan.count = lowered_.count;
    plan.collectives = lowered_.collectives;
    for (const RankProgram& program : lowered_.programs) plan.scratch_elements.push_back(program.scratch_elements);
    for (std::uint32_t round = 0; round < rounds_; ++round) {
      for (std::uint32_t c = 0; c < lowered_.collectives.size(); ++c) plan_collective(plan, round, c);
      plan_point_to_point(plan, round);
    }
    for (Rank r = 0; r < lowered_.n; ++r) {
      if (cursor_[r] != lowered_.programs[r].steps.size()) {
        const Step& step = lowered_.programs[r].steps[cursor_[r]];
        throw ScheduleError(fmt::format("execution plan: rank {}'s step of round {} was never planned (a "
                                        "reduce_scatter step its collective's first participant does not share)",
                                        r, step.round));
      }
    }
    return plan;
  }

 private:
  const Step* step_at(Rank r, std::uint32_t round) const {
    const auto& steps = lowered_.programs[r].steps;
    return cursor_[r] < steps.size() && steps[cursor_[r]].round == round ? &steps[cursor_[r]] : nullptr;
  }

  // A ReduceScatter starts in the round of its first participant's step; every participant must
  // be at that same step, or NCCL would wait forever for the missing ones.
  void plan_collective(ExecutionPlan& plan, std::uint32_t round, std::uint32_t c) {
    const CollectiveSpec& spec = lowered_.collectives[c];
    if (spec.ranks.empty()) throw ScheduleError(fmt::format("execution plan: collective {} has no participant", c));
    const Step* first = step_at(spec.ranks.front(), round);
    if (first == nullptr || first->kind != Step::Kind::ReduceScatter || first->collective != c) return;
    PlanGroup group;
    group.round = round;
    for (std::uint32_t i = 0; i < spec.ranks.size(); ++i) {
      const Rank r = spec.ranks[i];
      const Step* step = r < lowered_.n ? step_at(r, round) : nullptr;
      if (step == nullptr || step->kind != Step::Kind::ReduceScatter || step->collective != c) {
        throw ScheduleError(fmt::format("execution plan: reduce_scatter {} in round {}: participant {} is not at it",
                                        c, round, r));
      }
      NcclCall call;
      call.kind = NcclCall::Kind::ReduceScatter;
      call.rank = r;
      call.collective = c;
      call.comm_rank = i;
      call.input = spec.input;
      call.data = buffer_region(ElementRange{spec.input.offset + i * spec.block_elements, spec.block_elements});
      group.calls.push_back(call);
    }
    for (Rank r : spec.ranks) ++cursor_[r];
    plan.groups.push_back(std::move(group));
  }

  void plan_point_to_point(ExecutionPlan& plan, std::uint32_t round) {
    PlanGroup group;
    group.round = round;
    for (Rank r = 0; r < lowered_.n; ++r) {
      const Step* step = step_at(r, round);
      if (step == nullptr || step->kind != Step::Kind::Group) continue;
      for (const PeerOp& op : step->peer_ops) {
        NcclCall call;
        call.rank = r;
        call.peer = op.peer;
        if (op.kind == PeerOp::Kind::Send) {
          call.kind = NcclCall::Kind::Send;
          call.data = buffer_region(op.range);
        } else {
          call.kind = NcclCall::Kind::Recv;
          call.data = receive_region(op);
        }
        group.calls.push_back(call);
      }
      for (const ApplyOp& apply : step->apply_ops) {
        group.after.push_back(StreamOp{r, apply.op, apply.scratch_offset, apply.range});
      }
      ++cursor_[r];
    }
    if (!group.calls.empty()) plan.groups.push_back(std::move(group));
  }

  const LoweredSchedule& lowered_;
  std::vector<std::size_t> cursor_;
  std::uint32_t rounds_ = 0;
};

}  // namespace

ExecutionPlan build_execution_plan(const LoweredSchedule& lowered) { return Planner(lowered).build(); }

std::string format_plan(const ExecutionPlan& plan) {
  std::string out;
  for (std::size_t g = 0; g < plan.groups.size(); ++g) {
    const PlanGroup& group = plan.groups[g];
    out += fmt::format("group {} (round {}):\n", g, group.round);
    for (const NcclCall& call : group.calls) {
      switch (call.kind) {
        case NcclCall::Kind::Send:
          out += fmt::format("  gpu {} send to {} from {}\n", call.rank, call.peer, region_text(call.data));
          break;
        case NcclCall::Kind::Recv:
          out += fmt::format("  gpu {} recv from {} into {}\n", call.rank, call.peer, region_text(call.data));
          break;
        case NcclCall::Kind::ReduceScatter:
          out += fmt::format("  gpu {} reduce_scatter comm {} rank {} of [{}, {}) into {}\n", call.rank,
                             call.collective, call.comm_rank, call.input.offset, call.input.end(),
                             region_text(call.data));
          break;
      }
    }
    for (const StreamOp& op : group.after) {
      out += fmt::format("  then gpu {} {} scratch {} into buffer [{}, {})\n", op.rank, op_name(op.op),
                         op.scratch_offset, op.range.offset, op.range.end());
    }
  }
  return out;
}

}  // namespace collsim::cuda_validate
