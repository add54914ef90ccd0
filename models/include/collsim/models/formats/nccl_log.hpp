// Reader for the output tables of NVIDIA nccl-tests (all_reduce_perf, reduce_scatter_perf,
// all_gather_perf, sendrecv_perf), the most common public record of real collective timings.
//
// Real logs are messy: launcher prefixes (`mpirun --tag-output` "[1,0]<stdout>:", also after a
// `--timestamp-output` timestamp; `srun --label` "0: "; MPICH / Intel MPI `-l` "[0] " and pdsh /
// clush "host: ", removed only from lines that start with one seen before a comment line), MPI
// warnings between table rows, size-0 rows when -b is below nranks*4, "N/A" in the #wrong column
// when validation is off, older builds without the redop/root columns or with "error" for
// "#wrong", newer ones with opt-in columns (per-iteration times, a timestamp), binaries built
// with a NAME_SUFFIX ("all_reduce_perf_mpi"). The reader tolerates exactly those and rejects
// anything that looks like a table row but cannot be read, naming the file, the line and the text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/models/collective.hpp"

namespace collsim {

/// One data row of an nccl-tests table (size > 0; size-0 rows are counted, not kept).
struct NcclLogRow {
  double size_bytes = 0;        ///< the size column: the whole array S in bytes (nccl-tests' convention)
  std::uint64_t count = 0;      ///< the count column (elements) as printed
  std::string type;             ///< element type, e.g. "float"
  std::string redop;            ///< "sum", "none", ...; empty when the table has no redop column
  double time_oop_s = 0;        ///< out-of-place time, seconds (> 0)
  double algbw_oop_GBps = 0;    ///< out-of-place algorithm bandwidth S/t, 1e9 B/s
  double busbw_oop_GBps = 0;    ///< out-of-place bus bandwidth, 1e9 B/s
  std::optional<double> wrong_oop;  ///< #wrong (or "error" of old builds); nullopt for N/A
  double time_ip_s = 0;         ///< in-place time, seconds (> 0)
  double algbw_ip_GBps = 0;
  double busbw_ip_GBps = 0;
  std::optional<double> wrong_ip;
  std::size_t line = 0;         ///< 1-based line number in the source
};

/// A parsed nccl-tests log.
struct NcclLog {
  std::string source;                 ///< file path or label given to the parser
  Collective collective = Collective::AllReduce;
  std::string collective_from;        ///< how the collective was found (for the report)
  std::uint32_t nranks = 0;           ///< ranks taking part, >= 2 (sendrecv: >= 2 as well)
  std::string nranks_from;            ///< how nranks was found (for the report)
  /// GPUs one host thread drove (nccl-tests' `nGpus` header field, `-g`; 1 when absent): that
  /// thread launches a kernel on each of them in turn, so the collective's launch grows with it.
  std::uint32_t gpus_per_thread = 1;
  std::vector<NcclLogRow> rows;       ///< data rows with size > 0, in file order (never empty)
  std::size_t zero_size_rows = 0;     ///< rows of size 0, skipped
  std::size_t skipped_lines = 0;      ///< non-table lines (warnings, banners) ignored
  std::vector<std::string> warnings;  ///< tolerated oddities worth printing (nonzero #wrong, ...)
  /// What the log says NCCL was told to run: the value of `NCCL_ALGO=X` / `NCCL_PROTO=X` (a
  /// command line or env dump) or of NCCL's "NCCL_ALGO set by environment to X" line, as
  /// written (e.g. "Ring", "NVLS", "Simple"); "" when the log does not say. `*_line` is where.
  std::string nccl_algo;
  std::size_t nccl_algo_line = 0;
  std::string nccl_proto;
  std::size_t nccl_proto_line = 0;
};

/// Overrides for what a log's header does not say (or says wrongly).
struct NcclLogOptions {
  std::optional<Collective> collective; ///< skip detection from the header and file name
  std::optional<std::uint32_t> nranks;  ///< skip detection; must be >= 2
};

/// Whether an algbw column (1e9 B/s) is size/time, as nccl-tests defines and prints it (two
/// decimals): within 5 % and the printing's rounding. NaN or infinite values never match.
bool algbw_matches(double size_bytes, double time_s, double algbw_GBps);

/// Parses the text of an nccl-tests log. `source` names it in messages (a path or a label).
///
/// The collective comes from "# Collective test starting: X_perf" (X_perf plus a NAME_SUFFIX
/// too), else from the one `X_perf` name in the comment lines, else from the file name
/// (allreduce, reducescatter, ...). A log holds one test: a second start line, or a second
/// column header, is an error naming both lines.
/// nranks comes from an "nranks" header field, else from the "#  Rank N ..." device lines, else
/// from nThread*nGpus when >= 2, else from the busbw/algbw ratio when only one n fits it within
/// the rounding of the printed values; it is then checked against that ratio (2(n-1)/n for
/// all_reduce, (n-1)/n for reduce_scatter and all_gather).
///
/// A line "looks like a data row" when its first two tokens (after a launcher prefix) are numbers,
/// or it has one token, an unsigned integer, or (under a header) it starts with an unsigned
/// integer and has as many tokens as the header's rows; such a line must have the table's columns (where the
/// header line puts them, opt-in columns skipped; without a header size count type [redop [root]]
/// then time algbw busbw #wrong twice) with numbers where numbers belong, positive times and
/// algbw consistent with size/time. A row's size must be its count times its type's width (for the
/// types nccl-tests names), times nranks for reduce_scatter and all_gather; where a whole number
/// of ranks other than the resolved nranks explains it, an nranks option wins with a warning and
/// one from the log is an error. Every row's busbw must be its algbw times the bus factor at the
/// resolved nranks, within the printed rounding (unless nranks came from the option). A nonzero
/// #wrong is warned about; old builds' "error" column (the largest error, not a count) is not.
///
/// Throws ConfigError naming `source` (and the 1-based line and its text for row errors) when:
/// the text is empty, no data row with size > 0 is found (saying so when lines carry nccl-tests
/// text behind an unknown prefix), a row is malformed, the file holds two tests, the collective
/// is unsupported, ambiguous or unknown, nranks cannot be determined, is not singled out by
/// busbw/algbw, or contradicts it.
NcclLog parse_nccl_log(std::string_view text, std::string_view source,
                       const NcclLogOptions& options = {});

/// Reads and parses a log file. Throws ConfigError when the file cannot be read, and as
/// parse_nccl_log otherwise (`source` is the path).
NcclLog read_nccl_log(const std::filesystem::path& path, const NcclLogOptions& options = {});

}  // namespace collsim
