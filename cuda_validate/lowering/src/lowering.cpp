#include "collsim/cuda_validate/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "collsim/models/error.hpp"

namespace collsim::cuda_validate {
namespace {

std::size_t align_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

void check_transfer_bounds(const Schedule& schedule, const Phase& phase, std::size_t round,
                           const Transfer& t) {
  if (t.src >= schedule.n || t.dst >= schedule.n) {
    throw ScheduleError(fmt::format("lowering: phase '{}' round {}: transfer {} -> {} names a rank >= n = {}",
                                    phase.name(), round, t.src, t.dst, schedule.n));
  }
  if (t.src == t.dst) {
    throw ScheduleError(fmt::format("lowering: phase '{}' round {}: rank {} sends to itself", phase.name(),
                                    round, t.src));
  }
  if (static_cast<std::uint64_t>(t.chunk_begin) + t.chunk_count > schedule.num_chunks) {
    throw ScheduleError(fmt::format("lowering: phase '{}' round {}: chunks [{}, {}) are out of range (num_chunks = {})",
                                    phase.name(), round, t.chunk_begin, t.chunk_begin + t.chunk_count,
                                    schedule.num_chunks));
  }
}

// Two transfers of one round writing the same chunk of a rank have no defined result (which one
// lands last?), and on a GPU they would race; schedule.hpp forbids it, so refuse to lower it.
void check_disjoint_writes(const Phase& phase, std::size_t round) {
  std::vector<std::tuple<Rank, std::uint32_t, std::uint32_t>> writes;
  for (const Transfer& t : phase.round(round)) {
    writes.emplace_back(t.dst, t.chunk_begin, t.chunk_begin + t.chunk_count);
  }
  std::sort(writes.begin(), writes.end());
  for (std::size_t i = 1; i < writes.size(); ++i) {
    const auto& [rank_a, begin_a, end_a] = writes[i - 1];
    const auto& [rank_b, begin_b, end_b] = writes[i];
    if (rank_a == rank_b && begin_b < end_a) {
      throw ScheduleError(fmt::format("lowering: phase '{}' round {}: rank {} receives chunks [{}, {}) and [{}, {}) "
                                      "in the same round (overlapping writes)",
                                      phase.name(), round, rank_a, begin_a, end_a, begin_b, end_b));
    }
  }
}

// Contribution masks per (rank, chunk): bit r set = the value holds rank r's input.
class SymbolicState {
 public:
  SymbolicState(Rank n, std::uint32_t num_chunks)
      : num_chunks_(num_chunks), masks_(static_cast<std::size_t>(n) * num_chunks) {
    for (Rank r = 0; r < n; ++r) {
      for (std::uint32_t c = 0; c < num_chunks; ++c) at(r, c) = std::uint64_t{1} << r;
    }
  }
  std::uint64_t& at(Rank r, std::uint32_t c) { return masks_[static_cast<std::size_t>(r) * num_chunks_ + c]; }

  // Snapshot semantics of schedule.hpp: read every source first, then apply.
  void run_phase(const Phase& phase) {
    struct Pending {
      Rank dst;
      std::uint32_t chunk;
      Op op;
      std::uint64_t mask;
    };
    std::vector<Pending> pending;
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      pending.clear();
      for (const Transfer& t : phase.round(r)) {
        for (std::uint32_t c = t.chunk_begin; c < t.chunk_begin + t.chunk_count; ++c) {
          pending.push_back(Pending{t.dst, c, t.op, at(t.src, c)});
        }
      }
      for (const Pending& p : pending) {
        std::uint64_t& target = at(p.dst, p.chunk);
        if (p.op == Op::Copy) {
          target = p.mask;
        } else {
          if ((target & p.mask) != 0) double_counted_ = true;
          target |= p.mask;
        }
      }
    }
  }
  bool double_counted() const { return double_counted_; }

 private:
  std::uint32_t num_chunks_;
  std::vector<std::uint64_t> masks_;
  bool double_counted_ = false;
};

std::string mask_to_string(std::uint64_t mask) {
  std::string out;
  for (Rank r = 0; r < 64; ++r) {
    if ((mask >> r) & 1u) out += fmt::format("{}{}", out.empty() ? "" : ",", r);
  }
  return "{" + out + "}";
}

// Checks that phase `phase_index` is a reduce-scatter NCCL can run in place, and that running it
// that way (owned blocks reduced, everything else untouched) still gives a correct AllReduce.
CollectiveSpec plan_reduce_scatter(const Schedule& schedule, std::size_t phase_index, const ChunkSplit& split) {
  const Phase& phase = schedule.phases[phase_index];
  const auto fail = [&](const std::string& why) {
    return ConfigError(fmt::format("lowering: phase '{}' of '{}' cannot run as ncclReduceScatter: {}", phase.name(),
                                   schedule.algorithm, why));
  };
  if (schedule.n > 64) throw fail(fmt::format("n = {} exceeds the 64 ranks the check supports", schedule.n));
  SymbolicState state(schedule.n, schedule.num_chunks);
  for (std::size_t p = 0; p < phase_index; ++p) state.run_phase(schedule.phases[p]);
  SymbolicState before = state;
  state.run_phase(phase);

  const std::vector<Rank> ranks = participants(phase, schedule.n);
  if (ranks.size() < 2) throw fail("it has fewer than two participants");
  std::uint64_t group_mask = 0;
  for (Rank r : ranks) group_mask |= std::uint64_t{1} << r;

  std::vector<std::pair<std::uint32_t, Rank>> owned;  // (chunk, rank)
  for (Rank r : ranks) {
    std::vector<std::uint32_t> full;
    for (std::uint32_t c = 0; c < schedule.num_chunks; ++c) {
      std::uint64_t initial = 0;
      for (Rank q : ranks) initial |= before.at(q, c);
      if (state.at(r, c) == initial && (initial & group_mask) == group_mask) full.push_back(c);
    }
    if (full.size() != 1) {
      throw fail(fmt::format("rank {} ends with {} chunks reduced over all participants, expected exactly one",
                             r, full.size()));
    }
    owned.emplace_back(full.front(), r);
  }
  std::sort(owned.begin(), owned.end());
  for (std::size_t i = 0; i < owned.size(); ++i) {
    if (owned[i].first != owned.front().first + i) {
      throw fail("the participants do not own consecutive distinct chunks");
    }
  }

  CollectiveSpec spec;
  spec.phase = static_cast<std::uint32_t>(phase_index);
  spec.chunk_offset = owned.front().first;
  for (const auto& [chunk, rank] : owned) spec.ranks.push_back(rank);
  const auto k = static_cast<std::uint32_t>(ranks.size());
  spec.input = split.range(spec.chunk_offset, k);
  spec.block_elements = split.size(spec.chunk_offset);
  for (std::uint32_t i = 0; i < k; ++i) {
    if (split.size(spec.chunk_offset + i) != spec.block_elements) {
      throw fail(fmt::format("its {} blocks are unequal for {} elements ({} and {}); use a count that is a "
                             "multiple of {} * num_chunks = {}",
                             k, split.count(), spec.block_elements, split.size(spec.chunk_offset + i),
                             kChunkAlignElements, kChunkAlignElements * schedule.num_chunks));
    }
  }

  // Contributions in the owned blocks must be disjoint at phase start for a plain sum to be right.
  for (std::uint32_t i = 0; i < k; ++i) {
    std::uint64_t seen = 0;
    for (Rank q : ranks) {
      const std::uint64_t m = before.at(q, spec.chunk_offset + i);
      if ((seen & m) != 0) throw fail(fmt::format("chunk {} would be double counted", spec.chunk_offset + i));
      seen |= m;
    }
  }

  // Replay the rest of the schedule from the state NCCL leaves behind.
  SymbolicState replaced = before;
  for (std::uint32_t i = 0; i < k; ++i) {
    const std::uint32_t c = spec.chunk_offset + i;
    replaced.at(spec.ranks[i], c) = state.at(spec.ranks[i], c);
  }
  for (std::size_t p = phase_index + 1; p < schedule.phases.size(); ++p) replaced.run_phase(schedule.phases[p]);
  const std::uint64_t all = schedule.n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << schedule.n) - 1;
  if (replaced.double_counted()) throw fail("a later phase would add a contribution twice");
  for (Rank r = 0; r < schedule.n; ++r) {
    for (std::uint32_t c = 0; c < schedule.num_chunks; ++c) {
      if (replaced.at(r, c) != all) {
        throw fail(fmt::format("rank {} would end with chunk {} holding {} instead of every rank (later phases "
                               "read partial sums only the schedule's own phase leaves)",
                               r, c, mask_to_string(replaced.at(r, c))));
      }
    }
  }
  return spec;
}

// Decides where each receive of a finished group step lands and sizes its scratch.
std::size_t place_receives(Step& step, bool copy_in_place) {
  std::size_t scratch_end = 0;
  std::vector<PeerOp*> recvs;
  for (PeerOp& op : step.peer_ops) {
    if (op.kind == PeerOp::Kind::Recv) recvs.push_back(&op);
  }
  std::size_t next_apply = 0;
  for (PeerOp* recv : recvs) {
    ApplyOp& apply = step.apply_ops[next_apply++];
    bool in_place = copy_in_place && apply.op == Op::Copy;
    if (in_place) {
      for (const PeerOp& other : step.peer_ops) {
        if (other.kind == PeerOp::Kind::Send && other.range.overlaps(recv->range)) in_place = false;
      }
    }
    if (in_place) {
      recv->scratch_offset = kNoScratch;
      apply.scratch_offset = kNoScratch;
      continue;
    }
    const std::size_t slot = align_up(scratch_end, kScratchAlignElements);
    recv->scratch_offset = slot;
    apply.scratch_offset = slot;
    scratch_end = slot + recv->range.count;
  }
  // In-place receives need no apply operation.
  std::erase_if(step.apply_ops, [](const ApplyOp& a) { return a.scratch_offset == kNoScratch; });
  return scratch_end;
}

}  // namespace

bool has_ready_reduce_scatter(const Schedule& schedule) {
  if (schedule.straggler < 0) return false;
  return std::any_of(schedule.phases.begin(), schedule.phases.end(),
                     [](const Phase& phase) { return phase.name() == kReadyReduceScatterPhase; });
}

std::size_t LoweredSchedule::num_sends() const {
  std::size_t total = 0;
  for (const auto& program : programs) {
    for (const auto& step : program.steps) {
      for (const auto& op : step.peer_ops) total += op.kind == PeerOp::Kind::Send ? 1 : 0;
    }
  }
  return total;
}

std::size_t LoweredSchedule::max_scratch_elements() const {
  std::size_t most = 0;
  for (const auto& program : programs) most = std::max(most, program.scratch_elements);
  return most;
}

LoweredSchedule lower_schedule(const Schedule& schedule, const LoweringOptions& options) {
  if (schedule.n < 2) throw ScheduleError(fmt::format("lowering: n = {} (need at least 2 ranks)", schedule.n));
  if (schedule.num_switch_ranks > 0) {
    // In-switch reduction needs multimem loads and stores on an NVLS multicast object, which the
    // executor does not issue: it only runs point-to-point transfers between GPUs.
    throw ScheduleError(fmt::format("lowering: the {} schedule reduces in the NVSwitch ({} switch rank(s)); "
                                    "collsim-cuda lowers only GPU-to-GPU transfers (no multimem/NVLS)",
                                    schedule.algorithm, schedule.num_switch_ranks));
  }
  const ChunkSplit split(options.count, schedule.num_chunks);

  std::size_t replaced_phase = schedule.phases.size();
  if (!options.nccl_reduce_scatter_phase.empty()) {
    std::string names;
    for (std::size_t p = 0; p < schedule.phases.size(); ++p) {
      if (schedule.phases[p].name() == options.nccl_reduce_scatter_phase) replaced_phase = p;
      names += fmt::format("{}'{}'", names.empty() ? "" : ", ", schedule.phases[p].name());
    }
    if (replaced_phase == schedule.phases.size()) {
      throw ConfigError(fmt::format("lowering: schedule '{}' has no phase '{}' (phases: {})", schedule.algorithm,
                                    options.nccl_reduce_scatter_phase, names));
    }
  }

  LoweredSchedule lowered;
  lowered.algorithm = schedule.algorithm;
  lowered.n = schedule.n;
  lowered.count = options.count;
  lowered.num_chunks = schedule.num_chunks;
  lowered.programs.resize(schedule.n);

  std::vector<Step> current(schedule.n);
  std::vector<Rank> touched;
  std::uint32_t global_round = 0;
  for (std::size_t p = 0; p < schedule.phases.size(); ++p) {
    const Phase& phase = schedule.phases[p];
    // An empty phase (StragglAR with n = 2: one ready rank, nothing to reduce) needs no collective.
    if (p == replaced_phase && phase.num_transfers() > 0) {
      CollectiveSpec spec = plan_reduce_scatter(schedule, p, split);
      for (Rank r : spec.ranks) {
        Step step;
        step.kind = Step::Kind::ReduceScatter;
        step.round = global_round;
        step.phase = static_cast<std::uint32_t>(p);
        step.collective = static_cast<std::uint32_t>(lowered.collectives.size());
        lowered.programs[r].steps.push_back(std::move(step));
      }
      lowered.collectives.push_back(std::move(spec));
      global_round += static_cast<std::uint32_t>(phase.num_rounds());
      continue;
    }
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++global_round) {
      touched.clear();
      const auto step_of = [&](Rank rank) -> Step& {
        Step& step = current[rank];
        if (step.peer_ops.empty()) {
          step.round = global_round;
          step.phase = static_cast<std::uint32_t>(p);
          touched.push_back(rank);
        }
        return step;
      };
      for (const Transfer& t : phase.round(r)) check_transfer_bounds(schedule, phase, r, t);
      check_disjoint_writes(phase, r);
      for (const Transfer& t : phase.round(r)) {
        const ElementRange range = split.range(t.chunk_begin, t.chunk_count);
        if (range.count == 0) continue;
        step_of(t.src).peer_ops.push_back(PeerOp{PeerOp::Kind::Send, t.dst, range, kNoScratch});
        Step& recv_step = step_of(t.dst);
        recv_step.peer_ops.push_back(PeerOp{PeerOp::Kind::Recv, t.src, range, kNoScratch});
        recv_step.apply_ops.push_back(ApplyOp{t.op, 0, range});
      }
      for (Rank rank : touched) {
        Step& step = current[rank];
        RankProgram& program = lowered.programs[rank];
        program.scratch_elements = std::max(program.scratch_elements, place_receives(step, options.copy_in_place));
        program.steps.push_back(std::move(step));
        step = Step{};
      }
    }
  }
  lowered.num_rounds = global_round;
  return lowered;
}

std::string format_program(const LoweredSchedule& lowered, Rank rank) {
  if (rank >= lowered.n) {
    throw ConfigError(fmt::format("format_program: rank {} is out of range for n = {}", rank, lowered.n));
  }
  std::string out;
  for (const Step& step : lowered.programs[rank].steps) {
    if (step.kind == Step::Kind::ReduceScatter) {
      const CollectiveSpec& spec = lowered.collectives[step.collective];
      const auto it = std::find(spec.ranks.begin(), spec.ranks.end(), rank);
      const auto index = static_cast<std::size_t>(it - spec.ranks.begin());
      const std::size_t block_begin = spec.input.offset + index * spec.block_elements;
      out += fmt::format("round {}: reduce_scatter among [{}] of [{}, {}) -> [{}, {})\n", step.round,
                         fmt::join(spec.ranks, ","), spec.input.offset, spec.input.end(), block_begin,
                         block_begin + spec.block_elements);
      continue;
    }
    for (const PeerOp& op : step.peer_ops) {
      if (op.kind == PeerOp::Kind::Send) {
        out += fmt::format("round {}: send to {} [{}, {})\n", step.round, op.peer, op.range.offset, op.range.end());
      } else if (op.scratch_offset == kNoScratch) {
        out += fmt::format("round {}: recv from {} [{}, {}) in place\n", step.round, op.peer, op.range.offset,
                           op.range.end());
      } else {
        out += fmt::format("round {}: recv from {} [{}, {}) -> scratch {}\n", step.round, op.peer, op.range.offset,
                           op.range.end(), op.scratch_offset);
      }
    }
    for (const ApplyOp& apply : step.apply_ops) {
      out += fmt::format("round {}: {} scratch {} into [{}, {})\n", step.round, op_name(apply.op), apply.scratch_offset,
                         apply.range.offset, apply.range.end());
    }
  }
  return out;
}

}  // namespace collsim::cuda_validate
