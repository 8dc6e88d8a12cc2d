// keep-cli: a redis-cli-like shell for Keep. Speaks the binary protocol through libkeep (every
// command travels as the generic COMMAND op, whose reply is RESP bytes) or plain RESP with --resp;
// both print through the same redis-cli-style formatter. Line editing and history come from GNU
// readline.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dataplane/client/cluster_client.h"
#include "dataplane/client/keep_client.h"

namespace {

struct CommandHelp {
  const char* name;
  const char* args;
  const char* summary;
};

constexpr CommandHelp kHelp[] = {
    {"PING", "[message]", "Ping the server."},
    {"GET", "key", "Get the value of a key."},
    {"SET", "key value [EX s|PX ms|KEEPTTL] [NX|XX] [GET]", "Set the string value of a key."},
    {"DEL", "key [key ...]", "Delete keys."},
    {"EXISTS", "key [key ...]", "Count the keys that exist."},
    {"INCR", "key", "Increment the integer value of a key by one."},
    {"INCRBY", "key delta", "Increment the integer value of a key by delta."},
    {"EXPIRE", "key seconds [NX|XX|GT|LT]", "Set a key's time to live in seconds."},
    {"PEXPIRE", "key ms [NX|XX|GT|LT]", "Set a key's time to live in milliseconds."},
    {"TTL", "key", "Get the time to live of a key in seconds."},
    {"LOCK", "key owner ttl-ms", "Take a lock; returns a fencing token or nil."},
    {"UNLOCK", "key owner", "Release a lock held by owner."},
    {"LOCKEXTEND", "key owner ttl-ms", "Extend a lock held by owner."},
    {"CL.THROTTLE", "key max_burst count period [quantity]", "GCRA rate limit (redis-cell)."},
    {"RATE.FIXED", "key limit window-ms [cost]", "Fixed-window rate limit."},
    {"DELPREFIX", "prefix", "Delete every key starting with prefix."},
    {"PUBLISH", "channel message", "Post a message to a channel."},
    {"KEYS", "pattern", "Find keys matching a pattern."},
    {"SCAN", "cursor [MATCH pattern] [COUNT n]", "Iterate over keys."},
    {"INFO", "[section]", "Server information."},
    {"CLUSTER", "SHARDS|SLOTS|NODES|INFO", "Cluster topology."},
};

const CommandHelp* FindHelp(std::string_view name) {
  for (const CommandHelp& h : kHelp) {
    if (strncasecmp(h.name, name.data(), name.size()) == 0 && h.name[name.size()] == '\0') {
      return &h;
    }
  }
  return nullptr;
}

void PrintUsage() {
  std::cout << "Usage: keep-cli [options] [command [arg ...]]\n"
               "  -h <host>      server host (default 127.0.0.1)\n"
               "  -p <port>      server port (default 7000)\n"
               "  --resp         speak RESP instead of the binary protocol\n"
               "  --cluster      route each command to the shard owning its key's slot across the\n"
               "                 cluster's members (-h/-p name any member; the secret below also\n"
               "                 places keys on slots, else commands follow MOVED)\n"
               "  --secret-file <path>  client secret for the binary HELLO (or KEEP_SECRET in "
               "the\n                 environment; secrets are never taken from flags)\n"
               "  --timeout <ms> per-request timeout (default 5000)\n"
               "  --help         this help; `keep-cli help <command>` or `keep-cli <command> "
               "--help` for a command\n"
               "Without a command, keep-cli starts an interactive shell (help, help <command>, "
               "quit;\nhistory in ~/.keepcli_history); with stdin not a terminal it runs one "
               "command per line.\n";
}

// The value of the bulk string that follows `field` as a bulk string in a RESP reply (COMMAND
// DOCS: "summary", "since", ...); empty if absent.
std::string DocField(std::string_view resp, std::string_view field) {
  std::string needle(1, '$');
  needle.append(std::to_string(field.size())).append("\r\n").append(field).append("\r\n$");
  size_t at = resp.find(needle);
  if (at == std::string_view::npos) return "";
  at += needle.size();
  size_t eol = resp.find("\r\n", at);
  if (eol == std::string_view::npos) return "";
  long len = std::strtol(std::string(resp.substr(at, eol - at)).c_str(), nullptr, 10);
  if (len <= 0 || eol + 2 + static_cast<size_t>(len) > resp.size()) return "";
  return std::string(resp.substr(eol + 2, static_cast<size_t>(len)));
}

// `fetch_docs(name)` returns the server's COMMAND DOCS reply for commands keep-cli has no table
// entry for (empty when the server cannot be asked).
void PrintCommandHelp(std::string_view name,
                      const std::function<std::string(std::string_view)>& fetch_docs = nullptr) {
  const CommandHelp* h = FindHelp(name);
  if (h != nullptr) {
    std::cout << "\n  " << h->name << " " << h->args << "\n  summary: " << h->summary << "\n\n";
    return;
  }
  std::string docs = fetch_docs ? fetch_docs(name) : "";
  std::string summary = DocField(docs, "summary");
  if (summary.empty()) {
    std::cout << "No help for '" << name << "'; the server may still know it.\n";
    return;
  }
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::cout << "\n  " << upper << "\n  summary: " << summary;
  if (std::string since = DocField(docs, "since"); !since.empty()) {
    std::cout << "\n  since: " << since;
  }
  if (std::string group = DocField(docs, "group"); !group.empty()) {
    std::cout << "\n  group: " << group;
  }
  std::cout << "\n\n";
}

void PrintHelpIndex() {
  std::cout << "keep-cli: type a command and its arguments, e.g. `set a 1`.\n"
               "  help <command>  show a command's syntax\n"
               "  quit            leave\nCommands:\n";
  for (const CommandHelp& h : kHelp) std::cout << "  " << h.name << " " << h.args << "\n";
}

// ---- RESP reply formatting, as redis-cli prints it ----

// Formats one RESP reply from the front of `resp`; returns bytes used, or 0 if incomplete/bad.
size_t FormatReply(std::string_view resp, const std::string& indent, std::string* out) {
  size_t eol = resp.find("\r\n");
  if (resp.empty() || eol == std::string_view::npos) return 0;
  std::string_view line = resp.substr(1, eol - 1);
  size_t used = eol + 2;
  switch (resp[0]) {
    case '+':
      out->append(line).append("\n");
      return used;
    case '-':
      out->append("(error) ").append(line).append("\n");
      return used;
    case ':':
      out->append("(integer) ").append(line).append("\n");
      return used;
    case ',':
      out->append("(double) ").append(line).append("\n");
      return used;
    case '#':
      out->append(line == "t" ? "(true)\n" : "(false)\n");
      return used;
    case '_':
      out->append("(nil)\n");
      return used;
    case '$':
    case '=': {
      long len = std::strtol(std::string(line).c_str(), nullptr, 10);
      if (len < 0) {
        out->append("(nil)\n");
        return used;
      }
      if (resp.size() < used + static_cast<size_t>(len) + 2) return 0;
      std::string_view s = resp.substr(used, static_cast<size_t>(len));
      out->push_back('"');
      for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
          out->push_back('\\');
          out->push_back(static_cast<char>(c));
        } else if (std::isprint(c)) {
          out->push_back(static_cast<char>(c));
        } else if (c == '\n') {
          out->append("\\n");
        } else if (c == '\r') {
          out->append("\\r");
        } else {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "\\x%02x", c);
          out->append(hex);
        }
      }
      out->append("\"\n");
      return used + static_cast<size_t>(len) + 2;
    }
    case '*':
    case '~':
    case '>':
    case '%': {
      long n = std::strtol(std::string(line).c_str(), nullptr, 10);
      if (n < 0) {
        out->append("(nil)\n");
        return used;
      }
      if (resp[0] == '%') n *= 2;
      if (n == 0) {
        out->append("(empty array)\n");
        return used;
      }
      int width = static_cast<int>(std::to_string(n).size());
      for (long i = 0; i < n; ++i) {
        char prefix[32];
        std::snprintf(prefix, sizeof(prefix), "%*ld) ", width, i + 1);
        if (i > 0) out->append(indent);
        out->append(prefix);
        size_t n_used = FormatReply(resp.substr(used), indent + std::string(width + 2, ' '), out);
        if (n_used == 0) return 0;
        used += n_used;
      }
      return used;
    }
    default:
      return 0;
  }
}

// ---- Transports ----

class Transport {
 public:
  virtual ~Transport() = default;
  // The reply formatted as redis-cli prints it, or an error line ("(error) ...").
  virtual std::string Run(const std::vector<std::string>& args) = 0;
  // The raw RESP reply bytes; empty on failure.
  virtual std::string Raw(const std::vector<std::string>& args) = 0;
};

class BinaryTransport : public Transport {
 public:
  explicit BinaryTransport(keep::client::Options options) : client_(std::move(options)) {}
  std::string Run(const std::vector<std::string>& args) override {
    try {
      std::string resp = client_.Command(args);
      std::string out;
      if (FormatReply(resp, "", &out) == 0) return "(error) malformed reply\n";
      return out;
    } catch (const keep::client::Error& e) {
      // BUSY, MOVED and the other statuses: named the way redis-cli names error replies.
      std::string out = "(error) ";
      out.append(e.message()).append("\n");
      return out;
    }
  }
  std::string Raw(const std::vector<std::string>& args) override {
    try {
      return client_.Command(args);
    } catch (const keep::client::Error&) {
      return "";
    }
  }

 private:
  keep::client::SyncClient client_;
};

// --cluster: libkeep's ClusterClient on its own thread. Each command goes to the shard owning
// its first argument's slot (a keyless command's first argument picks a shard all the same),
// following MOVED and retrying BUSY.
class ClusterTransport : public Transport {
 public:
  explicit ClusterTransport(const keep::client::Options& options)
      : work_(boost::asio::make_work_guard(io_)) {
    keep::client::ClusterOptions o;
    o.seeds = {{options.host, options.port}};
    o.connection = options;
    o.slot_secret = options.secret;
    cluster_ = keep::client::ClusterClient::Create(io_, std::move(o));
    thread_ = std::thread([this] { io_.run(); });
    std::promise<std::optional<keep::client::Error>> started;
    auto future = started.get_future();
    boost::asio::post(io_, [&] {
      cluster_->AsyncStart([&started](auto error) { started.set_value(std::move(error)); });
    });
    if (std::optional<keep::client::Error> error = future.get()) {
      Shutdown();
      throw *error;
    }
  }
  ~ClusterTransport() override { Shutdown(); }
  std::string Run(const std::vector<std::string>& args) override {
    keep::client::Result r = Call(args);
    if (!r.ok()) return "(error) " + r.error->message() + "\n";
    std::string out;
    if (FormatReply(r.body, "", &out) == 0) return "(error) malformed reply\n";
    return out;
  }
  std::string Raw(const std::vector<std::string>& args) override {
    keep::client::Result r = Call(args);
    return r.ok() ? r.body : "";
  }

 private:
  keep::client::Result Call(const std::vector<std::string>& args) {
    std::promise<keep::client::Result> done;
    auto future = done.get_future();
    boost::asio::post(io_, [&] {
      cluster_->AsyncCommand(args,
                             [&done](keep::client::Result r) { done.set_value(std::move(r)); });
    });
    return future.get();
  }
  void Shutdown() {
    if (!thread_.joinable()) return;
    boost::asio::post(io_, [this] { cluster_->Close(); });
    work_.reset();
    thread_.join();
  }

  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::shared_ptr<keep::client::ClusterClient> cluster_;
  std::thread thread_;
};

class RespTransport : public Transport {
 public:
  RespTransport(const std::string& host, uint16_t port) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) {
      throw std::runtime_error("cannot resolve " + host);
    }
    for (addrinfo* a = res; a != nullptr && fd_ < 0; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
      if (fd >= 0 && ::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
      } else if (fd >= 0) {
        ::close(fd);
      }
    }
    freeaddrinfo(res);
    if (fd_ < 0) {
      throw std::runtime_error("Could not connect to Keep at " + host + ":" + std::to_string(port) +
                               ": " + std::strerror(errno));
    }
  }
  ~RespTransport() override {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string Run(const std::vector<std::string>& args) override {
    std::string raw = Raw(args);
    if (raw.empty()) return "(error) connection lost\n";
    std::string out;
    FormatReply(raw, "", &out);
    return out;
  }
  std::string Raw(const std::vector<std::string>& args) override {
    std::string req = "*";
    req.append(std::to_string(args.size())).append("\r\n");
    for (const std::string& a : args) {
      req.append("$").append(std::to_string(a.size())).append("\r\n").append(a).append("\r\n");
    }
    for (size_t off = 0; off < req.size();) {
      ssize_t n = ::send(fd_, req.data() + off, req.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return "";
      off += static_cast<size_t>(n);
    }
    while (true) {
      std::string out;
      size_t used = FormatReply(buf_, "", &out);
      if (used > 0) {
        std::string raw = buf_.substr(0, used);
        buf_.erase(0, used);
        return raw;
      }
      char chunk[65536];
      ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) return "";
      buf_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  int fd_ = -1;
  std::string buf_;
};

// Splits an interactive line like redis-cli: blanks separate, "..." and '...' quote.
std::optional<std::vector<std::string>> SplitLine(std::string_view line) {
  std::vector<std::string> args;
  size_t i = 0;
  while (true) {
    while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
    if (i == line.size()) return args;
    std::string cur;
    while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i]))) {
      char q = line[i];
      if (q == '"' || q == '\'') {
        ++i;
        while (i < line.size() && line[i] != q) {
          if (q == '"' && line[i] == '\\' && i + 1 < line.size()) {
            char e = line[++i];
            cur.push_back(e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
          } else {
            cur.push_back(line[i]);
          }
          ++i;
        }
        if (i == line.size()) return std::nullopt;  // unbalanced quotes
        ++i;
      } else {
        cur.push_back(line[i++]);
      }
    }
    args.push_back(std::move(cur));
  }
}

bool WantsHelp(const std::vector<std::string>& args) {
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--help") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  uint16_t port = 7000;
  bool resp = false;
  bool cluster = false;
  keep::client::Options options;
  options.client_name = "keep-cli";
  if (const char* secret = std::getenv("KEEP_SECRET"); secret != nullptr) options.secret = secret;
  options.timeout = std::chrono::milliseconds(5000);
  std::vector<std::string> command;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (!command.empty()) {
      command.push_back(a);
    } else if (a == "-h" && i + 1 < argc) {
      host = argv[++i];
    } else if (a == "-p" && i + 1 < argc) {
      port = static_cast<uint16_t>(std::atoi(argv[++i]));
    } else if (a == "--resp") {
      resp = true;
    } else if (a == "--cluster") {
      cluster = true;
    } else if (a == "--secret-file" && i + 1 < argc) {
      std::ifstream in(argv[++i]);
      if (!in || !std::getline(in, options.secret) || options.secret.empty()) {
        std::cerr << "keep-cli: cannot read a secret from '" << argv[i] << "'\n";
        return 1;
      }
    } else if (a == "--timeout" && i + 1 < argc) {
      options.timeout = std::chrono::milliseconds(std::atoi(argv[++i]));
    } else if (a == "--help" || a == "-?") {
      PrintUsage();
      return 0;
    } else {
      command.push_back(a);
    }
  }
  if (!command.empty() && (strcasecmp(command[0].c_str(), "help") == 0)) {
    if (command.size() == 1) {
      PrintHelpIndex();
      return 0;
    }
    command = {command[1], "--help"};  // `help X` is `X --help`
  }
  bool wants_help = !command.empty() && WantsHelp(command);
  if (wants_help && FindHelp(command[0]) != nullptr) {
    PrintCommandHelp(command[0]);
    return 0;
  }

  std::unique_ptr<Transport> transport;
  try {
    if (resp && cluster) {
      std::cerr << "keep-cli: --cluster routes binary requests; it cannot go with --resp\n";
      return 1;
    }
    options.host = host;
    options.port = port;
    if (resp) {
      transport = std::make_unique<RespTransport>(host, port);
    } else if (cluster) {
      transport = std::make_unique<ClusterTransport>(options);
    } else {
      transport = std::make_unique<BinaryTransport>(options);
    }
  } catch (const std::exception& e) {
    std::cerr << "Could not connect to Keep at " << host << ":" << port << ": " << e.what() << "\n";
    return 1;
  }

  auto fetch_docs = [&](std::string_view name) {
    return transport->Raw({"COMMAND", "DOCS", std::string(name)});
  };
  if (wants_help) {
    PrintCommandHelp(command[0], fetch_docs);
    return 0;
  }
  if (!command.empty()) {
    std::string out = transport->Run(command);
    std::cout << out;
    return out.rfind("(error)", 0) == 0 ? 1 : 0;
  }

  if (!isatty(STDIN_FILENO)) {
    // Commands from a pipe or a file, one per line, like redis-cli.
    std::string line;
    int status = 0;
    while (std::getline(std::cin, line)) {
      auto args = SplitLine(line);
      if (!args) {
        std::cout << "Invalid argument(s)\n";
        status = 1;
        continue;
      }
      if (args->empty()) continue;
      std::string out = transport->Run(*args);
      if (out.rfind("(error)", 0) == 0) status = 1;
      std::cout << out << std::flush;
    }
    return status;
  }
  std::string prompt = host;
  prompt.append(":").append(std::to_string(port)).append("> ");
  const char* home = std::getenv("HOME");
  const std::string history = home ? std::string(home) + "/.keepcli_history" : "";
  if (!history.empty()) read_history(history.c_str());
  while (char* raw = readline(prompt.c_str())) {
    std::string line(raw);
    std::free(raw);
    auto args = SplitLine(line);
    if (!args) {
      std::cout << "Invalid argument(s)\n";
      continue;
    }
    if (args->empty()) continue;
    add_history(line.c_str());
    const std::string& name = (*args)[0];
    if (strcasecmp(name.c_str(), "quit") == 0 || strcasecmp(name.c_str(), "exit") == 0) break;
    if (strcasecmp(name.c_str(), "help") == 0) {
      if (args->size() > 1) {
        PrintCommandHelp((*args)[1], fetch_docs);
      } else {
        PrintHelpIndex();
      }
      continue;
    }
    if (WantsHelp(*args)) {
      PrintCommandHelp(name, fetch_docs);
      continue;
    }
    std::cout << transport->Run(*args) << std::flush;
  }
  if (!history.empty()) write_history(history.c_str());
  return 0;
}
