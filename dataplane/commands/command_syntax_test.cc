#include "dataplane/commands/command_syntax.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace keep::commands {
namespace {

// A compact rendering of a tree: name:type, then "=TOKEN", "?" optional, "*" multiple,
// "+" multiple_token, and the nested arguments in parentheses.
std::string Show(const std::vector<CommandArg>& args);

std::string Show(const CommandArg& arg) {
  std::string out = arg.name;
  out += ':';
  out += arg.type;
  if (!arg.token.empty()) {
    out += '=';
    out += arg.token;
  }
  if (arg.optional) out += "?";
  if (arg.multiple) out += "*";
  if (arg.multiple_token) out += "+";
  if (!arg.arguments.empty()) {
    out += '(';
    out += Show(arg.arguments);
    out += ')';
  }
  return out;
}

std::string Show(const std::vector<CommandArg>& args) {
  std::string out;
  for (const CommandArg& arg : args) {
    if (!out.empty()) out += " ";
    out += Show(arg);
  }
  return out;
}

TEST(CommandSyntaxTest, Set) {
  std::vector<CommandArg> args = ParseCommandSyntax(
      "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT "
      "unix-time-milliseconds | KEEPTTL]");
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(args[0].name, "key");
  EXPECT_EQ(args[0].type, "key");
  EXPECT_EQ(args[1].type, "string");
  EXPECT_EQ(args[2].type, "oneof");
  EXPECT_TRUE(args[2].optional);
  ASSERT_EQ(args[2].arguments.size(), 2u);
  EXPECT_EQ(args[2].arguments[0].name, "nx");
  EXPECT_EQ(args[2].arguments[0].type, "pure-token");
  EXPECT_EQ(args[2].arguments[0].token, "NX");
  EXPECT_EQ(args[3].name, "get");
  EXPECT_EQ(args[3].type, "pure-token");
  EXPECT_EQ(args[3].token, "GET");
  EXPECT_TRUE(args[3].optional);
  EXPECT_EQ(Show(args[4].arguments),
            "seconds:integer=EX milliseconds:integer=PX unix-time-seconds:unix-time=EXAT "
            "unix-time-milliseconds:unix-time=PXAT keepttl:pure-token=KEEPTTL");
  EXPECT_TRUE(args[4].optional);
  EXPECT_EQ(args[4].type, "oneof");
}

TEST(CommandSyntaxTest, NoArguments) { EXPECT_TRUE(ParseCommandSyntax("").empty()); }

TEST(CommandSyntaxTest, Multiple) {
  EXPECT_EQ(Show(ParseCommandSyntax("key [key ...]")), "key:key*");
  EXPECT_EQ(Show(ParseCommandSyntax("key value [key value ...]")),
            "key:block*(key:key value:string)");
  EXPECT_EQ(Show(ParseCommandSyntax("[channel [channel ...]]")), "channel:string?*");
  EXPECT_EQ(Show(ParseCommandSyntax("script numkeys [key [key ...]] [arg [arg ...]]")),
            "script:string numkeys:integer key:key?* arg:string?*");
  EXPECT_EQ(Show(ParseCommandSyntax("member ...")), "member:string*");
}

TEST(CommandSyntaxTest, TokensAndBlocks) {
  EXPECT_EQ(Show(ParseCommandSyntax("cursor [MATCH pattern] [COUNT count] [TYPE type]")),
            "cursor:integer pattern:pattern=MATCH? count:integer=COUNT? type:string=TYPE?");
  EXPECT_EQ(Show(ParseCommandSyntax("[protover [AUTH username password] [SETNAME clientname]]")),
            "protover:block?(protover:integer username:block=AUTH?(username:string "
            "password:string) clientname:string=SETNAME?)");
  EXPECT_EQ(Show(ParseCommandSyntax("source destination [DB destination-db] [REPLACE]")),
            "source:key destination:key destination-db:integer=DB? replace:pure-token=REPLACE?");
  EXPECT_EQ(Show(ParseCommandSyntax("key max_burst count period [quantity]")),
            "key:key max_burst:integer count:integer period:integer quantity:integer?");
}

TEST(CommandSyntaxTest, NestedOneof) {
  EXPECT_EQ(Show(ParseCommandSyntax("key [NX | XX | [GT | LT] CH]")),
            "key:key nx-xx-gt-lt:oneof?(nx:pure-token=NX xx:pure-token=XX "
            "gt-lt:block(gt-lt:oneof?(gt:pure-token=GT lt:pure-token=LT) ch:pure-token=CH))");
  EXPECT_EQ(Show(ParseCommandSyntax("[GET pattern [GET pattern ...]]")), "pattern:pattern=GET?*+");
  EXPECT_EQ(Show(ParseCommandSyntax("[FILTER [ASYNC | SYNC]]")),
            "async-sync:block=FILTER?(async-sync:oneof?(async:pure-token=ASYNC "
            "sync:pure-token=SYNC))");
}

TEST(CommandSyntaxTest, WriteCommandArgs) {
  std::string out;
  proto::ReplyWriter reply(&out, 2);
  WriteCommandArgs(reply, ParseCommandSyntax("key [NX]"));
  EXPECT_EQ(out,
            "*2\r\n*4\r\n$4\r\nname\r\n$3\r\nkey\r\n$4\r\ntype\r\n$3\r\nkey\r\n"
            "*8\r\n$4\r\nname\r\n$2\r\nnx\r\n$4\r\ntype\r\n$10\r\npure-token\r\n"
            "$5\r\ntoken\r\n$2\r\nNX\r\n$5\r\nflags\r\n*1\r\n+optional\r\n");
}

}  // namespace
}  // namespace keep::commands
