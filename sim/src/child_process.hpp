// Running a computation in a forked child process and streaming its result back through a pipe.
//
// Why: SimGrid 3.32 keeps its engine, clock, network model and configuration in process-wide
// globals; a second s4u::Engine in the same process refuses to change the network model and
// starts at the previous run's clock. Every simgrid run therefore happens in a fresh child,
// which also makes concurrent runs from several threads independent of each other.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>

namespace collsim::detail {

/// Writes every byte of `data` to `fd`, retrying on EINTR and partial writes. Throws
/// InternalError if the pipe fails (e.g. the reader has gone).
void write_all(int fd, const void* data, std::size_t size);

/// Reads exactly `size` bytes from `fd` into `data`. Throws InternalError on a read error or
/// if the stream ends early.
void read_exact(int fd, void* data, std::size_t size);

template <class T>
void write_value(int fd, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  write_all(fd, &value, sizeof(T));
}

template <class T>
T read_value(int fd) {
  static_assert(std::is_trivially_copyable_v<T>);
  T value;
  read_exact(fd, &value, sizeof(T));
  return value;
}

/// Forks. The child runs child_body(write_fd) and exits with _exit (no atexit handlers, no
/// static destructors, no stdio flush of the parent's buffers); if child_body throws, the child
/// exits with a non-zero code. The parent runs parent_body(read_fd), which must read what the
/// child writes, then reaps the child. `what` names the computation in error messages.
///
/// Throws whatever parent_body throws when the child exited normally; InternalError when pipe
/// or fork fail, or when the child died from a signal or exited with a non-zero code (the child
/// is killed and reaped if parent_body throws while it is still running).
/// Preconditions: the child must only touch state it owns (a multi-threaded parent's other
/// threads do not exist in the child, so their locks must not be needed there).
void run_in_child_process(const std::string& what, const std::function<void(int)>& child_body,
                          const std::function<void(int)>& parent_body);

}  // namespace collsim::detail
