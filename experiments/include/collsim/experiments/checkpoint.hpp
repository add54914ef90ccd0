// The checkpoint of an interrupted study: an append-only journal of finished work units.
//
// Format: a header line "collsim-checkpoint 1 <fingerprint>", then one line per unit
// ("U ..." as encode_unit) ending in " #<FNV-1a 64 of the line before ' #'>". A crash can only
// tear the last line; a line whose checksum does not match is ignored, so the journal never
// needs to be rewritten and appending a unit costs O(unit). Doubles are written in their shortest
// round-trip form, so resumed results are bit-identical to freshly simulated ones.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "collsim/experiments/runner.hpp"
#include "collsim/experiments/spec.hpp"

namespace collsim {

/// FNV-1a 64-bit hash.
std::uint64_t fnv1a64(std::string_view bytes, std::uint64_t hash = 0xcbf29ce484222325ULL);

/// One line (no newline) holding every field of `unit`.
std::string encode_unit(const UnitResult& unit);
/// Inverse of encode_unit. Throws Error when the line is malformed.
UnitResult decode_unit(std::string_view line);

/// What identifies a study for resuming: its resolved spec (collsim version included), the bytes
/// of the topology, model and trace files it reads, and the build (collsim_build_id), since code
/// changes alter results without touching the spec.
std::string study_fingerprint(const ExperimentSpec& spec, std::string_view build_id = collsim_build_id());

class Checkpoint {
 public:
  Checkpoint(std::filesystem::path path, std::string fingerprint);
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  /// The valid units of an existing journal with the same fingerprint. A journal of another
  /// study (or build) is ignored and will be replaced (discarded() then says so). Throws Error
  /// when unreadable.
  std::vector<UnitResult> load();
  /// True when load() found a journal with another fingerprint.
  bool discarded() const { return discarded_; }
  /// Appends a unit and flushes it to the OS. Opens (creating the directory) on first use,
  /// starting a fresh journal unless load() found a matching one. Throws Error on I/O failure.
  void append(const UnitResult& unit);
  /// Deletes the journal (after the final files are written).
  void remove();

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::string fingerprint_;
  bool keep_existing_ = false;
  bool discarded_ = false;
  std::FILE* file_ = nullptr;
};

}  // namespace collsim
