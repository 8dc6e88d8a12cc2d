// Glob matching for KEYS and SCAN MATCH, with the exact semantics of Redis 7.0's
// stringmatchlen (src/util.c): '*', '?', '[...]' with '^' negation, ranges in either order and
// '\' escapes; an unterminated '[' matches as if closed at the end of the pattern.
#pragma once

#include <string_view>

namespace keep::commands {

bool StringMatch(std::string_view pattern, std::string_view text, bool nocase = false);

}  // namespace keep::commands
