#include "collsim/experiments/progress.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace collsim {

Progress::Progress(std::ostream& out, Style style, std::string label, double min_interval_s)
    : out_(out), style_(style), label_(std::move(label)), min_interval_s_(min_interval_s),
      start_(std::chrono::steady_clock::now()) {}

Progress::Style Progress::style_for_stderr() { return ::isatty(STDERR_FILENO) ? Style::Bar : Style::Lines; }

void Progress::start(double total_work, double done_work, std::size_t total_trials, std::size_t done_trials) {
  total_work_ = total_work;
  done_work_ = resumed_work_ = done_work;
  total_trials_ = total_trials;
  done_trials_ = done_trials;
  start_ = std::chrono::steady_clock::now();
  if (done_trials > 0 && style_ == Style::Lines) {
    out_ << fmt::format("{}: resuming, {} of {} trials already done\n", label_, done_trials, total_trials);
  }
  draw(false);
}

void Progress::advance(double work, std::size_t trials) {
  done_work_ += work;
  done_trials_ += trials;
  const double now = elapsed_s();
  const double interval = style_ == Style::Bar ? 0.1 : min_interval_s_;
  if (now - last_draw_s_ >= interval) draw(false);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  draw(true);
}

double Progress::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string format_eta(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  if (seconds < 10) return fmt::format("{:.1f} s", seconds);
  const auto total = static_cast<long long>(std::llround(seconds));
  if (total < 60) return fmt::format("{} s", total);
  if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
  return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

std::string Progress::status() const {
  const double fraction = total_work_ > 0 ? std::clamp(done_work_ / total_work_, 0.0, 1.0) : 1.0;
  const double elapsed = elapsed_s();
  const double fresh = done_work_ - resumed_work_;
  std::string eta = "ETA ?";
  if (done_work_ >= total_work_) {
    eta = "done";
  } else if (fresh > 0 && elapsed > 0) {
    eta = "ETA " + format_eta((total_work_ - done_work_) * elapsed / fresh);
  }
  return fmt::format("{}: {:3.0f}% {}/{} trials, {} elapsed, {}", label_, 100 * fraction, done_trials_, total_trials_,
                     format_eta(elapsed), eta);
}

void Progress::draw(bool final_line) {
  last_draw_s_ = elapsed_s();
  if (style_ == Style::Lines) {
    out_ << status() << "\n";
    out_.flush();
    return;
  }
  constexpr int kWidth = 30;
  const double fraction = total_work_ > 0 ? std::clamp(done_work_ / total_work_, 0.0, 1.0) : 1.0;
  const int filled = static_cast<int>(fraction * kWidth);
  // \r and the erase-to-end-of-line code redraw the bar in place on a terminal.
  out_ << fmt::format("\r[{}{}] {}\x1b[K", std::string(static_cast<std::size_t>(filled), '#'),
                      std::string(static_cast<std::size_t>(kWidth - filled), '.'), status());
  if (final_line) out_ << "\n";
  out_.flush();
}

}  // namespace collsim
