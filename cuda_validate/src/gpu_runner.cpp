#include "collsim/cuda_validate/gpu_runner.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "collsim/cuda_validate/execution_plan.hpp"
#include "collsim/cuda_validate/input_data.hpp"
#include "cuda_check.hpp"
#include "kernels.hpp"

namespace collsim::cuda_validate {
namespace {

// How long a gated run may keep the timer GPU spinning while the host enqueues; longer means the
// host is stuck (it waited for a GPU inside an NCCL call), and the gate gives up.
constexpr std::uint64_t kGateTimeout_ns = 10'000'000'000ull;
// Poll period while waiting for the GPUs: short against any collective, long enough not to
// steal a core from NCCL's proxy threads.
constexpr auto kPollPeriod = std::chrono::microseconds(50);
// The destructor's wait for idle streams (after an error the GPUs may never finish).
constexpr double kTeardownWait_s = 5.0;

// A buffer check enqueued after a timed run: `rank`'s buffer elements [begin, begin + count)
// must hold the sum of the inputs of the ranks in `mask`.
struct Check {
  Rank rank;
  const float* buffer;
  std::size_t begin;
  std::size_t count;
  std::uint64_t mask;
};

std::uint64_t mask_of(const std::vector<Rank>& ranks) {
  std::uint64_t mask = 0;
  for (Rank r : ranks) mask |= std::uint64_t{1} << r;
  return mask;
}

std::vector<Rank> first_ranks(Rank n) {
  std::vector<Rank> ranks(n);
  for (Rank r = 0; r < n; ++r) ranks[r] = r;
  return ranks;
}

// ncclGroupStart/End as a scope: a throw between the two (a failed ncclSend, a bad plan entry)
// must not leave NCCL's group open, which would swallow every later NCCL call of the thread.
class NcclGroup {
 public:
  NcclGroup() { COLLSIM_NCCL_CHECK(ncclGroupStart()); }
  ~NcclGroup() {
    // Already unwinding an error: close the group, its own error cannot be reported.
    if (open_) ncclGroupEnd();
  }
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;
  void end() {
    open_ = false;
    COLLSIM_NCCL_CHECK(ncclGroupEnd());
  }

 private:
  bool open_ = true;
};

std::string version_text(int version) { return fmt::format("{}.{}", version / 1000, (version % 1000) / 10); }

}  // namespace

DeviceProbe classify_device_probe(ProbeStatus status, const std::string& error, int driver_version,
                                  int runtime_version, int count) {
  DeviceProbe probe;
  probe.count = status == ProbeStatus::Ok ? count : 0;
  if (status == ProbeStatus::Ok && count > 0) {
    probe.outcome = DeviceProbe::Outcome::Available;
    return probe;
  }
  if (status == ProbeStatus::Ok || status == ProbeStatus::NoDevice) {
    probe.outcome = DeviceProbe::Outcome::NoDevice;
    probe.reason = status == ProbeStatus::Ok ? "no device found" : error;
    return probe;
  }
  // No driver installed at all: a machine without GPUs (the runtime reports "insufficient
  // driver" there too, but cudaDriverGetVersion gives 0).
  if (driver_version == 0) {
    probe.outcome = DeviceProbe::Outcome::NoDevice;
    probe.reason = fmt::format("no CUDA driver installed ({})", error);
    return probe;
  }
  probe.outcome = DeviceProbe::Outcome::Broken;
  probe.reason = status == ProbeStatus::InsufficientDriver
                     ? fmt::format("the CUDA driver {} is older than the CUDA runtime {} collsim-cuda was built with "
                                   "({}); update the driver or build with an older toolkit",
                                   version_text(driver_version), version_text(runtime_version), error)
                     : fmt::format("CUDA cannot list the devices: {} (driver {}, runtime {})", error,
                                   version_text(driver_version), version_text(runtime_version));
  return probe;
}

DeviceProbe probe_devices() {
  int driver = 0;
  int runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  const ProbeStatus kind = status == cudaSuccess                    ? ProbeStatus::Ok
                           : status == cudaErrorNoDevice            ? ProbeStatus::NoDevice
                           : status == cudaErrorInsufficientDriver ? ProbeStatus::InsufficientDriver
                                                                    : ProbeStatus::OtherError;
  const std::string error = status == cudaSuccess
                                ? std::string()
                                : fmt::format("{}: {}", cudaGetErrorName(status), cudaGetErrorString(status));
  return classify_device_probe(kind, error, driver, runtime, count);
}

struct GpuRunner::Impl {
  struct Gpu {
    int device = 0;
    cudaStream_t stream = nullptr;
    ncclComm_t comm = nullptr;
    float* buffer = nullptr;
    std::size_t buffer_elements = 0;
    float* scratch = nullptr;
    std::size_t scratch_elements = 0;
    unsigned long long* counters = nullptr;  // device: {mismatches, first bad element}
    cudaEvent_t ready = nullptr;             // buffers initialised
    cudaEvent_t start = nullptr;             // timing start (timer GPU) / released (others)
    cudaEvent_t end = nullptr;               // this GPU's work done
    cudaEvent_t join = nullptr;              // timer GPU: every GPU done
  };

  Rank n = 0;
  double timeout_s = 60.0;
  std::vector<Gpu> gpus;
  std::map<std::vector<Rank>, std::vector<ncclComm_t>> sub_comms;
  int* gate_flag = nullptr;         // host-mapped {release, timed out}
  int* gate_flag_device = nullptr;  // the same memory as the GPUs address it
  std::set<std::string> primed;     // runs already executed once ungated (see timed_run)
  bool aborted = false;             // communicators aborted after a hang: nothing runs any more

  Impl(Rank num_gpus, double timeout) : n(num_gpus), timeout_s(timeout), gpus(num_gpus) {
    if (num_gpus < 1 || num_gpus > 8) throw ConfigError(fmt::format("GpuRunner: {} GPUs, expected 1..8", num_gpus));
    if (!(timeout > 0.0)) throw ConfigError(fmt::format("GpuRunner: timeout {} s is not positive", timeout));
    int available = 0;
    COLLSIM_CUDA_CHECK(cudaGetDeviceCount(&available));
    if (available < static_cast<int>(num_gpus)) {
      throw CudaError(fmt::format("GpuRunner: {} GPUs requested but only {} CUDA devices are visible", num_gpus,
                                  available));
    }
    std::vector<int> devices(num_gpus);
    for (Rank r = 0; r < num_gpus; ++r) {
      Gpu& g = gpus[r];
      g.device = static_cast<int>(r);
      devices[r] = g.device;
      COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
      // Lazy loading (the default since CUDA 12.2) loads a kernel at its first launch, which may
      // synchronise the context; inside a gated run the gate kernel spins on the same device
      // and that would deadlock (CUDA Programming Guide, Lazy Loading, possible hazards). Load
      // every kernel of ours now, on every device.
      preload_kernels();
      COLLSIM_CUDA_CHECK(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
      COLLSIM_CUDA_CHECK(cudaEventCreateWithFlags(&g.ready, cudaEventDisableTiming));
      COLLSIM_CUDA_CHECK(cudaEventCreate(&g.start));
      COLLSIM_CUDA_CHECK(cudaEventCreateWithFlags(&g.end, cudaEventDisableTiming));
      COLLSIM_CUDA_CHECK(cudaEventCreate(&g.join));
      COLLSIM_CUDA_CHECK(cudaMalloc(&g.counters, 2 * sizeof(unsigned long long)));
    }
    if (num_gpus >= 2) {
      std::vector<ncclComm_t> comms(num_gpus);
      COLLSIM_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(num_gpus), devices.data()));
      for (Rank r = 0; r < num_gpus; ++r) gpus[r].comm = comms[r];
    }
    COLLSIM_CUDA_CHECK(cudaHostAlloc(&gate_flag, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
    COLLSIM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_flag_device), gate_flag, 0));
    gate_flag[0] = 1;
    gate_flag[1] = 0;
  }

  ~Impl() {
    // Teardown must not throw, and must not wait forever: after an error the GPUs may never
    // finish, so wait a bounded time and abort the communicators instead of destroying them.
    if (gate_flag != nullptr) gate_host()[0] = 1;
    bool idle = !aborted;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(kTeardownWait_s);
    for (Gpu& g : gpus) {
      if (g.stream == nullptr) continue;
      cudaSetDevice(g.device);
      while (idle && cudaStreamQuery(g.stream) == cudaErrorNotReady) {
        if (std::chrono::steady_clock::now() > until) idle = false;
        std::this_thread::sleep_for(kPollPeriod);
      }
    }
    if (!idle) abort_communicators();
    for (auto& [ranks, comms] : sub_comms) {
      for (ncclComm_t c : comms) ncclCommDestroy(c);
    }
    for (Gpu& g : gpus) {
      if (g.comm != nullptr) ncclCommDestroy(g.comm);
    }
    if (!idle) return;  // streams still busy: leave the memory to the process exit
    for (Gpu& g : gpus) {
      cudaSetDevice(g.device);
      cudaFree(g.buffer);
      cudaFree(g.scratch);
      cudaFree(g.counters);
      for (cudaEvent_t e : {g.ready, g.start, g.end, g.join}) {
        if (e != nullptr) cudaEventDestroy(e);
      }
      if (g.stream != nullptr) cudaStreamDestroy(g.stream);
    }
    if (gate_flag != nullptr) cudaFreeHost(gate_flag);
  }

  // ncclCommAbort frees the communicators without waiting for the GPUs; they are gone afterwards.
  void abort_communicators() {
    for (auto& [ranks, comms] : sub_comms) {
      for (ncclComm_t c : comms) ncclCommAbort(c);
    }
    sub_comms.clear();
    for (Gpu& g : gpus) {
      if (g.comm != nullptr) ncclCommAbort(g.comm);
      g.comm = nullptr;
    }
    aborted = true;
  }

  std::vector<ncclComm_t> all_communicators() const {
    std::vector<ncclComm_t> comms;
    for (const Gpu& g : gpus) {
      if (g.comm != nullptr) comms.push_back(g.comm);
    }
    for (const auto& [ranks, list] : sub_comms) comms.insert(comms.end(), list.begin(), list.end());
    return comms;
  }

  [[noreturn]] void fail_hung(const std::string& why) {
    abort_communicators();
    throw GpuHangError(fmt::format("{}; NCCL communicators aborted", why));
  }

  // Waits for `event` on the timer GPU, checking NCCL's asynchronous errors while it polls.
  void wait_for(cudaEvent_t event, double deadline_s, const std::string& what) {
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      const cudaError_t status = cudaEventQuery(event);
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) COLLSIM_CUDA_CHECK(status);
      for (ncclComm_t comm : all_communicators()) {
        ncclResult_t async = ncclSuccess;
        COLLSIM_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
        if (async != ncclSuccess && async != ncclInProgress) {
          fail_hung(fmt::format("{}: NCCL reported an asynchronous error: {}", what, ncclGetErrorString(async)));
        }
      }
      const double waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (waited_s > deadline_s) {
        fail_hung(fmt::format("{}: the GPUs did not finish within {:.3g} s (--timeout)", what, deadline_s));
      }
      std::this_thread::sleep_for(kPollPeriod);
    }
  }

  void ensure_capacity(Rank r, std::size_t buffer_elements, std::size_t scratch_elements) {
    Gpu& g = gpus[r];
    COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
    if (buffer_elements > g.buffer_elements) {
      COLLSIM_CUDA_CHECK(cudaStreamSynchronize(g.stream));
      COLLSIM_CUDA_CHECK(cudaFree(g.buffer));
      g.buffer = nullptr;
      g.buffer_elements = 0;
      COLLSIM_CUDA_CHECK(cudaMalloc(&g.buffer, buffer_elements * sizeof(float)));
      g.buffer_elements = buffer_elements;
    }
    if (scratch_elements > g.scratch_elements) {
      COLLSIM_CUDA_CHECK(cudaStreamSynchronize(g.stream));
      COLLSIM_CUDA_CHECK(cudaFree(g.scratch));
      g.scratch = nullptr;
      g.scratch_elements = 0;
      COLLSIM_CUDA_CHECK(cudaMalloc(&g.scratch, scratch_elements * sizeof(float)));
      g.scratch_elements = scratch_elements;
    }
  }

  const std::vector<ncclComm_t>& comms_for(const std::vector<Rank>& ranks) {
    auto it = sub_comms.find(ranks);
    if (it != sub_comms.end()) return it->second;
    std::vector<int> devices;
    for (Rank r : ranks) devices.push_back(gpus[r].device);
    std::vector<ncclComm_t> comms(ranks.size());
    COLLSIM_NCCL_CHECK(ncclCommInitAll(comms.data(), static_cast<int>(comms.size()), devices.data()));
    return sub_comms.emplace(ranks, std::move(comms)).first->second;
  }

  // Inside a timed body communicators must already exist (creating one waits for every GPU).
  const std::vector<ncclComm_t>& existing_comms(const std::vector<Rank>& ranks) const {
    const auto it = sub_comms.find(ranks);
    COLLSIM_ASSERT(it != sub_comms.end(), "sub-communicators are created before the timed run");
    return it->second;
  }

  volatile int* gate_host() { return gate_flag; }

  // Releases the gate when it leaves scope, so that a throw between launch_gate and the end of
  // the enqueue does not leave the timer GPU spinning until the gate's timeout.
  struct GateRelease {
    Impl* impl = nullptr;
    ~GateRelease() {
      if (impl != nullptr) impl->gate_host()[0] = 1;
    }
  };

  // Enqueues buffer initialisation on every participant (fill the buffer with the rank's input,
  // reset the check counters), the timing frame around `body`, and the checks; then waits and
  // reads everything back. `fill` may fill more than the buffer (the reduce micro-benchmark).
  // At most one check per GPU (they share the GPU's counters). `body` must not allocate or
  // create communicators: in a gated run the GPUs are held while it runs.
  //
  // A gated run of a `key` not seen before first runs once ungated, untimed: NCCL sets up its
  // connections and loads its kernels at the first use of a peer or size class, which may wait
  // for the GPUs; behind the gate that wait would never end.
  IterationResult timed_run(const std::string& key, const std::vector<Rank>& participants,
                            const std::function<void(Rank)>& fill, const std::function<void()>& body,
                            const std::vector<Check>& checks, bool gated, double delay_s) {
    if (aborted) throw GpuHangError("GpuRunner: the NCCL communicators were aborted after an earlier hang");
    if (gated && primed.insert(key).second) timed_run_once(participants, fill, body, checks, false, delay_s);
    return timed_run_once(participants, fill, body, checks, gated, delay_s);
  }

  IterationResult timed_run_once(const std::vector<Rank>& participants, const std::function<void(Rank)>& fill,
                                 const std::function<void()>& body, const std::vector<Check>& checks, bool gated,
                                 double delay_s) {
    for (std::size_t i = 0; i < checks.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) COLLSIM_ASSERT(checks[i].rank != checks[j].rank, "one check per GPU");
    }
    const unsigned long long reset[2] = {0ull, ~0ull};
    for (Rank r : participants) {
      Gpu& g = gpus[r];
      COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
      fill(r);
      COLLSIM_CUDA_CHECK(cudaMemcpyAsync(g.counters, reset, sizeof(reset), cudaMemcpyHostToDevice, g.stream));
      COLLSIM_CUDA_CHECK(cudaEventRecord(g.ready, g.stream));
    }
    // The copies of `reset` above read host memory asynchronously; make sure they are done before
    // this stack frame could be left by an exception below.
    for (Rank r : participants) {
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      wait_for(gpus[r].ready, timeout_s, "buffer initialisation");
    }

    Gpu& timer = gpus[participants.front()];
    COLLSIM_CUDA_CHECK(cudaSetDevice(timer.device));
    for (Rank r : participants) COLLSIM_CUDA_CHECK(cudaStreamWaitEvent(timer.stream, gpus[r].ready, 0));
    GateRelease release;
    if (gated) {
      gate_host()[1] = 0;
      gate_host()[0] = 0;
      release.impl = this;
      launch_gate(gate_flag_device, gate_flag_device + 1, kGateTimeout_ns, timer.stream);
    }
    COLLSIM_CUDA_CHECK(cudaEventRecord(timer.start, timer.stream));
    for (Rank r : participants) {
      if (&gpus[r] == &timer) continue;
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      COLLSIM_CUDA_CHECK(cudaStreamWaitEvent(gpus[r].stream, timer.start, 0));
    }

    body();

    for (Rank r : participants) {
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      COLLSIM_CUDA_CHECK(cudaEventRecord(gpus[r].end, gpus[r].stream));
    }
    COLLSIM_CUDA_CHECK(cudaSetDevice(timer.device));
    for (Rank r : participants) COLLSIM_CUDA_CHECK(cudaStreamWaitEvent(timer.stream, gpus[r].end, 0));
    COLLSIM_CUDA_CHECK(cudaEventRecord(timer.join, timer.stream));
    if (gated) gate_host()[0] = 1;

    for (const Check& c : checks) {
      Gpu& g = gpus[c.rank];
      COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
      launch_check(c.buffer, c.begin, c.count, c.mask, g.counters, g.stream);
    }

    COLLSIM_CUDA_CHECK(cudaSetDevice(timer.device));
    wait_for(timer.join, delay_s + timeout_s, "timed run");
    float elapsed_ms = 0.0f;
    COLLSIM_CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, timer.start, timer.join));
    for (Rank r : participants) {
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      COLLSIM_CUDA_CHECK(cudaEventRecord(gpus[r].end, gpus[r].stream));
      wait_for(gpus[r].end, timeout_s, "result check");
    }
    if (gated && gate_host()[1] != 0) {
      throw CudaError(fmt::format("gated run: the GPUs were held for {} s without the host finishing the enqueue "
                                  "(NCCL probably waited for the GPUs); rerun with --launch ungated",
                                  kGateTimeout_ns / 1'000'000'000ull));
    }

    IterationResult result;
    result.time_s = static_cast<double>(elapsed_ms) * 1e-3;
    for (const Check& c : checks) {
      Gpu& g = gpus[c.rank];
      unsigned long long counters[2] = {0, 0};
      COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
      COLLSIM_CUDA_CHECK(cudaMemcpy(counters, g.counters, sizeof(counters), cudaMemcpyDeviceToHost));
      if (counters[0] == 0) continue;
      const std::size_t element = counters[1];
      float got = 0.0f;
      COLLSIM_CUDA_CHECK(cudaMemcpy(&got, c.buffer + element, sizeof(float), cudaMemcpyDeviceToHost));
      if (result.mismatches == 0) {
        result.first_mismatch = fmt::format("GPU {} element {}: got {}, expected {}", c.rank, element, got,
                                            expected_sum(c.mask, element));
      }
      result.mismatches += counters[0];
    }
    return result;
  }

  void fill_input(Rank r, std::size_t count) { launch_fill_input(gpus[r].buffer, count, r, gpus[r].stream); }

  void delay(Rank straggler, double delay_s) {
    if (delay_s <= 0.0) return;
    COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[straggler].device));
    launch_spin(static_cast<std::uint64_t>(std::llround(delay_s * 1e9)), gpus[straggler].stream);
  }

  float* address(Gpu& g, const DeviceRegion& region) {
    return (region.memory == DeviceRegion::Memory::Buffer ? g.buffer : g.scratch) + region.range.offset;
  }

  // The plan, call for call: every decision (grouping, order, streams, buffers) was made by
  // build_execution_plan, which the CPU tests execute too.
  void enqueue_plan(const ExecutionPlan& plan) {
    for (const PlanGroup& group : plan.groups) {
      NcclGroup nccl_group;
      for (const NcclCall& call : group.calls) {
        Gpu& g = gpus[call.rank];
        float* data = address(g, call.data);
        const std::size_t count = call.data.range.count;
        switch (call.kind) {
          case NcclCall::Kind::Send:
            COLLSIM_NCCL_CHECK(ncclSend(data, count, ncclFloat, static_cast<int>(call.peer), g.comm, g.stream));
            break;
          case NcclCall::Kind::Recv:
            COLLSIM_NCCL_CHECK(ncclRecv(data, count, ncclFloat, static_cast<int>(call.peer), g.comm, g.stream));
            break;
          case NcclCall::Kind::ReduceScatter: {
            const ncclComm_t comm = existing_comms(plan.collectives[call.collective].ranks)[call.comm_rank];
            COLLSIM_NCCL_CHECK(
                ncclReduceScatter(g.buffer + call.input.offset, data, count, ncclFloat, ncclSum, comm, g.stream));
            break;
          }
        }
      }
      nccl_group.end();
      for (const StreamOp& op : group.after) {
        Gpu& g = gpus[op.rank];
        COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
        float* dst = g.buffer + op.range.offset;
        const float* src = g.scratch + op.scratch_offset;
        if (op.op == Op::Copy) {
          COLLSIM_CUDA_CHECK(
              cudaMemcpyAsync(dst, src, op.range.count * sizeof(float), cudaMemcpyDeviceToDevice, g.stream));
        } else {
          launch_reduce_add(dst, src, op.range.count, g.stream);
        }
      }
    }
  }
};

GpuRunner::GpuRunner(Rank num_gpus, double timeout_s) : impl_(std::make_unique<Impl>(num_gpus, timeout_s)) {}

GpuRunner::~GpuRunner() = default;

DeviceInfo GpuRunner::device_info() {
  DeviceInfo info;
  cudaDeviceProp prop{};
  COLLSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, impl_->gpus.front().device));
  info.device = prop.name;
  int driver = 0;
  COLLSIM_CUDA_CHECK(cudaDriverGetVersion(&driver));
  info.driver_version = version_text(driver);
  int nccl = 0;
  COLLSIM_NCCL_CHECK(ncclGetVersion(&nccl));
  // NCCL encodes 2.8.x and older as X*1000+Y*100+Z, newer as X*10000+Y*100+Z.
  info.nccl_version = nccl >= 20900 ? fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100)
                                    : fmt::format("{}.{}.{}", nccl / 1000, (nccl % 1000) / 100, nccl % 100);
  return info;
}

IterationResult GpuRunner::run_schedule(const LoweredSchedule& lowered, Rank straggler, double delay_s, bool gated) {
  if (lowered.n != impl_->n) {
    throw ConfigError(fmt::format("GpuRunner: schedule for {} ranks on {} GPUs", lowered.n, impl_->n));
  }
  if (straggler >= lowered.n) throw ConfigError(fmt::format("GpuRunner: straggler {} >= n = {}", straggler, lowered.n));
  const ExecutionPlan plan = build_execution_plan(lowered);
  const std::vector<Rank> ranks = first_ranks(lowered.n);
  std::vector<Check> checks;
  for (Rank r : ranks) {
    impl_->ensure_capacity(r, plan.count, plan.scratch_elements[r]);
    checks.push_back(Check{r, impl_->gpus[r].buffer, 0, plan.count, mask_of(ranks)});
  }
  // Communicators are created here, outside the timed region.
  std::string key = fmt::format("schedule {} count {}", plan.algorithm, plan.count);
  for (const CollectiveSpec& spec : plan.collectives) {
    impl_->comms_for(spec.ranks);
    key += fmt::format(" rs [{}]", fmt::join(spec.ranks, ","));
  }
  return impl_->timed_run(
      key, ranks, [&](Rank r) { impl_->fill_input(r, plan.count); },
      [&] {
        impl_->delay(straggler, delay_s);
        impl_->enqueue_plan(plan);
      },
      checks, gated, delay_s);
}

IterationResult GpuRunner::run_nccl_allreduce(Rank n, std::size_t count, Rank straggler, double delay_s, bool gated) {
  if (n != impl_->n || straggler >= n || n < 2) {
    throw ConfigError(fmt::format("GpuRunner: ncclAllReduce on {} ranks (straggler {}) with {} GPUs", n, straggler,
                                  impl_->n));
  }
  const std::vector<Rank> ranks = first_ranks(n);
  std::vector<Check> checks;
  for (Rank r : ranks) {
    impl_->ensure_capacity(r, count, 0);
    checks.push_back(Check{r, impl_->gpus[r].buffer, 0, count, mask_of(ranks)});
  }
  return impl_->timed_run(
      fmt::format("allreduce {}", count), ranks, [&](Rank r) { impl_->fill_input(r, count); },
      [&] {
        impl_->delay(straggler, delay_s);
        NcclGroup group;
        for (Rank r : ranks) {
          auto& g = impl_->gpus[r];
          COLLSIM_NCCL_CHECK(ncclAllReduce(g.buffer, g.buffer, count, ncclFloat, ncclSum, g.comm, g.stream));
        }
        group.end();
      },
      checks, gated, delay_s);
}

IterationResult GpuRunner::run_p2p(std::size_t count, bool gated) {
  if (impl_->n < 2) throw ConfigError("GpuRunner: p2p needs 2 GPUs");
  impl_->ensure_capacity(0, count, 0);
  impl_->ensure_capacity(1, count, 0);
  auto& from = impl_->gpus[0];
  auto& to = impl_->gpus[1];
  return impl_->timed_run(
      fmt::format("p2p {}", count), {0, 1}, [&](Rank r) { impl_->fill_input(r, count); },
      [&] {
        NcclGroup group;
        COLLSIM_NCCL_CHECK(ncclSend(from.buffer, count, ncclFloat, 1, from.comm, from.stream));
        COLLSIM_NCCL_CHECK(ncclRecv(to.buffer, count, ncclFloat, 0, to.comm, to.stream));
        group.end();
      },
      {Check{1, to.buffer, 0, count, 0b1}}, gated, 0.0);
}

IterationResult GpuRunner::run_reduce_kernel(std::size_t count, bool gated) {
  impl_->ensure_capacity(0, count, count);
  auto& g = impl_->gpus[0];
  return impl_->timed_run(
      fmt::format("reduce {}", count), {0},
      [&](Rank) {
        launch_fill_input(g.buffer, count, 0, g.stream);
        launch_fill_input(g.scratch, count, 1, g.stream);
      },
      [&] { launch_reduce_add(g.buffer, g.scratch, count, g.stream); }, {Check{0, g.buffer, 0, count, 0b11}}, gated,
      0.0);
}

IterationResult GpuRunner::run_reduce_scatter(const std::vector<Rank>& ranks, std::size_t count, bool gated) {
  if (ranks.size() < 2 || count % ranks.size() != 0) {
    throw ConfigError(fmt::format("GpuRunner: ReduceScatter of {} elements among {} ranks", count, ranks.size()));
  }
  for (Rank r : ranks) {
    if (r >= impl_->n) throw ConfigError(fmt::format("GpuRunner: ReduceScatter rank {} >= {} GPUs", r, impl_->n));
  }
  const std::size_t block = count / ranks.size();
  std::vector<Check> checks;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    impl_->ensure_capacity(ranks[i], count, 0);
    checks.push_back(Check{ranks[i], impl_->gpus[ranks[i]].buffer, i * block, block, mask_of(ranks)});
  }
  const std::vector<ncclComm_t>& comms = impl_->comms_for(ranks);
  return impl_->timed_run(
      fmt::format("reduce_scatter {} [{}]", count, fmt::join(ranks, ",")), ranks,
      [&](Rank r) { impl_->fill_input(r, count); },
      [&] {
        NcclGroup group;
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          auto& g = impl_->gpus[ranks[i]];
          COLLSIM_NCCL_CHECK(
              ncclReduceScatter(g.buffer, g.buffer + i * block, block, ncclFloat, ncclSum, comms[i], g.stream));
        }
        group.end();
      },
      checks, gated, 0.0);
}

IterationResult GpuRunner::run_empty(const std::vector<Rank>& ranks, bool gated) {
  if (ranks.empty()) throw ConfigError("GpuRunner: an empty run needs at least one GPU");
  for (Rank r : ranks) {
    if (r >= impl_->n) throw ConfigError(fmt::format("GpuRunner: empty run on GPU {} >= {} GPUs", r, impl_->n));
    impl_->ensure_capacity(r, 1, 0);
  }
  return impl_->timed_run(
      fmt::format("empty [{}]", fmt::join(ranks, ",")), ranks, [&](Rank r) { impl_->fill_input(r, 1); }, [] {}, {},
      gated, 0.0);
}

}  // namespace collsim::cuda_validate
