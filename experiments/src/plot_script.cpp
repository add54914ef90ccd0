#include "collsim/experiments/plot_script.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "collsim/models/formats/text_file.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/topology.hpp"

extern "C" char** environ;

namespace collsim {
namespace {

// Spawns argv[0] with argv and waits at most timeout_s (then kills it); stderr goes to
// /dev/null when `quiet`, or to `stderr_file` when given; stdout to /dev/null when `quiet_stdout`.
int spawn_and_wait(std::vector<std::string> args, bool quiet, std::string& error, double timeout_s,
                   bool quiet_stdout = false, const std::string& stderr_file = {}) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (!stderr_file.empty()) {
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  if (quiet_stdout) posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = fmt::format("cannot start {}: {}", args[0], std::strerror(rc));
    return -1;
  }
  // Poll rather than block: a script that hangs (a GUI backend waiting for a window, a
  // stuck file system) must not hang the study that already wrote its results.
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      error = fmt::format("waiting for {} failed: {}", args[0], std::strerror(errno));
      return -1;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      error = fmt::format("timed out after {:g} s and was stopped", timeout_s);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  error = "killed by a signal";
  return -1;
}

}  // namespace

std::string plot_python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

int run_plot_script(const std::string& script, std::span<const std::string> args, std::string& error,
                    double timeout_s) {
  std::vector<std::string> argv{plot_python(), script};
  argv.insert(argv.end(), args.begin(), args.end());
  return spawn_and_wait(std::move(argv), false, error, timeout_s);
}

int run_plot_script_logged(const std::string& script, std::span<const std::string> args, const PlotOutput& output,
                           std::string& error) {
  std::vector<std::string> argv{plot_python(), script};
  argv.insert(argv.end(), args.begin(), args.end());
  const int rc = spawn_and_wait(std::move(argv), false, error, output.timeout_s, output.quiet, output.error_log);
  if (output.error_log.empty()) return rc;
  if (rc == 0) {
    std::error_code ec;  // an empty log is noise; a script's warnings stay in it
    if (std::filesystem::file_size(output.error_log, ec) == 0 && !ec) std::filesystem::remove(output.error_log, ec);
    return 0;
  }
  if (rc > 0) error = fmt::format("exit code {}", rc);
  // The last line of a traceback names the exception; the full text stays in the log.
  std::ifstream log(output.error_log);
  std::string line, last;
  while (std::getline(log, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  if (!last.empty()) error += fmt::format(": {}", quote_excerpt(last, 160));
  error += fmt::format("; its error output is in {}", output.error_log);
  return rc;
}

std::optional<std::filesystem::path> available_plot_script(std::string_view name, std::ostream& out) {
  const std::filesystem::path script = std::filesystem::path(default_configs_dir()).parent_path() / "plots" / name;
  if (const FileLookup found = look_up_file(script); found.kind != FileLookup::Kind::Regular) {
    out << fmt::format("note: no plot ({} {})\n", script.string(),
                       found.kind == FileLookup::Kind::Missing ? "not found" : found.why);
    return std::nullopt;
  }
  if (!plot_python_has_module("matplotlib")) {
    out << fmt::format("note: no plot ({} cannot import matplotlib; install python3-matplotlib)\n", plot_python());
    return std::nullopt;
  }
  return script;
}

bool plot_python_has_module(std::string_view module) {
  std::string error;
  return spawn_and_wait({plot_python(), "-c", fmt::format("import {}", module)}, true, error, kPlotTimeout_s) == 0;
}

}  // namespace collsim
