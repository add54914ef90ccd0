#include "collsim/sim/trace_writer.hpp"

#include <fmt/format.h>

#include "collsim/models/error.hpp"
#include "collsim/models/formats/atomic_file.hpp"
#include "collsim/models/formats/json.hpp"

namespace collsim {
namespace {

constexpr int kSendThread = 0;
constexpr int kRecvThread = 1;

// Chrome traces count in microseconds; keep sub-nanosecond precision for short messages.
std::string us(double seconds) { return json_number(seconds * 1e6); }

}  // namespace

std::string chrome_trace_json(const Schedule& schedule, const RunResult& result,
                              const std::vector<double>& arrival_s, double size_bytes) {
  if (result.trace.empty() && result.transfers > 0) {
    throw ConfigError("trace: the run recorded no trace (run the engine with record_trace)");
  }
  const double chunk_bytes = size_bytes / schedule.num_chunks;
  std::string out = "{\"displayTimeUnit\":\"ns\",\"otherData\":{";
  out += fmt::format("\"algorithm\":{},\"n\":{},\"engine\":{},\"size_bytes\":{}}},\"traceEvents\":[\n",
                     json_string(schedule.algorithm), schedule.n, json_string(result.engine), json_number(size_bytes));
  bool first = true;
  const auto emit = [&](const std::string& event) {
    out += first ? "" : ",\n";
    out += event;
    first = false;
  };
  for (Rank r = 0; r < schedule.num_ranks(); ++r) {
    // Switch ranks (NVLS) get a process of their own, after the GPUs.
    const std::string label = schedule.is_switch(r) ? fmt::format("NVSwitch {}", r - schedule.n) : fmt::format("GPU {}", r);
    emit(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"{}"}}}})", r, label));
    emit(fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", r, r));
    emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"send"}}}})", r, kSendThread));
    emit(fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"recv"}}}})", r, kRecvThread));
    const double arrival = arrival_s.empty() || schedule.is_switch(r) ? 0.0 : arrival_s[r];
    emit(fmt::format(R"({{"ph":"i","s":"p","name":"arrival","pid":{},"tid":{},"ts":{}}})", r, kSendThread, us(arrival)));
  }
  // Phase markers: when each rank starts its first transfer of each phase.
  constexpr double kNever = -1.0;
  std::vector<std::vector<double>> phase_start(schedule.phases.size(), std::vector<double>(schedule.num_ranks(), kNever));
  for (const auto& rec : result.trace) {
    const Transfer& t = rec.transfer;
    const std::string name = t.chunk_count == 1 ? fmt::format("c{} {}", t.chunk_begin, op_name(t.op))
                                                : fmt::format("c{}-{} {}", t.chunk_begin, t.chunk_begin + t.chunk_count - 1, op_name(t.op));
    const std::string args = fmt::format(R"("phase":{},"round":{},"bytes":{})", json_string(schedule.phases[rec.phase].name()), rec.round,
                                         json_number(chunk_bytes * t.chunk_count));
    emit(fmt::format(R"({{"ph":"X","name":{},"cat":"send","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"to":{},{}}}}})",
                     json_string(name), t.src, kSendThread, us(rec.start_s), us(rec.end_s - rec.start_s), t.dst, args));
    emit(fmt::format(R"({{"ph":"X","name":{},"cat":"recv","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"from":{},{}}}}})",
                     json_string(name), t.dst, kRecvThread, us(rec.start_s), us(rec.end_s - rec.start_s), t.src, args));
    for (const Rank r : {t.src, t.dst}) {
      double& start = phase_start[rec.phase][r];
      if (start == kNever || rec.start_s < start) start = rec.start_s;
    }
  }
  for (std::size_t p = 0; p < schedule.phases.size(); ++p) {
    for (Rank r = 0; r < schedule.num_ranks(); ++r) {
      if (phase_start[p][r] == kNever) continue;
      emit(fmt::format(R"({{"ph":"i","s":"t","name":{},"cat":"phase","pid":{},"tid":{},"ts":{}}})",
                       json_string("phase " + schedule.phases[p].name()), r, kSendThread, us(phase_start[p][r])));
    }
  }
  out += "\n]}\n";
  return out;
}

void write_chrome_trace(const std::string& path, const Schedule& schedule, const RunResult& result,
                        const std::vector<double>& arrival_s, double size_bytes) {
  write_file_atomically(path, chrome_trace_json(schedule, result, arrival_s, size_bytes));
}

}  // namespace collsim
