#include "dataplane/commands/glob_util.h"

#include <utility>

namespace keep::commands {
namespace {

// Redis compares bytes as (signed) char; ranges over bytes >= 0x80 depend on it.
int Byte(char c) { return static_cast<signed char>(c); }

int Lower(int c) { return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c; }

bool SameByte(char a, char b, bool nocase) {
  return nocase ? Lower(Byte(a)) == Lower(Byte(b)) : a == b;
}

// A port of stringmatchlen_impl. Redis reads one byte past the pattern's end (the sds
// terminator) in a few places; here those reads are bounds checks, since views are not
// terminated. `skip_longer` and the nesting limit keep abusive patterns from running
// exponentially, as in Redis (CVE-2022-36021).
bool Match(const char* pattern, int plen, const char* str, int slen, bool nocase, bool* skip_longer,
           int nesting) {
  if (nesting > 1000) return false;
  while (plen > 0 && slen > 0) {
    switch (pattern[0]) {
      case '*': {
        while (plen > 1 && pattern[1] == '*') {
          ++pattern;
          --plen;
        }
        if (plen == 1) return true;
        while (slen > 0) {
          if (Match(pattern + 1, plen - 1, str, slen, nocase, skip_longer, nesting + 1)) {
            return true;
          }
          if (*skip_longer) return false;
          ++str;
          --slen;
        }
        // The rest of the pattern matches nowhere in the rest of the string, so giving an
        // earlier '*' a longer match cannot help either.
        *skip_longer = true;
        return false;
      }
      case '?':
        ++str;
        --slen;
        break;
      case '[': {
        ++pattern;
        --plen;
        bool negate = plen > 0 && pattern[0] == '^';
        if (negate) {
          ++pattern;
          --plen;
        }
        bool match = false;
        while (true) {
          if (plen >= 2 && pattern[0] == '\\') {
            ++pattern;
            --plen;
            if (pattern[0] == str[0]) match = true;
          } else if (plen > 0 && pattern[0] == ']') {
            break;
          } else if (plen == 0) {
            --pattern;
            ++plen;
            break;
          } else if (plen >= 3 && pattern[1] == '-') {
            int start = Byte(pattern[0]);
            int end = Byte(pattern[2]);
            int c = Byte(str[0]);
            if (start > end) std::swap(start, end);
            if (nocase) {
              start = Lower(start);
              end = Lower(end);
              c = Lower(c);
            }
            pattern += 2;
            plen -= 2;
            if (c >= start && c <= end) match = true;
          } else if (SameByte(pattern[0], str[0], nocase)) {
            match = true;
          }
          ++pattern;
          --plen;
        }
        if (negate) match = !match;
        if (!match) return false;
        ++str;
        --slen;
        break;
      }
      case '\\':
        if (plen >= 2) {
          ++pattern;
          --plen;
        }
        [[fallthrough]];
      default:
        if (!SameByte(pattern[0], str[0], nocase)) return false;
        ++str;
        --slen;
        break;
    }
    ++pattern;
    --plen;
    if (slen == 0) {
      while (plen > 0 && pattern[0] == '*') {
        ++pattern;
        --plen;
      }
      break;
    }
  }
  return plen == 0 && slen == 0;
}

}  // namespace

bool StringMatch(std::string_view pattern, std::string_view text, bool nocase) {
  bool skip_longer = false;
  return Match(pattern.data(), static_cast<int>(pattern.size()), text.data(),
               static_cast<int>(text.size()), nocase, &skip_longer, 0);
}

}  // namespace keep::commands
