// Arrival traces: observed per-rank arrival times at real collectives, replayed by the
// simulator (ArrivalModel::Trace) and summarised by `collsim arrivals`.
//
// Two input formats, told apart by the first non-blank character ('{' or '[' is JSON):
//
//  * CSV with the header `iteration,rank,arrival_s` (any column order; blank lines and lines
//    starting with '#' are skipped): one row per rank per collective instance. Iterations are
//    non-negative integer labels (gaps allowed, replayed in ascending order); ranks are
//    0..k-1 inside the collective's group; arrival_s is an absolute or relative time in seconds.
//
//  * NCCL Inspector JSON (plugins/profiler/inspector of NVIDIA/nccl, output formats v4.0-v4.3)
//    written with NCCL_INSPECTOR_DUMP_VERBOSE=1: a stream of objects. A collective record has
//    coll_perf.{coll, coll_sn, event_trace_ts.coll_start_ts} (microseconds) and the rank's
//    header.{id, rank, n_ranks}: in the record itself (v4.0-v4.2) or once per dump in the
//    `dump_stats` marker before it (v4.3, whose operation lines carry no header). Records that
//    are not collectives (p2p_perf, proxy_trace, the markers) are skipped. The per-process files
//    concatenated (`cat *.log > job.json`) form one trace: an iteration is one coll_sn of the
//    communicator, a rank's arrival its coll_start_ts. A process logs every communicator it is
//    in (data-parallel, tensor-parallel, ...): a file holding several is refused unless
//    ArrivalTraceOptions::communicator picks one, since ranks of different groups are not one
//    collective.
//
// Real traces lose records (Inspector's ring buffers overwrite the oldest when the dump thread
// falls behind, a killed job leaves a half-written last line). By default an iteration without
// every rank is an error; ArrivalTraceOptions::skip_incomplete drops such iterations (and a
// JSON stream's unfinished last line) and says so in ArrivalTrace::warnings.
//
// Per iteration, delays are arrival - min arrival of that iteration, so the earliest rank has 0.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace collsim {

/// How to read a trace that is not one clean collective group (see above).
struct ArrivalTraceOptions {
  /// Inspector: only the collectives of this communicator (header.id, e.g. "0x7f8c496ae9f661").
  std::optional<std::string> communicator;
  /// Drop iterations that lack a rank, and an unfinished last JSON line, instead of refusing.
  bool skip_incomplete = false;
};

struct ArrivalTrace {
  /// Where it came from (file name), for messages and describe().
  std::string source;
  /// Ranks in the collective's group (every iteration has exactly these ranks).
  std::uint32_t n = 0;
  /// Iteration labels as in the file, ascending (CSV `iteration`, Inspector `coll_sn`).
  std::vector<std::uint64_t> iterations;
  /// delay_s[i][r]: rank r's arrival in iterations[i] minus the earliest one, seconds (>= 0,
  /// the smallest is exactly 0).
  std::vector<std::vector<double>> delay_s;
  /// What reading tolerated and the user should know (skipped iterations, a dropped last line).
  std::vector<std::string> warnings;

  std::size_t size() const { return delay_s.size(); }
  /// The trace reduced to the iteration labelled `label`. Throws ConfigError (naming the source
  /// and the labels available) when there is none.
  ArrivalTrace only(std::uint64_t label) const;
  /// The rank that arrived last in iteration index i (lowest rank on a tie).
  std::uint32_t last_rank(std::size_t i) const;
  /// Every rank arrived together in iteration index i: it has no late rank (last_rank says 0).
  bool all_tied(std::size_t i) const;
  /// The rank most often last over the trace (lowest on a tie): the rank offline profiling
  /// would name as the straggler. Iterations in which all ranks arrive together do not count;
  /// n - 1 when no iteration has a late rank.
  std::uint32_t most_often_last() const;
};

/// Parses a trace from text (format detected as above). `source` names it in messages; when `n`
/// is given the group size must equal it. Throws ConfigError naming the source, the line and the
/// value for: an empty trace, a malformed line or record, a negative or non-finite time, a rank
/// missing from an iteration (unless options.skip_incomplete), a duplicate (iteration, rank), a
/// group size != n, a group of fewer than 2 ranks, several communicators in one Inspector file
/// (unless options.communicator picks one) or a communicator it does not hold.
ArrivalTrace parse_arrival_trace(std::string_view text, std::string_view source,
                                 std::optional<std::uint32_t> n = std::nullopt,
                                 const ArrivalTraceOptions& options = {});

/// Reads and parses `file`. Throws ConfigError if it cannot be read or is a directory, and as
/// parse_arrival_trace.
ArrivalTrace read_arrival_trace(const std::filesystem::path& file, std::optional<std::uint32_t> n = std::nullopt,
                                const ArrivalTraceOptions& options = {});

}  // namespace collsim
