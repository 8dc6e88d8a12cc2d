#include "dataplane/commands/glob_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace keep::commands {
namespace {

TEST(GlobTest, LiteralsAndEmpty) {
  EXPECT_TRUE(StringMatch("hello", "hello"));
  EXPECT_FALSE(StringMatch("hello", "hell"));
  EXPECT_FALSE(StringMatch("hell", "hello"));
  EXPECT_TRUE(StringMatch("", ""));
  EXPECT_FALSE(StringMatch("", "a"));
  EXPECT_FALSE(StringMatch("a", ""));
  EXPECT_FALSE(StringMatch("Hello", "hello"));
  EXPECT_TRUE(StringMatch("Hello", "hello", /*nocase=*/true));
}

TEST(GlobTest, Star) {
  EXPECT_TRUE(StringMatch("*", "anything"));
  EXPECT_TRUE(StringMatch("h*llo", "hllo"));
  EXPECT_TRUE(StringMatch("h*llo", "heeeello"));
  EXPECT_FALSE(StringMatch("h*llo", "heeeellx"));
  EXPECT_TRUE(StringMatch("user:*", "user:"));
  EXPECT_TRUE(StringMatch("a*", "a"));
  EXPECT_TRUE(StringMatch("a***", "a"));
  EXPECT_TRUE(StringMatch("*a*b*", "xxaxxbxx"));
  EXPECT_FALSE(StringMatch("*a*b*", "xxbxxaxx"));
  // Redis's matcher never enters its loop for an empty string, so only an empty pattern
  // matches it: KEYS special-cases a lone "*" before calling it.
  EXPECT_FALSE(StringMatch("*", ""));
  EXPECT_FALSE(StringMatch("**", ""));
}

TEST(GlobTest, QuestionMark) {
  EXPECT_TRUE(StringMatch("h?llo", "hello"));
  EXPECT_TRUE(StringMatch("h?llo", "hallo"));
  EXPECT_FALSE(StringMatch("h?llo", "hllo"));
  EXPECT_FALSE(StringMatch("?", ""));
  EXPECT_TRUE(StringMatch("??", "ab"));
}

TEST(GlobTest, Classes) {
  EXPECT_TRUE(StringMatch("h[ae]llo", "hello"));
  EXPECT_TRUE(StringMatch("h[ae]llo", "hallo"));
  EXPECT_FALSE(StringMatch("h[ae]llo", "hillo"));
  EXPECT_TRUE(StringMatch("h[^e]llo", "hallo"));
  EXPECT_FALSE(StringMatch("h[^e]llo", "hello"));
  EXPECT_TRUE(StringMatch("h[a-b]llo", "hbllo"));
  EXPECT_FALSE(StringMatch("h[a-b]llo", "hcllo"));
  // Reversed ranges are accepted.
  EXPECT_TRUE(StringMatch("h[b-a]llo", "hallo"));
  EXPECT_TRUE(StringMatch("[0-9][0-9]", "42"));
  EXPECT_TRUE(StringMatch("[\\]]", "]"));
  EXPECT_TRUE(StringMatch("[\\-]", "-"));
  EXPECT_TRUE(StringMatch("[A-Z]", "q", /*nocase=*/true));
  EXPECT_FALSE(StringMatch("[A-Z]", "q"));
}

TEST(GlobTest, UnterminatedClass) {
  // An unterminated class ends with the pattern...
  EXPECT_TRUE(StringMatch("[abc", "a"));
  EXPECT_TRUE(StringMatch("[abc", "c"));
  EXPECT_FALSE(StringMatch("[abc", "d"));
  EXPECT_TRUE(StringMatch("[^", "x"));
  // ...and an empty one at the very end matches nothing, not even a literal '['.
  EXPECT_FALSE(StringMatch("ab[", "ab["));
  EXPECT_FALSE(StringMatch("ab[", "abx"));
}

TEST(GlobTest, Escapes) {
  EXPECT_TRUE(StringMatch("h\\*llo", "h*llo"));
  EXPECT_FALSE(StringMatch("h\\*llo", "hello"));
  EXPECT_TRUE(StringMatch("\\?", "?"));
  EXPECT_FALSE(StringMatch("\\?", "x"));
  // A trailing backslash matches itself.
  EXPECT_TRUE(StringMatch("a\\", "a\\"));
}

TEST(GlobTest, BinaryBytes) {
  std::string key("a\0b", 3);
  EXPECT_TRUE(StringMatch(std::string("a\0b", 3), key));
  EXPECT_TRUE(StringMatch("a?b", key));
  EXPECT_FALSE(StringMatch("a", key));
  // Bytes compare as signed char, as in Redis on x86: 0x80..0xff sort below 'a'.
  EXPECT_TRUE(StringMatch("[\x80-\xff]", "\xc3"));
  EXPECT_FALSE(StringMatch("[\x80-\xff]", "a"));
  EXPECT_TRUE(StringMatch("[a-\xff]", "\x01"));
  EXPECT_FALSE(StringMatch("[a-\xff]", "b"));
}

TEST(GlobTest, PathologicalPatternsFinishQuickly) {
  std::string text(10000, 'a');
  std::string pattern;
  for (int i = 0; i < 30; ++i) pattern += "a*";
  pattern += "b";
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(StringMatch(pattern, text));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  // Deep nesting gives up rather than overflowing the stack.
  std::string nested;
  for (int i = 0; i < 2000; ++i) nested += "*a";
  EXPECT_FALSE(StringMatch(nested, std::string(3000, 'a')));
}

}  // namespace
}  // namespace keep::commands
