// The SimGrid network side of the simgrid engine, on SimGrid's public s4u API (3.32). The
// per-rank rules are the execution core's (execution_core.hpp, RankWalk, the "walker" below);
// this file only carries the walker's flows on a SimGrid platform and tells it when they end and
// when its wake-up dates come. It uses no
// SimGrid internal (no kernel or simix header, no simcall of its own).
//
// How, and why this way (SimGrid 3.32 specifics):
//  * A flow is a two-host parallel execution (s4u::Exec with a 2x2 byte matrix), which the
//    default host model turns into exactly one CM02 network flow from the first host to the
//    second, with a byte count that may be fractional (Comm::sendto takes whole bytes, and its
//    kernel-detached comms all sit in one list that is scanned on every completion).
//  * 3.32 signals no completion of an activity nobody waits for (Activity::on_completion fires
//    from wait/test only), so flows are waited for: worker actors (at most kMaxWorkers) each wait
//    with Exec::wait_any_for on the flows they started, the timeout being their next wake-up
//    date. An Exec sits in the activity list of the actor that creates it, and SimGrid scans
//    that list when the Exec ends: spread over workers, lists and wait sets stay short.
//  * Whatever a worker observes (a flow's end, a wake-up) it hands to the walker; the wake-ups
//    the walker asks for in return stay with that worker, and so do new flows while its share is
//    not much above the average. Otherwise a flow goes to its sender's worker, and if that worker
//    is blocked in its wait, its doorbell is rung (new_doorbell). Keeping flows where they are
//    saves doorbells; handing some on keeps one worker from collecting them all.
//  * SimGrid runs one actor at a time and switches only inside simcalls; the walker makes none,
//    so its state is never seen half-updated by another worker.
#include "simgrid_simulation.hpp"

#include <fmt/format.h>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>

#include <algorithm>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "collsim/models/error.hpp"
#include "execution_core.hpp"
#include "simgrid_platform.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define COLLSIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COLLSIM_ASAN 1
#endif
#endif
#ifndef COLLSIM_ASAN
#define COLLSIM_ASAN 0
#endif

namespace sg4 = simgrid::s4u;

namespace collsim::detail {
namespace {

// Workers: more means shorter activity lists and wait sets, fewer means fewer actors to switch to.
constexpr std::uint32_t kMaxWorkers = 64;

// Exact alpha-beta configuration. CM02 is the plain max-min flow model; its defaults are already
// factor 1 and weight-S 0, but they are pinned so a changed default cannot slip in.
// Full, not Lazy: SimGrid 3.32's lazy update gives wrong, order-dependent max-min shares when
// several flows contend for one link (a flow measured 12% early). Full re-solves the shares at
// every event; on a ring (one flow per link) it costs no measurable time.
// Precisions, in SimGrid's time unit (microseconds, kSimGridUnitsPerSecond): event dates to
// 1e-9 us = 1e-15 s (the default 1e-9 would merge events a nanosecond apart and finish flows
// early); the solver to 1e-9, which is both the absolute tolerance on a link's usage (sum of
// 1/latency, ~1 per flow in microseconds: rounding residues of thousands of flows stay below it)
// and the relative tolerance on a link's remaining bandwidth, so rates stay exact to ~1e-9.
// collsim compares engines to 1e-9 relative on microsecond-scale times.
// Only argv can set these: the network keys do not exist before the Engine is constructed, and
// the model cannot be changed after.
constexpr const char* kSimGridArgs[] = {
    "collsim",
    "--log=root.thresh:critical",
    "--cfg=network/model:CM02",
    "--cfg=network/optim:Full",
    "--cfg=network/crosstraffic:0",
    "--cfg=network/TCP-gamma:0",
    "--cfg=network/latency-factor:1",
    "--cfg=network/bandwidth-factor:1",
    "--cfg=network/weight-S:0",
    "--cfg=surf/precision:1e-9",
    "--cfg=maxmin/precision:1e-9",
#if COLLSIM_ASAN
    // SimGrid's default contexts switch stacks behind AddressSanitizer's back; threads do not.
    "--cfg=contexts/factory:thread",
#endif
};

// Dates cross the SimGrid boundary in its time unit; collsim keeps seconds.
double now_s() { return sg4::Engine::get_clock() / kSimGridUnitsPerSecond; }

// Distinct (src, dst) pairs: a ring at n = 4096 has 33.5 M transfers but only 4096 pairs. A bit
// matrix while it is small, a hash set beyond.
std::vector<GpuPair> used_pairs(const Schedule& s) {
  std::vector<GpuPair> pairs;
  const std::uint64_t n = s.num_ranks();
  if (n <= 16384) {
    std::vector<bool> seen(n * n, false);
    for (const Phase& phase : s.phases) {
      for (const Transfer& t : phase.transfers()) {
        const std::uint64_t key = t.src * n + t.dst;
        if (seen[key]) continue;
        seen[key] = true;
        pairs.emplace_back(t.src, t.dst);
      }
    }
  } else {
    std::unordered_map<std::uint64_t, bool> seen;
    for (const Phase& phase : s.phases) {
      for (const Transfer& t : phase.transfers()) {
        if (seen.emplace(t.src * n + t.dst, true).second) pairs.emplace_back(t.src, t.dst);
      }
    }
  }
  return pairs;
}

// A date a worker waits for: a walker wake-up, or the end of a flow that SimGrid does not carry.
struct Timer {
  double date_s;
  std::uint64_t seq;  // creation order: equal dates fire first come, first served
  bool is_flow_end;
  Wake wakeup;         // when !is_flow_end
  std::uint64_t flow;  // when is_flow_end: flow_tag(transfer, round)
};
struct LaterTimer {
  bool operator()(const Timer& a, const Timer& b) const {
    return a.date_s != b.date_s ? a.date_s > b.date_s : a.seq > b.seq;
  }
};

// A flow is named by its transfer and that transfer's global round, the walker's two handles.
std::uint64_t flow_tag(std::uint32_t g, std::uint32_t round) { return (std::uint64_t{round} << 32) | g; }

struct PendingFlow {
  std::uint64_t flow;
  Rank src;
  Rank dst;
  double bytes;
};

struct Worker {
  // execs[0] is the doorbell; execs[1..] are the flows in flight that this worker started, and
  // flows[i] the walker's id of execs[i].
  // Kept as ActivityPtr: Exec::wait_any_for would copy an ExecPtr vector into one at every wait.
  std::vector<sg4::ActivityPtr> execs;
  std::vector<std::uint64_t> flows;
  std::vector<PendingFlow> pending;  // handed to this worker, not started yet
  std::vector<std::uint32_t> to_ring; // workers this one handed flows to while they waited
  std::priority_queue<Timer, std::vector<Timer>, LaterTimer> timers;
  bool waiting = false;  // blocked in wait_any_for: new work needs the doorbell
  bool rung = false;     // its doorbell is (about to be) rung
};

class SimGridNetwork;
using Walker = RankWalk<SimGridNetwork>;

class SimGridNetwork {
 public:
  SimGridNetwork(const RankRounds& index, const Topology& topology, Walker& walker);
  ~SimGridNetwork();

  /// Runs the simulation to its end. Throws InternalError if a flow failed or a worker stopped
  /// on an error. (Were the walker ever to stall, SimGrid would report a deadlock and abort the
  /// child process, which the parent reports as an InternalError.)
  void run();

  // The network side of RankWalk.
  void start_flow(std::uint32_t g, std::uint32_t round, double now_s);
  void wake_at(double date_s, const Wake& wakeup);

 private:
  void worker_loop(std::uint32_t k);
  bool wait_once(std::uint32_t k);
  void after_walker(std::uint32_t k);
  void fire_due(Worker& worker, double due_s);
  void launch_pending(std::uint32_t k);
  void new_doorbell(std::uint32_t k);
  void stop_all(std::uint32_t k);
  void add_timer(Worker& worker, Timer timer) {
    timer.seq = next_seq_++;
    worker.timers.push(timer);
  }

  void flow_done(std::uint64_t flow, double now_s) {
    walker_.data_arrived(*this, static_cast<std::uint32_t>(flow), static_cast<std::uint32_t>(flow >> 32), now_s);
  }
  bool all_done() const { return walker_.finished_transfers() == index_.num_transfers(); }

  const RankRounds& index_;
  const Topology& topology_;
  Walker& walker_;
  // Declared before the workers so that it is destroyed after them: every ExecPtr must go first.
  std::unique_ptr<sg4::Engine> engine_;
  std::vector<sg4::Host*> hosts_;
  std::vector<Worker> workers_;
  std::uint32_t current_ = 0;  // the worker whose actor calls the walker (its requests go there)
  bool started_ = false;       // false while the walker asks for its first wake-ups
  bool quit_ = false;
  std::size_t in_flight_ = 0;  // flows started or handed out, not finished
  std::uint64_t next_seq_ = 0;
  std::string error_;
};

SimGridNetwork::SimGridNetwork(const RankRounds& index, const Topology& topology, Walker& walker)
    : index_(index), topology_(topology), walker_(walker) {
  const Schedule& schedule = index.schedule();
  std::vector<char*> argv;
  for (const char* arg : kSimGridArgs) argv.push_back(const_cast<char*>(arg));
  argv.push_back(nullptr);
  int argc = static_cast<int>(argv.size()) - 1;
  engine_ = std::make_unique<sg4::Engine>(&argc, argv.data());
  hosts_ = build_platform(topology_, used_pairs(schedule), schedule.num_switch_ranks).hosts;
  workers_.resize(std::min<std::uint32_t>(schedule.n, kMaxWorkers));
}

SimGridNetwork::~SimGridNetwork() {
  // Activities still referenced (the doorbells, flows after an error) go while their Engine exists.
  workers_.clear();
}

void SimGridNetwork::run() {
  // The first wake-ups are spread over the workers by rank, so that each starts a share of the flows.
  walker_.begin(*this);
  started_ = true;
  for (std::uint32_t k = 0; k < workers_.size(); ++k) {
    sg4::Actor::create(fmt::format("worker{}", k), hosts_[k], [this, k] { worker_loop(k); });
  }
  engine_->run();
  if (!error_.empty()) throw InternalError(fmt::format("simgrid engine: {}", error_));
}

// A flow goes to its sender's worker if that worker is not blocked in a wait (it starts it
// before it waits again: no doorbell needed), else stays with the worker that asked for it while
// that worker's share is not much above the average, else goes to the sender's worker with a
// doorbell. Always keeping flows would let a few workers collect them all over time (each
// follow-up flow would be started by the worker that saw its predecessor end), and every wait
// scans all of a worker's flows.
void SimGridNetwork::start_flow(std::uint32_t g, std::uint32_t round, double now_s) {
  const Transfer& t = index_.transfer(g, round);
  const Rank src = t.src;
  const Rank dst = t.dst;
  const double bytes = walker_.rules().bytes(t);
  const std::uint64_t flow = flow_tag(g, round);
  Worker& here = workers_[current_];
  if (!(bytes > 0)) {
    // A parallel execution cannot carry 0 bytes; a 0-byte CM02 flow costs its route latency.
    add_timer(here, Timer{now_s + topology_.route_latency_s(src, dst), 0, true, {}, flow});
    return;
  }
  ++in_flight_;
  const std::size_t cap = 2 * in_flight_ / workers_.size() + 4;
  const std::uint32_t home = src % static_cast<std::uint32_t>(workers_.size());
  std::uint32_t k = current_;
  if (!workers_[home].waiting || here.execs.size() + here.pending.size() > cap) k = home;
  Worker& target = workers_[k];
  target.pending.push_back(PendingFlow{flow, src, dst, bytes});
  if (k != current_ && target.waiting && !target.rung) {
    target.rung = true;
    here.to_ring.push_back(k);
  }
}

void SimGridNetwork::wake_at(double date_s, const Wake& wakeup) {
  const std::uint32_t k = started_ ? current_ : wakeup.id % static_cast<std::uint32_t>(workers_.size());
  add_timer(workers_[k], Timer{date_s, 0, false, wakeup, 0});
}

// Every timer due at or before `due_s`, including those that firing adds at that date. The
// date handed to the walker is the timer's own, not SimGrid's clock: a timed wait ends at
// now + (date - now), which can differ from the date in its last bit.
void SimGridNetwork::fire_due(Worker& worker, double due_s) {
  while (!worker.timers.empty() && worker.timers.top().date_s <= due_s) {
    const Timer timer = worker.timers.top();
    worker.timers.pop();
    if (timer.is_flow_end) {
      flow_done(timer.flow, timer.date_s);
    } else {
      walker_.wake(*this, timer.wakeup, timer.date_s);
    }
  }
}

// Starting an Exec, or ringing a doorbell, takes simcalls, and at each one SimGrid may run
// other workers before this one resumes. So the walker never touches SimGrid: it only queues
// flows, and the worker starts them and rings the doorbells after the walker has returned,
// when its state is whole.
void SimGridNetwork::after_walker(std::uint32_t k) {
  if (all_done() && !quit_) stop_all(k);
  while (!workers_[k].to_ring.empty()) {
    const std::uint32_t other = workers_[k].to_ring.back();
    workers_[k].to_ring.pop_back();
    workers_[other].execs.front()->resume();
  }
}

void SimGridNetwork::stop_all(std::uint32_t k) {
  quit_ = true;
  for (std::uint32_t j = 0; j < workers_.size(); ++j) {
    if (j != k && workers_[j].waiting && !workers_[j].rung) {
      workers_[j].rung = true;
      workers_[k].to_ring.push_back(j);
    }
  }
}

void SimGridNetwork::launch_pending(std::uint32_t k) {
  Worker& worker = workers_[k];
  std::vector<PendingFlow> batch;
  // Each call below is a simcall, during which other workers may hand this one more flows.
  while (!worker.pending.empty()) {
    batch.clear();
    std::swap(batch, worker.pending);
    for (const PendingFlow& p : batch) {
      // Created here, so that it joins this worker's activity list. (Running these five simcalls
      // as one through a kernel internal was measured to save only ~10% of the run time.)
      sg4::ExecPtr exec = sg4::Exec::init();
      exec->set_hosts({hosts_[p.src], hosts_[p.dst]});
      exec->set_flops_amounts({0.0, 0.0});
      exec->set_bytes_amounts({0.0, p.bytes, 0.0, 0.0});
      exec->start();
      worker.execs.push_back(std::move(exec));
      worker.flows.push_back(p.flow);
    }
  }
}

// The doorbell is an empty computation on the worker's own host (nothing else computes
// there), suspended at once; another worker rings it by resuming it, which lets it end and so
// ends this worker's wait. (Cancelling would do too, but SimGrid reports a cancel with an
// exception, and unwinding costs about a third of the run time.)
void SimGridNetwork::new_doorbell(std::uint32_t k) {
  sg4::ExecPtr bell = sg4::Exec::init();
  bell->set_host(hosts_[k]);
  bell->set_flops_amount(0.0);
  bell->start();
  bell->suspend();
  if (workers_[k].execs.empty()) {
    workers_[k].execs.push_back(std::move(bell));
    workers_[k].flows.push_back(0);
  } else {
    workers_[k].execs.front() = std::move(bell);
  }
  workers_[k].rung = false;
}

void SimGridNetwork::worker_loop(std::uint32_t k) {
  try {
    new_doorbell(k);
    while (!quit_) {
      launch_pending(k);
      if (quit_) break;
      if (!wait_once(k)) continue;
      after_walker(k);
    }
  } catch (const std::exception& e) {
    // A failed flow (link failure in the simulated platform) or a walker invariant.
    if (error_.empty()) error_ = e.what();
    if (!quit_) stop_all(k);
    after_walker(k);
  }
}

// Waits for this worker's next event and hands it to the walker. Returns false if there was
// none to hand (a doorbell: new flows to start, or the end).
// current_ is set right before each walker call: the walker never yields, so it stays right for
// the whole call, whatever other workers ran while this one waited.
bool SimGridNetwork::wait_once(std::uint32_t k) {
  Worker& worker = workers_[k];
  const bool timed = !worker.timers.empty();
  const double due_s = timed ? worker.timers.top().date_s : 0.0;
  if (timed && due_s <= now_s()) {
    current_ = k;
    fire_due(worker, due_s);
    return true;
  }
  if (!worker.pending.empty()) return false;
  const double timeout = timed ? (due_s - now_s()) * kSimGridUnitsPerSecond : -1.0;
  worker.waiting = true;
  const ssize_t done = sg4::Activity::wait_any_for(worker.execs, timeout);
  worker.waiting = false;
  if (done < 0) {
    current_ = k;
    fire_due(worker, due_s);
    return true;
  }
  if (done == 0) {
    new_doorbell(k);
    return false;
  }
  const auto i = static_cast<std::size_t>(done);
  const std::uint64_t flow = worker.flows[i];
  worker.execs[i] = std::move(worker.execs.back());
  worker.execs.pop_back();
  worker.flows[i] = worker.flows.back();
  worker.flows.pop_back();
  --in_flight_;
  current_ = k;
  flow_done(flow, now_s());
  return true;
}

}  // namespace

RunResult simulate_with_simgrid(const Schedule& schedule, const RunConfig& config, std::span<const double> arrival_s,
                                std::span<const double> gate_s) {
  const RankRounds index(schedule);
  const CostRules rules = cost_rules(schedule, config.size_bytes, config.topology, config.execution);
  Walker walker(index, arrival_s, gate_s, rules, config.record_trace);
  RunResult result;
  if (index.num_transfers() > 0) {
    // The Engine is destroyed here, before the result leaves: SimGrid 3.32 tears down cleanly.
    SimGridNetwork network(index, config.topology, walker);
    network.run();
  }
  if (walker.finished_transfers() != index.num_transfers()) {
    throw InternalError(fmt::format("the simulation ended with {} of {} transfers done", walker.finished_transfers(),
                                    index.num_transfers()));
  }
  walker.finish(result);
  result.transfers = index.num_transfers();
  return result;
}

}  // namespace collsim::detail
