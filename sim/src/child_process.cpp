#include "child_process.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "collsim/models/error.hpp"

namespace collsim::detail {
namespace {

std::string errno_text() { return std::strerror(errno); }

// waitpid that survives signals delivered to the parent.
int reap(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw InternalError(fmt::format("waitpid({}) failed: {}", pid, errno_text()));
  }
  return status;
}

bool exited_cleanly(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string describe(int status) {
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  return fmt::format("ended with wait status {}", status);
}

}  // namespace

void write_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::write(fd, bytes, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw InternalError(fmt::format("writing to the result pipe failed: {}", errno_text()));
    }
    bytes += written;
    size -= static_cast<std::size_t>(written);
  }
}

void read_exact(int fd, void* data, std::size_t size) {
  auto* bytes = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t got = ::read(fd, bytes, size);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw InternalError(fmt::format("reading the result pipe failed: {}", errno_text()));
    }
    if (got == 0) throw InternalError(fmt::format("result pipe closed with {} bytes still expected", size));
    bytes += got;
    size -= static_cast<std::size_t>(got);
  }
}

void run_in_child_process(const std::string& what, const std::function<void(int)>& child_body,
                          const std::function<void(int)>& parent_body) {
  // The child inherits unflushed stdio buffers, and SimGrid flushes stdout in the child: output
  // the caller printed before the run would otherwise appear twice.
  std::fflush(nullptr);
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw InternalError(fmt::format("{}: pipe() failed: {}", what, errno_text()));
  const pid_t pid = fork();
  if (pid < 0) {
    const std::string reason = errno_text();
    close(fds[0]);
    close(fds[1]);
    throw InternalError(fmt::format("{}: fork() failed: {}", what, reason));
  }
  if (pid == 0) {
    close(fds[0]);
    int code = 0;
    try {
      child_body(fds[1]);
    } catch (...) {
      code = 70;
    }
    close(fds[1]);
    _exit(code);
  }
  close(fds[1]);
  std::exception_ptr failure;
  try {
    parent_body(fds[0]);
  } catch (...) {
    failure = std::current_exception();
  }
  close(fds[0]);
  if (failure) {
    // A child that died closes the pipe a moment before it can be reaped: give it 100 ms to
    // become reapable, so its signal or exit code is what gets reported.
    int status = 0;
    pid_t done = 0;
    for (int attempt = 0; attempt < 100 && done == 0; ++attempt) {
      done = waitpid(pid, &status, WNOHANG);
      if (done == 0) usleep(1000);
    }
    if (done != pid) {
      // Still running (or the wait was interrupted): the result is unusable anyway.
      kill(pid, SIGKILL);
      reap(pid);
      std::rethrow_exception(failure);
    }
    if (!exited_cleanly(status)) {
      throw InternalError(fmt::format("{}: the child process {}", what, describe(status)));
    }
    std::rethrow_exception(failure);
  }
  const int status = reap(pid);
  if (!exited_cleanly(status)) throw InternalError(fmt::format("{}: the child process {}", what, describe(status)));
}

}  // namespace collsim::detail
