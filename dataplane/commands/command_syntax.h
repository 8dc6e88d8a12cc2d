// Turns a command's documented argument syntax ("key value [NX | XX] [GET] ...") into the
// argument tree that COMMAND DOCS replies with (Redis's `arguments` field, which redis-cli uses
// to show argument hints).
//
// Grammar: a lower case word is an argument (its type guessed from its name), an UPPER CASE word
// a pure token; `[ ... ]` is optional; `a | b` is a choice (oneof); `...` after an element makes
// it repeatable, and so does Redis's `x [x ...]` form. Inside brackets or a choice, a leading
// token followed by its values (`EX seconds`, `AUTH username password`) is one argument (or one
// block) with that token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "dataplane/proto/reply_writer.h"

namespace keep::commands {

struct CommandArg {
  std::string name;
  std::string type;   // string, integer, double, key, pattern, unix-time, pure-token, oneof, block
  std::string token;  // empty when none
  bool optional = false;
  bool multiple = false;
  bool multiple_token = false;
  std::vector<CommandArg> arguments;  // oneof and block only
};

std::vector<CommandArg> ParseCommandSyntax(std::string_view syntax);

// Writes `args` as COMMAND DOCS does: an array of maps.
void WriteCommandArgs(proto::ReplyWriter& reply, const std::vector<CommandArg>& args);

}  // namespace keep::commands
