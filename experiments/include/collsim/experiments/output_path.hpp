// Checks of the files and directories a command is told to write, made before any work so
// that a bad path costs one clear line naming the option, not a finished run.
#pragma once

#include <filesystem>
#include <string_view>

namespace collsim {

/// Throws ConfigError naming `command`, `option` and the cause when `path` cannot be written as
/// a file: it is a directory, its parent is not a directory, or the parent is not writable (the
/// system's reason, e.g. "Permission denied"). A missing parent is left to the writer.
void check_output_file(const std::filesystem::path& path, std::string_view command, std::string_view option);

/// Throws ConfigError naming `command`, `option` and `other_what` when `path` and `other` are
/// one file (the same path once normalised, or two names of one existing file): an output that
/// would replace an input, or another output of the same command.
void check_not_same_file(const std::filesystem::path& path, std::string_view command, std::string_view option,
                         const std::filesystem::path& other, std::string_view other_what);

/// Creates `dir` and its parents for `option` and checks that files can be created in it.
/// Throws ConfigError naming `command`, `option`, the directory and the system's reason.
void prepare_output_dir(const std::filesystem::path& dir, std::string_view command, std::string_view option);

}  // namespace collsim
