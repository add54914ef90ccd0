#include "collsim/cuda_validate/gpu_runner.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <cmath>
#include <functional>
#include <map>

#include "collsim/cuda_validate/input_data.hpp"
#include "collsim/models/error.hpp"
#include "cuda_check.hpp"
#include "kernels.hpp"

namespace collsim::cuda_validate {
namespace {

constexpr std::uint64_t kGateTimeout_ns = 10'000'000'000ull;

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

}  // namespace

DeviceProbe probe_devices() {
  DeviceProbe probe;
  const cudaError_t status = cudaGetDeviceCount(&probe.count);
  if (status != cudaSuccess) {
    probe.count = 0;
    probe.error = cudaGetErrorString(status);
  }
  return probe;
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
  bool gate = false;
  std::vector<Gpu> gpus;
  std::map<std::vector<Rank>, std::vector<ncclComm_t>> sub_comms;
  int* gate_flag = nullptr;              // host-mapped {release, timed out}
  int* gate_flag_device = nullptr;       // the same memory as the GPUs address it

  Impl(Rank num_gpus, bool use_gate) : n(num_gpus), gate(use_gate), gpus(num_gpus) {
    if (num_gpus < 1 || num_gpus > 8) throw ConfigError(fmt::format("GpuRunner: {} GPUs, expected 1..8", num_gpus));
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
    if (gate) {
      COLLSIM_CUDA_CHECK(cudaHostAlloc(&gate_flag, 2 * sizeof(int), cudaHostAllocMapped | cudaHostAllocPortable));
      COLLSIM_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&gate_flag_device), gate_flag, 0));
      gate_flag[0] = 0;
      gate_flag[1] = 0;
    }
  }

  ~Impl() {
    // Teardown must not throw; errors here cannot be acted on anyway.
    for (Gpu& g : gpus) {
      cudaSetDevice(g.device);
      if (g.stream != nullptr) cudaStreamSynchronize(g.stream);
    }
    for (auto& [ranks, comms] : sub_comms) {
      for (ncclComm_t c : comms) ncclCommDestroy(c);
    }
    for (Gpu& g : gpus) {
      if (g.comm != nullptr) ncclCommDestroy(g.comm);
    }
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

  volatile int* gate_host() { return gate_flag; }

  // Enqueues buffer initialisation on every participant (fill the buffer with the rank's input,
  // reset the check counters), the timing frame around `body`, and the checks; then waits and
  // reads everything back. `fill` may fill more than the buffer (the reduce micro-benchmark).
  // At most one check per GPU (they share the GPU's counters). `body` must not allocate or
  // create communicators: with --gate the GPUs are held while it runs.
  IterationResult timed_run(const std::vector<Rank>& participants, const std::function<void(Rank)>& fill,
                            const std::function<void()>& body, const std::vector<Check>& checks) {
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
    for (Rank r : participants) COLLSIM_CUDA_CHECK(cudaStreamSynchronize(gpus[r].stream));

    Gpu& timer = gpus[participants.front()];
    COLLSIM_CUDA_CHECK(cudaSetDevice(timer.device));
    for (Rank r : participants) COLLSIM_CUDA_CHECK(cudaStreamWaitEvent(timer.stream, gpus[r].ready, 0));
    if (gate) {
      gate_host()[0] = 0;
      gate_host()[1] = 0;
      launch_gate(gate_flag_device, gate_flag_device + 1, kGateTimeout_ns, timer.stream);
    }
    COLLSIM_CUDA_CHECK(cudaEventRecord(timer.start, timer.stream));
    for (Rank r : participants) {
      if (&gpus[r] == &timer) continue;
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      COLLSIM_CUDA_CHECK(cudaStreamWaitEvent(gpus[r].stream, timer.start, 0));
    }

    try {
      body();
    } catch (...) {
      if (gate) gate_host()[0] = 1;  // do not leave the GPUs spinning until the timeout
      throw;
    }

    for (Rank r : participants) {
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      COLLSIM_CUDA_CHECK(cudaEventRecord(gpus[r].end, gpus[r].stream));
    }
    COLLSIM_CUDA_CHECK(cudaSetDevice(timer.device));
    for (Rank r : participants) COLLSIM_CUDA_CHECK(cudaStreamWaitEvent(timer.stream, gpus[r].end, 0));
    COLLSIM_CUDA_CHECK(cudaEventRecord(timer.join, timer.stream));
    if (gate) gate_host()[0] = 1;

    for (const Check& c : checks) {
      Gpu& g = gpus[c.rank];
      COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
      launch_check(c.buffer, c.begin, c.count, c.mask, g.counters, g.stream);
    }

    COLLSIM_CUDA_CHECK(cudaEventSynchronize(timer.join));
    float elapsed_ms = 0.0f;
    COLLSIM_CUDA_CHECK(cudaEventElapsedTime(&elapsed_ms, timer.start, timer.join));
    for (Rank r : participants) {
      COLLSIM_CUDA_CHECK(cudaSetDevice(gpus[r].device));
      COLLSIM_CUDA_CHECK(cudaStreamSynchronize(gpus[r].stream));
    }
    if (gate && gate_host()[1] != 0) {
      throw CudaError(fmt::format("--gate: the GPUs were held for {} s without the host finishing the enqueue "
                                  "(NCCL probably waited for the GPUs); run without --gate",
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

  // The rounds of a lowered schedule, each one NCCL group over all GPUs, then the apply kernels.
  void enqueue_schedule(const LoweredSchedule& lowered) {
    std::vector<std::size_t> cursor(lowered.n, 0);
    const auto step_at = [&](Rank r, std::uint32_t round) -> const Step* {
      const auto& steps = lowered.programs[r].steps;
      return cursor[r] < steps.size() && steps[cursor[r]].round == round ? &steps[cursor[r]] : nullptr;
    };
    for (std::uint32_t round = 0; round < lowered.num_rounds; ++round) {
      for (std::size_t c = 0; c < lowered.collectives.size(); ++c) {
        const CollectiveSpec& spec = lowered.collectives[c];
        const Step* first = step_at(spec.ranks.front(), round);
        if (first == nullptr || first->kind != Step::Kind::ReduceScatter || first->collective != c) continue;
        const std::vector<ncclComm_t>& comms = comms_for(spec.ranks);
        COLLSIM_NCCL_CHECK(ncclGroupStart());
        for (std::size_t i = 0; i < spec.ranks.size(); ++i) {
          Gpu& g = gpus[spec.ranks[i]];
          float* base = g.buffer + spec.input.offset;
          COLLSIM_NCCL_CHECK(ncclReduceScatter(base, base + i * spec.block_elements, spec.block_elements, ncclFloat,
                                               ncclSum, comms[i], g.stream));
        }
        COLLSIM_NCCL_CHECK(ncclGroupEnd());
        for (Rank r : spec.ranks) ++cursor[r];
      }

      bool any = false;
      for (Rank r = 0; r < lowered.n && !any; ++r) {
        const Step* s = step_at(r, round);
        any = s != nullptr && s->kind == Step::Kind::Group;
      }
      if (!any) continue;
      COLLSIM_NCCL_CHECK(ncclGroupStart());
      for (Rank r = 0; r < lowered.n; ++r) {
        const Step* s = step_at(r, round);
        if (s == nullptr || s->kind != Step::Kind::Group) continue;
        Gpu& g = gpus[r];
        for (const PeerOp& op : s->peer_ops) {
          if (op.kind == PeerOp::Kind::Send) {
            COLLSIM_NCCL_CHECK(ncclSend(g.buffer + op.range.offset, op.range.count, ncclFloat,
                                        static_cast<int>(op.peer), g.comm, g.stream));
          } else {
            float* into = op.scratch_offset == kNoScratch ? g.buffer + op.range.offset : g.scratch + op.scratch_offset;
            COLLSIM_NCCL_CHECK(ncclRecv(into, op.range.count, ncclFloat, static_cast<int>(op.peer), g.comm, g.stream));
          }
        }
      }
      COLLSIM_NCCL_CHECK(ncclGroupEnd());
      for (Rank r = 0; r < lowered.n; ++r) {
        const Step* s = step_at(r, round);
        if (s == nullptr || s->kind != Step::Kind::Group) continue;
        Gpu& g = gpus[r];
        COLLSIM_CUDA_CHECK(cudaSetDevice(g.device));
        for (const ApplyOp& a : s->apply_ops) {
          float* dst = g.buffer + a.range.offset;
          const float* src = g.scratch + a.scratch_offset;
          if (a.op == Op::Copy) {
            COLLSIM_CUDA_CHECK(cudaMemcpyAsync(dst, src, a.range.count * sizeof(float), cudaMemcpyDeviceToDevice,
                                               g.stream));
          } else {
            launch_reduce_add(dst, src, a.range.count, g.stream);
          }
        }
        ++cursor[r];
      }
    }
  }
};

GpuRunner::GpuRunner(Rank num_gpus, bool gate) : impl_(std::make_unique<Impl>(num_gpus, gate)) {}

GpuRunner::~GpuRunner() = default;

DeviceInfo GpuRunner::device_info() {
  DeviceInfo info;
  cudaDeviceProp prop{};
  COLLSIM_CUDA_CHECK(cudaGetDeviceProperties(&prop, impl_->gpus.front().device));
  info.device = prop.name;
  int driver = 0;
  COLLSIM_CUDA_CHECK(cudaDriverGetVersion(&driver));
  info.driver_version = fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10);
  int nccl = 0;
  COLLSIM_NCCL_CHECK(ncclGetVersion(&nccl));
  // NCCL encodes 2.8.x and older as X*1000+Y*100+Z, newer as X*10000+Y*100+Z.
  info.nccl_version = nccl >= 20900 ? fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100)
                                    : fmt::format("{}.{}.{}", nccl / 1000, (nccl % 1000) / 100, nccl % 100);
  return info;
}

IterationResult GpuRunner::run_schedule(const LoweredSchedule& lowered, Rank straggler, double delay_s) {
  if (lowered.n != impl_->n) {
    throw ConfigError(fmt::format("GpuRunner: schedule for {} ranks on {} GPUs", lowered.n, impl_->n));
  }
  if (straggler >= lowered.n) throw ConfigError(fmt::format("GpuRunner: straggler {} >= n = {}", straggler, lowered.n));
  const std::vector<Rank> ranks = first_ranks(lowered.n);
  std::vector<Check> checks;
  for (Rank r : ranks) {
    impl_->ensure_capacity(r, lowered.count, lowered.programs[r].scratch_elements);
    checks.push_back(Check{r, impl_->gpus[r].buffer, 0, lowered.count, mask_of(ranks)});
  }
  // Communicators are created here, outside the timed region.
  for (const CollectiveSpec& spec : lowered.collectives) impl_->comms_for(spec.ranks);
  return impl_->timed_run(
      ranks, [&](Rank r) { impl_->fill_input(r, lowered.count); },
      [&] {
        impl_->delay(straggler, delay_s);
        impl_->enqueue_schedule(lowered);
      },
      checks);
}

IterationResult GpuRunner::run_nccl_allreduce(Rank n, std::size_t count, Rank straggler, double delay_s) {
  if (n != impl_->n || straggler >= n) {
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
      ranks, [&](Rank r) { impl_->fill_input(r, count); },
      [&] {
        impl_->delay(straggler, delay_s);
        COLLSIM_NCCL_CHECK(ncclGroupStart());
        for (Rank r : ranks) {
          auto& g = impl_->gpus[r];
          COLLSIM_NCCL_CHECK(ncclAllReduce(g.buffer, g.buffer, count, ncclFloat, ncclSum, g.comm, g.stream));
        }
        COLLSIM_NCCL_CHECK(ncclGroupEnd());
      },
      checks);
}

IterationResult GpuRunner::run_p2p(std::size_t count) {
  if (impl_->n < 2) throw ConfigError("GpuRunner: p2p needs 2 GPUs");
  impl_->ensure_capacity(0, count, 0);
  impl_->ensure_capacity(1, count, 0);
  auto& from = impl_->gpus[0];
  auto& to = impl_->gpus[1];
  return impl_->timed_run(
      {0, 1}, [&](Rank r) { impl_->fill_input(r, count); },
      [&] {
        COLLSIM_NCCL_CHECK(ncclGroupStart());
        COLLSIM_NCCL_CHECK(ncclSend(from.buffer, count, ncclFloat, 1, from.comm, from.stream));
        COLLSIM_NCCL_CHECK(ncclRecv(to.buffer, count, ncclFloat, 0, to.comm, to.stream));
        COLLSIM_NCCL_CHECK(ncclGroupEnd());
      },
      {Check{1, to.buffer, 0, count, 0b1}});
}

IterationResult GpuRunner::run_reduce_kernel(std::size_t count) {
  impl_->ensure_capacity(0, count, count);
  auto& g = impl_->gpus[0];
  return impl_->timed_run(
      {0},
      [&](Rank) {
        launch_fill_input(g.buffer, count, 0, g.stream);
        launch_fill_input(g.scratch, count, 1, g.stream);
      },
      [&] { launch_reduce_add(g.buffer, g.scratch, count, g.stream); }, {Check{0, g.buffer, 0, count, 0b11}});
}

IterationResult GpuRunner::run_reduce_scatter(const std::vector<Rank>& ranks, std::size_t count) {
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
      ranks, [&](Rank r) { impl_->fill_input(r, count); },
      [&] {
        COLLSIM_NCCL_CHECK(ncclGroupStart());
        for (std::size_t i = 0; i < ranks.size(); ++i) {
          auto& g = impl_->gpus[ranks[i]];
          COLLSIM_NCCL_CHECK(
              ncclReduceScatter(g.buffer, g.buffer + i * block, block, ncclFloat, ncclSum, comms[i], g.stream));
        }
        COLLSIM_NCCL_CHECK(ncclGroupEnd());
      },
      checks);
}

}  // namespace collsim::cuda_validate
