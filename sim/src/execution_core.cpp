#include "execution_core.hpp"

#include <cmath>
#include <limits>
#include <numeric>

#include "collsim/algorithms/registry.hpp"

namespace collsim::detail {

double default_agreement_s(const Topology& topology) {
  return topology.n < 2 ? 0.0 : 2.0 * topology.route_latency_s(0, topology.n - 1);
}

RunPlan::RunPlan(const Schedule& schedule, const RunConfig& config)
    : given_(schedule), arrival_s_(checked_arrivals(schedule, config)) {
  const AlgorithmInfo* info = find_algorithm_or_null(schedule.algorithm);
  run_time_ = info != nullptr && info->relabel_at_run_time;
  if (!run_time_) {
    gate_s_ = phase_gates(schedule, arrival_s_, config.start);
    return;
  }
  const Rank n = schedule.n;
  const std::uint32_t k = schedule.late_ranks;
  if (k < 1 || k >= n) {
    throw ScheduleError(fmt::format("the {} schedule expects {} late ranks; it must be 1..{} for n = {}",
                                    schedule.algorithm, k, n - 1, n));
  }
  agreement_s_ = config.agreement_s.value_or(default_agreement_s(config.topology));
  if (!(agreement_s_ >= 0) || !std::isfinite(agreement_s_)) {
    throw ConfigError(fmt::format("agreement cost {} s must be >= 0 and finite", agreement_s_));
  }
  const Rank m = n - k;
  // Ranks in arrival order; ties keep rank order, so equal arrivals relabel nothing.
  std::vector<Rank> order(n);
  std::iota(order.begin(), order.end(), Rank{0});
  std::stable_sort(order.begin(), order.end(), [&](Rank a, Rank b) { return arrival_s_[a] < arrival_s_[b]; });

  // Gates first, in labels: each phase waits for the decision about the highest label it uses
  // (labels below m are all decided at the m-th arrival, label l >= m at the (l+1)-th).
  gate_s_.assign(schedule.phases.size(), 0.0);
  for (std::size_t p = 0; p < schedule.phases.size(); ++p) {
    const auto transfers = schedule.phases[p].transfers();
    if (transfers.empty()) continue;
    Rank top = 0;
    for (const Transfer& t : transfers) top = std::max({top, t.src, t.dst});
    if (top >= n) continue;  // malformed; the engine's transfer checks report it
    gate_s_[p] = arrival_s_[order[std::max(top, m - 1)]] + agreement_s_;
  }

  const std::vector<Rank> new_rank_of = run_time_relabelling(schedule, order);
  bool identity = true;
  for (Rank r = 0; r < n; ++r) identity = identity && new_rank_of[r] == r;
  if (!identity) {
    relabelled_.emplace(schedule);
    relabelled_->relabel(new_rank_of);
  }
  // Barrier mode holds each phase for its participants too, named after the relabelling.
  const std::vector<double> barrier = phase_gates(this->schedule(), arrival_s_, config.start);
  for (std::size_t p = 0; p < gate_s_.size(); ++p) gate_s_[p] = std::max(gate_s_[p], barrier[p]);
}

RankRounds::RankRounds(const Schedule& schedule) : s_(schedule) {
  const Rank n = s_.num_ranks();  // switch ranks walk their rounds like GPUs
  const std::uint64_t total = s_.num_transfers();
  if (total >= kNoRound) {
    throw ConfigError(fmt::format("the {} schedule has {} transfers; engines handle fewer than 2^32 - 1",
                                  s_.algorithm, total));
  }
  num_transfers_ = total;
  // First pass: validate, number the rounds, append a record the first time a rank appears in a
  // round and link it from the rank's previous one. A record that reaches three transfers
  // becomes a list and keeps only its count in x[0]; the second pass fills the lists.
  first_.assign(n, kEnd);
  std::vector<std::uint64_t> cur(n, kEnd);
  std::vector<std::uint32_t> last(n, kNoRound);
  {
    // Counted first: a tree's rounds have up to twice as many rank-rounds as transfers, and
    // growing the records by doubling would hold ~1.5x their size at the peak.
    std::uint64_t records = 0;
    std::uint32_t round_id = 0;
    for (const Phase& phase : s_.phases) {
      for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
        for (const Transfer& t : phase.round(r)) {
          for (const Rank e : {t.src, t.dst}) {
            if (e < n && last[e] != round_id) {
              last[e] = round_id;
              ++records;
            }
          }
        }
      }
    }
    rr_.reserve(records);
    std::fill(last.begin(), last.end(), kNoRound);
  }
  std::uint64_t g = 0;
  bool listed = false;
  for (std::size_t p = 0; p < s_.phases.size(); ++p) {
    phase_first_.push_back(g);
    const Phase& phase = s_.phases[p];
    for (std::size_t r = 0; r < phase.num_rounds(); ++r) {
      const auto round_id = static_cast<std::uint32_t>(round_phase_.size());
      round_phase_.push_back(static_cast<std::uint32_t>(p));
      round_local_.push_back(static_cast<std::uint32_t>(r));
      for (const Transfer& t : phase.round(r)) {
        check_transfer(s_, t, p, r);
        for (const Rank e : {t.src, t.dst}) {
          if (last[e] != round_id) {
            last[e] = round_id;
            const std::uint64_t k = rr_.size();
            if (cur[e] == kEnd) {
              first_[e] = k;
            } else {
              const std::uint64_t gap = k - cur[e];
              if (gap > std::numeric_limits<std::uint32_t>::max()) {
                throw ConfigError(fmt::format("the {} schedule leaves rank {} idle for {} rank-rounds; engines handle "
                                              "fewer than 2^32",
                                              s_.algorithm, e, gap));
              }
              rr_[cur[e]].next = static_cast<std::uint32_t>(gap);
            }
            cur[e] = k;
            rr_.push_back(RankRound{round_id, 0, {static_cast<std::uint32_t>(g), kOne}});
            continue;
          }
          auto& x = rr_[cur[e]].x;
          if (x[1] == kOne) {
            x[1] = static_cast<std::uint32_t>(g);
          } else if (x[1] != kList) {
            x = {3, kList};
            listed = true;
          } else {
            ++x[0];  // fewer than 2^32: a rank-round has at most all of a round's transfers
          }
        }
        ++g;
      }
    }
  }
  if (!listed) return;
  // Lists in record order, then the second pass fills them.
  std::uint64_t total_listed = 0;
  for (RankRound& e : rr_) {
    if (e.x[1] != kList) continue;
    const std::uint32_t count = e.x[0];
    e.x[0] = static_cast<std::uint32_t>(list_at_.size());  // fewer than 2^32: each lists 3 or more transfers
    list_at_.push_back(total_listed);
    total_listed += count;
  }
  list_at_.push_back(total_listed);
  rank_xfers_.resize(total_listed);
  std::vector<std::uint32_t> filled(n, 0);
  std::fill(cur.begin(), cur.end(), kEnd);
  std::fill(last.begin(), last.end(), kNoRound);
  g = 0;
  std::uint32_t round_id = 0;
  for (const Phase& phase : s_.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      for (const Transfer& t : phase.round(r)) {
        for (const Rank e : {t.src, t.dst}) {
          if (last[e] != round_id) {
            last[e] = round_id;
            cur[e] = cur[e] == kEnd ? first_[e] : next(cur[e]);
            filled[e] = 0;
          }
          const RankRound& rec = rr_[cur[e]];
          if (rec.x[1] == kList) rank_xfers_[list_at_[rec.x[0]] + filled[e]++] = static_cast<std::uint32_t>(g);
        }
        ++g;
      }
    }
  }
}

}  // namespace collsim::detail

namespace collsim {

double event_index_bytes(double rank_rounds, double listed_transfers) {
  // A list's offset (8 bytes) is shared by its three or more transfers: at most 8/3 each.
  constexpr double kPerListed_bytes = detail::RankRounds::kListedBytes + 8.0 / 3.0;
  return rank_rounds * static_cast<double>(detail::RankRounds::kRecordBytes) + listed_transfers * kPerListed_bytes;
}

}  // namespace collsim
