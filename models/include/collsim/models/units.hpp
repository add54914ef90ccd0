// Parsing and printing of human units. Inside collsim everything is SI: seconds, bytes, B/s.
#pragma once

#include <string>
#include <string_view>

namespace collsim {

/// Whether a number without a unit is accepted. Values typed by people (flags, specs, topology
/// files) need a unit unless they are zero, so `--bandwidth 450` is not silently 450 B/s; files
/// whose key names the unit (a model file's `latency_s`) take bare SI numbers.
enum class BareNumber { Rejected, BaseUnit };

/// Sane ranges (outside them a value is a typo, and doubles lose the precision the engines need:
/// a 1e10 s delay leaves microsecond steps after the arrival).
inline constexpr double kMaxDuration_s = 3600.0;                               ///< one hour
inline constexpr double kMinMeasuredTime_s = 1e-9;  ///< a measured collective time below this is no measurement
inline constexpr double kMaxSize_bytes = 1024.0 * 1024 * 1024 * 1024;          ///< 1 TiB per rank
inline constexpr double kMinBandwidth_Bps = 1e3;                               ///< 1 KB/s
inline constexpr double kMaxBandwidth_Bps = 1e15;                              ///< 1 PB/s
/// A reduction slower than the slowest link (1 ms per byte): 1e300 s/B in a model file ran and
/// printed a 9e305 s AllReduce.
inline constexpr double kMaxGamma_s_per_byte = 1.0 / kMinBandwidth_Bps;

/// Parses a duration such as "3us", "5 ms", "0.5s", "250ns", "2min" (or "0"). Returns seconds in
/// [0, kMaxDuration_s]. Throws ConfigError naming `what` and the text when malformed, negative,
/// out of range, or a non-zero number without a unit (unless `bare` is BaseUnit: seconds).
double parse_duration_s(std::string_view text, std::string_view what = "duration",
                        BareNumber bare = BareNumber::Rejected);

/// Parses a reduction cost gamma, seconds per byte, written as a duration ("1e-12s", "0.001ns";
/// or "0"): the same units as parse_duration_s, at most kMaxGamma_s_per_byte, and a unit-less number is refused
/// suggesting seconds ("1e-12s"), not milliseconds, which would be 1,000 times too small.
double parse_s_per_byte(std::string_view text, std::string_view what = "gamma");

/// Parses a size such as "1GiB", "256 KiB", "4MB", "100B" (or "0"). Binary prefixes (KiB, MiB,
/// GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB) of 1000. Returns a whole number of
/// bytes in [0, kMaxSize_bytes] ("1.5KiB" is 1536 B; "1.5B" is an error). Throws ConfigError.
double parse_size_bytes(std::string_view text, std::string_view what = "size", BareNumber bare = BareNumber::Rejected);

/// Parses a bandwidth such as "450GBps", "450GiBps", "400Gbps". GBps is 1e9 bytes/s (the
/// nccl-tests convention); Gbps is 1e9 bits/s. Returns bytes/s in [kMinBandwidth_Bps,
/// kMaxBandwidth_Bps]. Throws ConfigError when malformed, out of range or without a unit.
double parse_bandwidth_Bps(std::string_view text, std::string_view what = "bandwidth",
                           BareNumber bare = BareNumber::Rejected);

/// Formats seconds with a readable unit ("3.000 us", "9.46 ms"); for tables, not for data files.
std::string format_duration(double seconds);

/// Formats bytes with a binary unit ("1 GiB", "256 KiB") when exact, else decimal bytes.
std::string format_size(double bytes);

}  // namespace collsim
