#include "collsim/models/formats/text_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>

#include "collsim/models/error.hpp"
#include "collsim/models/quote.hpp"
#include "collsim/models/units.hpp"

namespace collsim {
namespace {

std::mutex inputs_mutex;
std::vector<std::filesystem::path> inputs;  // guarded by inputs_mutex

void note_input(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path absolute = std::filesystem::absolute(path, ec);
  if (ec) return;
  const std::lock_guard lock(inputs_mutex);
  inputs.push_back(absolute.lexically_normal());
}

}  // namespace

std::vector<std::filesystem::path> input_files_read() {
  const std::lock_guard lock(inputs_mutex);
  return inputs;
}

void forget_input_files() {
  const std::lock_guard lock(inputs_mutex);
  inputs.clear();
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ec;
  return std::filesystem::absolute(a, ec).lexically_normal() == std::filesystem::absolute(b, ec).lexically_normal() ||
         std::filesystem::equivalent(a, b, ec);
}

void check_not_an_input(const std::filesystem::path& path) {
  for (const std::filesystem::path& input : input_files_read()) {
    if (same_file(path, input)) {
      throw ConfigError(fmt::format("cannot write '{}': it is an input this command read ('{}'), and writing would "
                                    "replace it; give another name",
                                    quote_excerpt(path.string(), 200), quote_excerpt(input.string(), 200)));
    }
  }
}

void allow_rewrite_of(const std::filesystem::path& path) {
  const std::lock_guard lock(inputs_mutex);
  std::erase_if(inputs, [&](const std::filesystem::path& input) { return same_file(input, path); });
}

FileLookup look_up_file(const std::filesystem::path& path) {
  using Kind = FileLookup::Kind;
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  if (std::filesystem::is_regular_file(status)) return {Kind::Regular, ""};
  if (status.type() == std::filesystem::file_type::not_found) return {Kind::Missing, "does not exist"};
  if (ec) return {Kind::Unreachable, fmt::format("cannot be looked up ({})", ec.message())};
  if (std::filesystem::is_directory(status)) return {Kind::Directory, "is a directory"};
  return {Kind::Other, "is not a regular file"};
}

std::string read_text_file(const std::filesystem::path& path, std::string_view what, std::uint64_t max_bytes) {
  // The path is cut to 200 characters so that the reason after it survives the CLI's one-line limit.
  const std::string shown = quote_excerpt(path.string(), 200);
  const std::string name = what.empty() ? fmt::format("'{}'", shown) : fmt::format("{} '{}'", what, shown);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(fmt::format("cannot read {}: it is a directory", name));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("cannot read {}: {}", name, std::strerror(errno)));
  note_input(path);
  const auto too_large = [&] {
    return ConfigError(fmt::format("cannot read {}: it is larger than {} (an endless device or pipe?)", name,
                                   format_size(static_cast<double>(max_bytes))));
  };
  std::string text;
  if (std::filesystem::is_regular_file(path, ec)) {
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > max_bytes) throw too_large();
    if (!ec) text.reserve(static_cast<std::size_t>(size));
  }
  std::array<char, 1 << 16> chunk{};
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    const std::string_view piece(chunk.data(), got);
    if (const std::size_t nul = piece.find('\0'); nul != std::string_view::npos) {
      const auto line = 1 + std::count(text.begin(), text.end(), '\n') +
                        std::count(piece.begin(), piece.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
      throw ConfigError(fmt::format("{}:{}: a NUL byte: {} is not a text file (binary? a UTF-16 export? save it as "
                                    "UTF-8)", path.string(), line, name));
    }
    if (text.size() + got > max_bytes) throw too_large();
    text.append(piece);
  }
  if (in.bad()) throw ConfigError(fmt::format("cannot read {}: I/O error", name));
  return text;
}

}  // namespace collsim
