// Spreading a study over processes. The runner sees only this interface; the MPI implementation
// lives in mpi_split.cpp and is compiled only when the build found MPI (COLLSIM_MPI), so a build
// without MPI still runs every study in one process.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace collsim {

class WorkSplit {
 public:
  virtual ~WorkSplit() = default;
  /// This process's rank, 0 = the root that writes the results.
  virtual int rank() const = 0;
  /// Number of processes (1 without MPI).
  virtual int size() const = 0;
  /// Makes every rank's `bytes` equal to the root's.
  virtual void broadcast(std::string& bytes) = 0;
  /// Non-root: queues `message` for the root, without waiting for it to be received. Messages
  /// from one rank arrive in the order they were sent.
  virtual void send_to_root(std::string message) = 0;
  /// Root: the next message from any rank, or nothing when none is pending and !wait.
  virtual std::optional<std::string> receive(bool wait) = 0;
  /// Non-root: blocks until every queued message has been delivered.
  virtual void finish_sends() = 0;
  /// Ends every process of the job with `code` (MPI_Abort), for errors one rank cannot report
  /// to the others; a single process just returns.
  virtual void abort(int code) = 0;
};

/// MPI when this binary was built with MPI and was started by mpirun/mpiexec (detected from the
/// launcher's environment, so a plain `collsim run` never initialises MPI); else one process.
/// MPI is initialised by the first call and finalised when the returned object is destroyed.
/// Throws ConfigError when MPI cannot be initialised.
std::unique_ptr<WorkSplit> make_work_split();

/// The single-process split (rank 0 of 1).
std::unique_ptr<WorkSplit> make_single_process_split();

/// True when this binary was built with MPI support.
bool mpi_built_in();

}  // namespace collsim
