#include "stream/bytes.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "dnmf/error.hpp"

namespace dnmf::stream {

std::int64_t parse_bytes(const std::string& text) {
  // A size the caller wrote: a usage error wherever it comes from (the CLI, the Python functions).
  const auto bad = [&](const std::string& why) -> UsageError {
    return UsageError("memory size '" + text + "': " + why + " (expected e.g. 256M, 2G, 1.5GiB or a number of bytes)");
  };
  if (!text.empty() && text[0] == '-') throw bad("a size cannot be negative");  // was "no number"
  std::size_t pos = 0;
  while (pos < text.size() && (std::isdigit(static_cast<unsigned char>(text[pos])) || text[pos] == '.')) ++pos;
  if (pos == 0) throw bad("no number");
  const std::string number = text.substr(0, pos);
  // from_chars reads '.' whatever the locale (strtod refused "1.5G" under a Python caller's decimal-comma one).
  double value = 0;
  const auto parsed = std::from_chars(number.data(), number.data() + number.size(), value);
  if (parsed.ec != std::errc() || parsed.ptr != number.data() + number.size()) throw bad("not a number");
  std::string suffix;
  for (std::size_t i = pos; i < text.size(); ++i) {
    if (text[i] != ' ') suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  }
  double scale = 1;
  if (!suffix.empty()) {
    static const char* const kUnits = "KMGT";
    const char* unit = std::char_traits<char>::find(kUnits, 4, suffix[0]);
    std::string rest = suffix;
    if (unit != nullptr) {
      scale = std::pow(1024.0, static_cast<double>(unit - kUnits + 1));
      rest = suffix.substr(1);
    }
    const bool known = unit != nullptr ? (rest.empty() || rest == "B" || rest == "IB") : rest == "B";
    if (!known) throw bad("unknown unit '" + text.substr(pos) + "'");
  }
  if (scale == 1) {
    // A number of bytes is taken exactly, digit by digit: through a double, 9007199254740993 became ...992 and
    // 1.9999999999999999999999 became 2 while 1.5 was refused. "1.5" was one byte (then "too small for one
    // tile"): a unit was surely meant.
    const std::size_t point = number.find('.');
    if (point != std::string::npos && number.find_first_not_of('0', point + 1) != std::string::npos)
      throw bad("a number of bytes must be whole; did you mean a unit");
    std::uint64_t whole = 0;
    for (std::size_t i = 0; i < std::min(point, number.size()); ++i) {
      const auto digit = static_cast<std::uint64_t>(number[i] - '0');
      if (whole > (static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - digit) / 10)
        throw bad("too large");
      whole = whole * 10 + digit;
    }
    if (whole < 1) throw bad("must be at least one byte");
    return static_cast<std::int64_t>(whole);
  }
  const double bytes = std::floor(value * scale);
  if (!(bytes >= 1)) throw bad("must be at least one byte");
  if (bytes >= static_cast<double>(std::numeric_limits<std::int64_t>::max())) throw bad("too large");
  return static_cast<std::int64_t>(bytes);
}

std::string human_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (std::abs(bytes) >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  char text[48];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", bytes, kUnits[unit]);
  return text;
}

std::string describe_bytes(std::int64_t bytes) {
  return std::to_string(bytes) + " bytes (" + human_bytes(static_cast<double>(bytes)) + ")";
}

}  // namespace dnmf::stream
