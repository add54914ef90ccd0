#include "execution_core.hpp"

namespace collsim::detail {

RankRounds::RankRounds(const Schedule& schedule) : s_(schedule) {
  const Rank n = s_.num_ranks();  // switch ranks walk their rounds like GPUs
  const std::uint64_t total = s_.num_transfers();
  if (total >= kNoRound) {
    throw ConfigError(fmt::format("the {} schedule has {} transfers; engines handle fewer than 2^32",
                                  s_.algorithm, total));
  }
  num_transfers_ = total;
  // First pass: validate, number the rounds, count each rank's transfers and rounds.
  std::vector<std::uint64_t> xfers_of(n, 0);
  std::vector<std::uint64_t> rounds_of(n, 0);
  std::vector<std::uint32_t> last(n, kNoRound);
  std::uint64_t g = 0;
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
          ++xfers_of[e];
          if (last[e] != round_id) {
            last[e] = round_id;
            ++rounds_of[e];
          }
        }
        ++g;
      }
    }
  }
  // Prefix sums turn the counts into offsets; the second pass fills the lists.
  std::vector<std::uint64_t> x_cursor(n);
  std::vector<std::uint64_t> r_cursor(n);
  rr_begin_.assign(n + 1, 0);
  std::uint64_t xsum = 0;
  std::uint64_t rsum = 0;
  for (Rank r = 0; r < n; ++r) {
    x_cursor[r] = xsum;
    r_cursor[r] = rsum;
    rr_begin_[r] = rsum;
    xsum += xfers_of[r];
    rsum += rounds_of[r];
  }
  rr_begin_[n] = rsum;
  rank_xfers_.resize(xsum);
  rr_round_.resize(rsum);
  rr_xfer_.resize(rsum + 1);
  rr_xfer_[rsum] = xsum;
  std::fill(last.begin(), last.end(), kNoRound);
  g = 0;
  std::uint32_t round_id = 0;
  for (const Phase& phase : s_.phases) {
    for (std::size_t r = 0; r < phase.num_rounds(); ++r, ++round_id) {
      for (const Transfer& t : phase.round(r)) {
        for (const Rank e : {t.src, t.dst}) {
          if (last[e] != round_id) {
            last[e] = round_id;
            rr_round_[r_cursor[e]] = round_id;
            rr_xfer_[r_cursor[e]] = x_cursor[e];
            ++r_cursor[e];
          }
          rank_xfers_[x_cursor[e]++] = static_cast<std::uint32_t>(g);
        }
        ++g;
      }
    }
  }
}

}  // namespace collsim::detail
