#include "dataplane/commands/command_syntax.h"

#include <cctype>
#include <memory>
#include <utility>

#include "dataplane/commands/string_util.h"

namespace keep::commands {
namespace {

// A parsed element before it becomes a CommandArg: a word, or a group of alternatives (a
// bracket, or a plain sequence built for `x y [x y ...]`).
struct Raw {
  std::string word;                    // set for words
  std::vector<std::vector<Raw>> alts;  // groups: alternatives, each a sequence
  bool optional = false;
  bool multiple = false;

  bool IsWord() const { return !word.empty(); }
};

bool IsUpperWord(const Raw& raw) {
  if (!raw.IsWord()) return false;
  bool letter = false;
  for (char c : raw.word) {
    if (std::islower(static_cast<unsigned char>(c))) return false;
    if (std::isupper(static_cast<unsigned char>(c))) letter = true;
  }
  return letter;
}

std::string Text(const Raw& raw);

std::string SeqText(const std::vector<Raw>& seq) {
  std::string out;
  for (const Raw& raw : seq) {
    if (!out.empty()) out += ' ';
    out += Text(raw);
  }
  return out;
}

// The element's text without its repetition, to recognise `x [x ...]`.
std::string Text(const Raw& raw) {
  if (raw.IsWord()) return raw.word;
  std::string out = raw.optional ? "[" : "(";
  for (size_t i = 0; i < raw.alts.size(); ++i) {
    if (i > 0) out += " | ";
    out += SeqText(raw.alts[i]);
  }
  out += raw.optional ? "]" : ")";
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view text) { Tokenize(text); }

  std::vector<Raw> ParseTop() {
    std::vector<std::vector<Raw>> alts = ParseAlternatives();
    if (alts.size() == 1) return std::move(alts[0]);
    Raw choice;
    choice.alts = std::move(alts);
    std::vector<Raw> out;
    out.push_back(std::move(choice));
    return out;
  }

 private:
  void Tokenize(std::string_view text) {
    size_t i = 0;
    while (i < text.size()) {
      char c = text[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
      } else if (c == '[' || c == ']' || c == '|') {
        tokens_.emplace_back(1, c);
        ++i;
      } else if (text.substr(i, 3) == "...") {
        tokens_.emplace_back("...");
        i += 3;
      } else {
        size_t start = i;
        while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i])) &&
               text[i] != '[' && text[i] != ']' && text[i] != '|' && text.substr(i, 3) != "...") {
          ++i;
        }
        tokens_.emplace_back(text.substr(start, i - start));
      }
    }
  }

  // Alternatives up to a closing bracket (not consumed) or the end.
  std::vector<std::vector<Raw>> ParseAlternatives() {
    std::vector<std::vector<Raw>> alts(1);
    while (pos_ < tokens_.size() && tokens_[pos_] != "]") {
      const std::string& tok = tokens_[pos_++];
      std::vector<Raw>& seq = alts.back();
      if (tok == "|") {
        alts.emplace_back();
      } else if (tok == "...") {
        if (!seq.empty()) seq.back().multiple = true;
      } else if (tok == "[") {
        Raw group;
        group.optional = true;
        group.alts = ParseAlternatives();
        if (pos_ < tokens_.size()) ++pos_;  // "]"
        AddBracket(seq, std::move(group));
      } else {
        Raw word;
        word.word = tok;
        seq.push_back(std::move(word));
      }
    }
    return alts;
  }

  // `x y [x y ...]`: the bracket repeats the elements before it, which become repeatable.
  static void AddBracket(std::vector<Raw>& seq, Raw group) {
    if (group.alts.size() == 1 && !group.alts[0].empty() && group.alts[0].back().multiple) {
      std::vector<Raw> repeated = group.alts[0];
      repeated.back().multiple = false;
      size_t k = repeated.size();
      if (seq.size() >= k) {
        std::vector<Raw> tail(seq.end() - static_cast<std::ptrdiff_t>(k), seq.end());
        if (SeqText(tail) == SeqText(repeated)) {
          seq.resize(seq.size() - k);
          if (k == 1) {
            tail[0].multiple = true;
            seq.push_back(std::move(tail[0]));
          } else {
            Raw block;
            block.alts.push_back(std::move(tail));
            block.multiple = true;
            seq.push_back(std::move(block));
          }
          return;
        }
      }
    }
    seq.push_back(std::move(group));
  }

  std::vector<std::string> tokens_;
  size_t pos_ = 0;
};

std::string TypeOf(std::string_view name) {
  if (name == "key" || name.ends_with("key") || name == "source" || name == "destination") {
    return "key";
  }
  if (name == "pattern") return "pattern";
  if (name.starts_with("unix-time")) return "unix-time";
  static constexpr std::string_view kIntegers[] = {
      "count",   "seconds", "milliseconds", "numkeys",   "offset",    "start",
      "end",     "index",   "cursor",       "increment", "decrement", "protover",
      "timeout", "db",      "limit",        "max_burst", "period",    "quantity",
      "cost",    "ttl",     "numshards",    "port",      "skipme",    "destination-db"};
  for (std::string_view integer : kIntegers) {
    if (name == integer) return "integer";
  }
  if (name.ends_with("-ms")) return "integer";
  return "string";
}

CommandArg ConvertItem(const Raw& raw);
std::vector<CommandArg> ConvertSeq(const std::vector<Raw>& seq);

CommandArg Block(std::vector<CommandArg> args) {
  CommandArg block;
  block.type = "block";
  block.name = args.empty() ? "block" : args[0].name;
  block.arguments = std::move(args);
  return block;
}

// One alternative of a choice or the content of a bracket: a single element, or a leading token
// with its values, or a block.
CommandArg ConvertAlt(const std::vector<Raw>& seq) {
  if (seq.size() == 1) return ConvertItem(seq[0]);
  if (seq.size() >= 2 && IsUpperWord(seq[0]) && !seq[0].multiple) {
    std::vector<Raw> rest(seq.begin() + 1, seq.end());
    CommandArg arg;
    if (rest.size() == 1) {
      arg = ConvertItem(rest[0]);
      if (!arg.token.empty() || arg.optional) arg = Block({std::move(arg)});
    } else {
      arg = Block(ConvertSeq(rest));
    }
    arg.token = seq[0].word;
    return arg;
  }
  return Block(ConvertSeq(seq));
}

CommandArg ConvertItem(const Raw& raw) {
  CommandArg arg;
  if (raw.IsWord()) {
    arg.name = AsciiLower(raw.word);
    if (IsUpperWord(raw)) {
      arg.type = "pure-token";
      arg.token = raw.word;
    } else {
      arg.type = TypeOf(arg.name);
    }
  } else if (raw.alts.size() > 1) {
    arg.type = "oneof";
    for (const std::vector<Raw>& alt : raw.alts) {
      arg.arguments.push_back(ConvertAlt(alt));
      if (!arg.name.empty()) arg.name += '-';
      arg.name += arg.arguments.back().name;
    }
  } else if (!raw.alts.empty() && !raw.alts[0].empty()) {
    if (raw.optional) {
      arg = ConvertAlt(raw.alts[0]);
    } else {
      std::vector<CommandArg> seq = ConvertSeq(raw.alts[0]);  // `x y [x y ...]`
      arg = seq.size() == 1 ? std::move(seq[0]) : Block(std::move(seq));
    }
  }
  if (raw.multiple) {
    // Repeating something optional or repeatable already: repeat a block holding it.
    if (arg.multiple) arg = Block({std::move(arg)});
    arg.multiple = true;
    arg.multiple_token = !arg.token.empty();
  }
  if (raw.optional) {
    if (arg.optional) arg = Block({std::move(arg)});
    arg.optional = true;
  }
  return arg;
}

// A sequence (the top level or a block): outside brackets, `TOKEN value` is still one argument.
std::vector<CommandArg> ConvertSeq(const std::vector<Raw>& seq) {
  std::vector<CommandArg> out;
  for (size_t i = 0; i < seq.size(); ++i) {
    if (IsUpperWord(seq[i]) && !seq[i].multiple && i + 1 < seq.size() && seq[i + 1].IsWord() &&
        !IsUpperWord(seq[i + 1])) {
      CommandArg arg = ConvertItem(seq[i + 1]);
      arg.token = seq[i].word;
      arg.multiple_token = arg.multiple;
      out.push_back(std::move(arg));
      ++i;
      continue;
    }
    out.push_back(ConvertItem(seq[i]));
  }
  return out;
}

void WriteArg(proto::ReplyWriter& reply, const CommandArg& arg) {
  size_t flag_count =
      (arg.optional ? 1 : 0) + (arg.multiple ? 1 : 0) + (arg.multiple_token ? 1 : 0);
  size_t fields =
      2 + (arg.token.empty() ? 0 : 1) + (flag_count > 0 ? 1 : 0) + (arg.arguments.empty() ? 0 : 1);
  reply.MapHeader(fields);
  reply.Bulk("name");
  reply.Bulk(arg.name);
  reply.Bulk("type");
  reply.Bulk(arg.type);
  if (!arg.token.empty()) {
    reply.Bulk("token");
    reply.Bulk(arg.token);
  }
  if (flag_count > 0) {
    reply.Bulk("flags");
    reply.SetHeader(flag_count);
    if (arg.optional) reply.Simple("optional");
    if (arg.multiple) reply.Simple("multiple");
    if (arg.multiple_token) reply.Simple("multiple_token");
  }
  if (!arg.arguments.empty()) {
    reply.Bulk("arguments");
    WriteCommandArgs(reply, arg.arguments);
  }
}

}  // namespace

std::vector<CommandArg> ParseCommandSyntax(std::string_view syntax) {
  Parser parser(syntax);
  return ConvertSeq(parser.ParseTop());
}

void WriteCommandArgs(proto::ReplyWriter& reply, const std::vector<CommandArg>& args) {
  reply.ArrayHeader(args.size());
  for (const CommandArg& arg : args) WriteArg(reply, arg);
}

}  // namespace keep::commands
