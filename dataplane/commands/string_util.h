// Number parsing and formatting with Redis's exact acceptance rules and spelling, shared by the
// command families. Clients see these rules through errors ("value is not an integer or out of
// range") and through the bytes INCRBYFLOAT stores, so they follow src/util.c to the letter.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace keep::commands {

// Redis's string2ll: optional '-', then digits without leading zeros ("0" alone is fine); no
// spaces, no '+', nothing after; must fit an int64_t.
bool ParseInt64(std::string_view text, int64_t* value);

// Redis's getIntFromObject range: ParseInt64 and within int32.
bool ParseInt32(std::string_view text, int32_t* value);

// Redis's string2ld: strtold over the whole text, refusing leading spaces, NaN, overflow and
// underflow to zero. Accepts what strtold accepts otherwise ("1e3", "0x10", "inf", " " rejected).
bool ParseLongDouble(std::string_view text, long double* value);

// Big enough for any FormatLongDouble output (Redis's MAX_LONG_DOUBLE_CHARS).
inline constexpr size_t kMaxLongDoubleChars = 5 * 1024;

// Redis's ld2string in LD_STR_HUMAN mode ("%.17Lf" with trailing zeros and a bare '.' removed,
// "-0" printed as "0", infinities as "inf"/"-inf"). Returns the length written to `buf`, which
// must hold kMaxLongDoubleChars bytes.
size_t FormatLongDouble(long double value, char* buf);

// Decimal digits of `value` into `buf` (at least 20 bytes); returns the length.
size_t FormatInt64(int64_t value, char* buf);

// ASCII case mapping of command names, subcommands and options.
inline std::string AsciiLower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

inline std::string AsciiUpper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

// ASCII case-insensitive equality against a lower-case literal.
inline bool EqualsIgnoreCase(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

}  // namespace keep::commands
