// `--arrival-trace FILE [--iteration K] [--communicator ID] [--skip-incomplete]` for `collsim simulate` and `collsim advise`: one place
// declares the two options and turns them into a Trace arrival model, so both commands (and any
// later unification of their arrival flags) share it.
#pragma once

#include <initializer_list>
#include <optional>
#include <ostream>
#include <string_view>

#include "collsim/experiments/args.hpp"
#include "collsim/models/arrival.hpp"
#include "collsim/models/formats/arrival_trace.hpp"

namespace collsim {

/// Declares --communicator ID and --skip-incomplete (how to read a trace: ArrivalTraceOptions).
void add_trace_reading_options(ArgParser& parser);

/// The ArrivalTraceOptions of those flags. With a non-empty `file_option` the trace is not given:
/// either flag is then refused as needing --file_option FILE. Throws ConfigError naming the option.
ArrivalTraceOptions trace_options_from_flags(const ArgParser& parser, std::string_view command,
                                             std::string_view file_option);

/// What reading the trace tolerated (ArrivalTrace::warnings), one "collsim: warning:" line each.
void print_trace_warnings(const ArrivalTrace& trace, std::ostream& err);

/// Declares --arrival-trace, --iteration and the reading options on `parser`.
void add_arrival_trace_options(ArgParser& parser);

/// The Trace arrival model of --arrival-trace (reduced to the iteration labelled --iteration K
/// when given), or nullopt without --arrival-trace. `n`, when known, must equal the trace's group
/// size. `conflicts` are other arrival options of the command (declared without a default) that
/// cannot be combined with a trace. Throws ConfigError naming the option: --iteration without
/// --arrival-trace, a conflicting option, and every trace error (arrival_trace.hpp).
std::optional<ArrivalSpec> arrival_trace_from_flags(const ArgParser& parser, std::optional<std::uint32_t> n,
                                                    std::string_view command,
                                                    std::initializer_list<std::string_view> conflicts);

}  // namespace collsim
