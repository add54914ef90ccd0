// Progress reporting of long sweeps: a redrawn bar with ETA on a terminal, plain throttled lines
// otherwise (logs, CI), nothing with --quiet.
#pragma once

#include <chrono>
#include <cstddef>
#include <ostream>
#include <string>

namespace collsim {

/// What the sweep runner reports as it works, on the root process only. Progress shows it to
/// people; tests observe a run through it, or stop one by throwing from advance() (the
/// checkpoint then holds what a crash at that moment would have left).
class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  /// Totals of the run. `work` is an arbitrary cost measure; the work and trials already done
  /// (resumed from a checkpoint) are included in done_work and done_trials.
  virtual void start(double total_work, double done_work, std::size_t total_trials, std::size_t done_trials) = 0;
  /// One more unit finished (and checkpointed) with this much work and these many trials.
  virtual void advance(double work, std::size_t trials) = 0;
  /// Every unit is finished.
  virtual void finish() = 0;
};

class Progress final : public ProgressSink {
 public:
  enum class Style { Bar, Lines };

  /// Reports to `out` (normally std::cerr). `min_interval_s` throttles redraws: the bar redraws
  /// at most every 0.1 s regardless, plain lines appear at most every min_interval_s.
  Progress(std::ostream& out, Style style, std::string label, double min_interval_s = 5.0);

  /// Bar when stderr is a terminal (isatty), Lines otherwise.
  static Style style_for_stderr();

  /// Sets the totals. `work` is an arbitrary cost measure (the ETA is work-weighted); the work
  /// and trials already done (resumed from a checkpoint) count as done but not into the rate.
  void start(double total_work, double done_work, std::size_t total_trials, std::size_t done_trials) override;
  /// Records finished work and redraws when due.
  void advance(double work, std::size_t trials) override;
  /// Final line (always printed, ends the bar with a newline).
  void finish() override;

  /// The text of the current state, e.g. "run smoke: 45% 450/1000 trials, 12 s elapsed, ETA 15 s".
  std::string status() const;

 private:
  void draw(bool final_line);
  double elapsed_s() const;

  std::ostream& out_;
  Style style_;
  std::string label_;
  double min_interval_s_;
  std::chrono::steady_clock::time_point start_;
  double last_draw_s_ = -1e9;
  double total_work_ = 0, done_work_ = 0, resumed_work_ = 0;
  std::size_t total_trials_ = 0, done_trials_ = 0;
  bool finished_ = false;
};

/// "1 h 02 min", "3 min 05 s", "12 s", "0.4 s": a wall-clock duration for humans.
std::string format_eta(double seconds);

}  // namespace collsim
