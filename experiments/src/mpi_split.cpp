// The only file that includes mpi.h (when COLLSIM_WITH_MPI is defined by the build).
#include "collsim/experiments/mpi_split.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <deque>

#include "collsim/models/error.hpp"

#ifdef COLLSIM_WITH_MPI
#include <mpi.h>
#endif

namespace collsim {
namespace {

class SingleProcess final : public WorkSplit {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void broadcast(std::string& /*bytes*/) override {}
  void send_to_root(std::string /*message*/) override {
    throw InternalError("send_to_root called in a single-process run");
  }
  std::optional<std::string> receive(bool /*wait*/) override { return std::nullopt; }
  void finish_sends() override {}
  void abort(int /*code*/) override {}
};

#ifdef COLLSIM_WITH_MPI

constexpr int kResultTag = 17;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(fmt::format("MPI call {} failed (code {})", what, rc));
}

class MpiSplit final : public WorkSplit {
 public:
  MpiSplit() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw ConfigError("cannot initialise MPI (MPI_Init failed)");
      owns_init_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSplit() override {
    // Undelivered sends must complete before MPI_Finalize; errors here cannot be reported.
    for (auto& pending : pending_) MPI_Wait(&pending.request, MPI_STATUS_IGNORE);
    if (owns_init_) MPI_Finalize();
  }
  MpiSplit(const MpiSplit&) = delete;
  MpiSplit& operator=(const MpiSplit&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void broadcast(std::string& bytes) override {
    unsigned long long length = bytes.size();
    check(MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
    bytes.resize(length);
    if (length > 0) check(MPI_Bcast(bytes.data(), static_cast<int>(length), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }

  void send_to_root(std::string message) override {
    pending_.push_back(Pending{std::move(message), MPI_REQUEST_NULL});
    Pending& p = pending_.back();
    check(MPI_Isend(p.bytes.data(), static_cast<int>(p.bytes.size()), MPI_CHAR, 0, kResultTag, MPI_COMM_WORLD,
                    &p.request),
          "MPI_Isend");
    // Drop completed sends from the front so the queue stays short in long runs.
    while (!pending_.empty()) {
      int done = 0;
      check(MPI_Test(&pending_.front().request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (!done) break;
      pending_.pop_front();
    }
  }

  std::optional<std::string> receive(bool wait) override {
    MPI_Status status;
    int available = 0;
    if (wait) {
      check(MPI_Probe(MPI_ANY_SOURCE, kResultTag, MPI_COMM_WORLD, &status), "MPI_Probe");
      available = 1;
    } else {
      check(MPI_Iprobe(MPI_ANY_SOURCE, kResultTag, MPI_COMM_WORLD, &available, &status), "MPI_Iprobe");
    }
    if (!available) return std::nullopt;
    int length = 0;
    MPI_Get_count(&status, MPI_CHAR, &length);
    std::string bytes(static_cast<std::size_t>(length), '\0');
    check(MPI_Recv(bytes.data(), length, MPI_CHAR, status.MPI_SOURCE, kResultTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Recv");
    return bytes;
  }

  void finish_sends() override {
    for (auto& p : pending_) check(MPI_Wait(&p.request, MPI_STATUS_IGNORE), "MPI_Wait");
    pending_.clear();
  }

  void abort(int code) override {
    if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }

 private:
  struct Pending {
    std::string bytes;
    MPI_Request request;
  };
  int rank_ = 0, size_ = 1;
  bool owns_init_ = false;
  std::deque<Pending> pending_;  // deque: elements never move, so their buffers stay valid
};

// Open MPI, MPICH/Hydra and Slurm set these in every process they start.
bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

#endif

}  // namespace

std::unique_ptr<WorkSplit> make_single_process_split() { return std::make_unique<SingleProcess>(); }

std::unique_ptr<WorkSplit> make_work_split() {
#ifdef COLLSIM_WITH_MPI
  if (launched_by_mpi()) return std::make_unique<MpiSplit>();
#endif
  return make_single_process_split();
}

bool mpi_built_in() {
#ifdef COLLSIM_WITH_MPI
  return true;
#else
  return false;
#endif
}

}  // namespace collsim
