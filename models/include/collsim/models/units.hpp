// Parsing and printing of human units. Inside collsim everything is SI: seconds, bytes, B/s.
#pragma once

#include <string>
#include <string_view>

namespace collsim {

/// Parses a duration such as "3us", "5 ms", "0.5s", "250ns" or a bare number of seconds.
/// Returns seconds (>= 0). Throws ConfigError naming `what` and the text when malformed or negative.
double parse_duration_s(std::string_view text, std::string_view what = "duration");

/// Parses a size such as "1GiB", "256 KiB", "4MB", "100B" or a bare number of bytes.
/// Binary prefixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB) of 1000.
/// Returns bytes (>= 0). Throws ConfigError when malformed or negative.
double parse_size_bytes(std::string_view text, std::string_view what = "size");

/// Parses a bandwidth such as "450GBps", "450GiBps", "400Gbps" or a bare number of bytes/s.
/// GBps is 1e9 bytes/s (the nccl-tests convention); Gbps is 1e9 bits/s. Returns bytes/s (> 0).
/// Throws ConfigError when malformed, zero or negative.
double parse_bandwidth_Bps(std::string_view text, std::string_view what = "bandwidth");

/// Formats seconds with a readable unit ("3.000 us", "9.46 ms"); for tables, not for data files.
std::string format_duration(double seconds);

/// Formats bytes with a binary unit ("1 GiB", "256 KiB") when exact, else decimal bytes.
std::string format_size(double bytes);

}  // namespace collsim
