#include "dataplane/client/fake_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "dataplane/client/keep_client.h"
#include "dataplane/proto/binary_codec.h"

namespace keep::client::testing {

namespace bin = proto::binary;

namespace {

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Bulk(std::string_view s) {
  std::string out = "$";
  out.append(std::to_string(s.size())).append("\r\n").append(s).append("\r\n");
  return out;
}

}  // namespace

FakeServer::FakeServer(Options options) : options_(std::move(options)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(options_.port);
  ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(listen_fd_, 64);
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

FakeServer::~FakeServer() {
  stopping_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  ::close(listen_fd_);
  if (accept_thread_.joinable()) accept_thread_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
}

std::vector<std::string> FakeServer::frames() {
  std::lock_guard<std::mutex> lock(mu_);
  return frames_;
}

std::vector<size_t> FakeServer::requests_per_read() {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_per_read_;
}

void FakeServer::AcceptLoop() {
  while (!stopping_) {
    int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) return;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(fd);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeServer::Serve(int fd) {
  std::string buf;
  char chunk[65536];
  bool preface_done = false;
  bool authed = options_.secret.empty();
  std::string nonce = "0123456789abcdef";
  std::map<uint32_t, uint64_t> subs;
  while (true) {
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    if (!preface_done) {
      uint8_t version = 0;
      bin::DecodeStatus s = bin::DecodePreface(buf, &version);
      if (s == bin::DecodeStatus::kIncomplete) continue;
      if (s == bin::DecodeStatus::kError) break;
      if (version != bin::kVersion) {
        std::string out;
        bin::EncodeErrorText(
            &out, 0, bin::Status::kError,
            "ERR unsupported protocol version " + std::to_string(version) + " (server speaks 1)");
        WriteAll(fd, out);
        break;
      }
      buf.erase(0, bin::kPrefaceSize);
      preface_done = true;
      std::string out;
      bin::EncodeServerPreface(&out, nonce, !options_.secret.empty());
      if (!WriteAll(fd, out)) break;
    }
    std::vector<std::string> replies;
    std::string extra;
    bin::Decoder decoder;
    size_t offset = 0;
    bool fatal = false;
    while (true) {
      bin::RequestView r;
      size_t consumed = 0;
      bin::DecodeStatus s =
          decoder.DecodeRequest(std::string_view(buf).substr(offset), &r, &consumed);
      if (s == bin::DecodeStatus::kIncomplete) break;
      if (s == bin::DecodeStatus::kError || s == bin::DecodeStatus::kSkip) {
        std::string out;
        bin::EncodeErrorText(&out, 0, bin::Status::kError, decoder.error());
        replies.push_back(out);
        fatal = true;
        break;
      }
      std::string_view frame = std::string_view(buf).substr(offset, consumed);
      {
        std::lock_guard<std::mutex> lock(mu_);
        frames_.emplace_back(frame);
      }
      replies.push_back(Handle(frame, nonce, &authed, &subs, &extra));
      offset += consumed;
    }
    buf.erase(0, offset);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!replies.empty()) requests_per_read_.push_back(replies.size());
    }
    if (options_.reverse_replies) std::reverse(replies.begin(), replies.end());
    std::string out;
    for (auto& r : replies) out += r;
    out += extra;
    if (!WriteAll(fd, out) || fatal) break;
  }
  ::shutdown(fd, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mu_);
  ::close(fd);
  fds_.erase(std::remove(fds_.begin(), fds_.end(), fd), fds_.end());
}

void FakeServer::SetHook(Hook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_ = std::move(hook);
}

std::string FakeServer::Handle(std::string_view frame, std::string_view nonce, bool* authed,
                               std::map<uint32_t, uint64_t>* subs, std::string* extra) {
  bin::Decoder decoder;
  bin::RequestView r;
  size_t consumed = 0;
  decoder.DecodeRequest(frame, &r, &consumed);
  std::string out;
  std::string key(r.key);
  if (r.op == bin::Op::kCommand) {
    // The hooks below act on a COMMAND's first argument too (keep-cli sends everything so).
    std::vector<std::string_view> args;
    if (bin::ParseCommand(r.body, 1024, &args) && args.size() > 1) key.assign(args[1]);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (r.op == bin::Op::kHello) {
    bin::HelloArgs hello;
    if (!bin::ParseHello(r.body, &hello)) {
      bin::EncodeErrorText(&out, r.id, bin::Status::kError, "ERR malformed HELLO body");
    } else if (!options_.secret.empty() && hello.proof != HelloProof(options_.secret, nonce)) {
      bin::EncodeErrorText(&out, r.id, bin::Status::kAuth, "AUTH invalid proof");
    } else {
      *authed = true;
      bin::EncodeHelloReply(&out, r.id, 7, 17825792);
    }
    return out;
  }
  if (hook_ && hook_(r, &out)) return out;
  if (!*authed && r.op != bin::Op::kPing) {
    bin::EncodeErrorText(&out, r.id, bin::Status::kAuth, "AUTH authentication required");
    return out;
  }
  if (key.rfind("stuck", 0) == 0) {
    bin::EncodeBusy(&out, r.id, 1);
    return out;
  }
  if (key.rfind("busy", 0) == 0 && busy_count_[key + std::to_string(r.id)]++ < 2) {
    bin::EncodeBusy(&out, r.id, 1);
    return out;
  }
  if (key == "slow") return out;
  if (key == "moved") {
    bin::EncodeMoved(&out, r.id, 1234, 3, "10.0.0.9", 7002);
    return out;
  }
  switch (r.op) {
    case bin::Op::kPing:
      bin::EncodeOk(&out, r.id, key.empty() ? std::string_view("PONG") : r.key);
      break;
    case bin::Op::kGet: {
      auto it = store_.find(key);
      if (it == store_.end()) {
        bin::EncodeNil(&out, r.id);
      } else {
        bin::EncodeOk(&out, r.id, it->second);
      }
      break;
    }
    case bin::Op::kSet: {
      bin::SetArgs set;
      bin::ParseSet(r.body, &set);
      bool exists = store_.count(key) != 0;
      if (((r.flags & bin::kSetNx) && exists) || ((r.flags & bin::kSetXx) && !exists)) {
        bin::EncodeNil(&out, r.id);
      } else {
        store_[key] = std::string(set.value);
        bin::EncodeOk(&out, r.id);
      }
      break;
    }
    case bin::Op::kDel:
      bin::EncodeInt(&out, r.id, static_cast<int64_t>(store_.erase(key)));
      break;
    case bin::Op::kExists:
    case bin::Op::kExpire:
      bin::EncodeInt(&out, r.id, static_cast<int64_t>(store_.count(key)));
      break;
    case bin::Op::kIncr: {
      bin::IncrArgs incr;
      bin::ParseIncr(r.body, &incr);
      std::string& v = store_[key];
      char* end = nullptr;
      long long cur = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
      if (!v.empty() && *end != '\0') {
        bin::EncodeErrorText(&out, r.id, bin::Status::kError,
                             "ERR value is not an integer or out of range");
        break;
      }
      cur += incr.delta;
      v = std::to_string(cur);
      bin::EncodeInt(&out, r.id, cur);
      break;
    }
    case bin::Op::kLock: {
      bin::LockArgs lock_args;
      bin::ParseLock(r.body, &lock_args);
      auto it = lock_owner_.find(key);
      if (it != lock_owner_.end() && it->second != lock_args.owner) {
        bin::EncodeReply(&out, r.id, bin::Status::kLocked, 0, {});
      } else {
        lock_owner_[key] = std::string(lock_args.owner);
        bin::EncodeInt(&out, r.id, next_token_++);
      }
      break;
    }
    case bin::Op::kUnlock: {
      auto it = lock_owner_.find(key);
      bool mine = it != lock_owner_.end() && it->second == r.body;
      if (mine) lock_owner_.erase(it);
      bin::EncodeInt(&out, r.id, mine ? 1 : 0);
      break;
    }
    case bin::Op::kThrottle: {
      size_t start = bin::BeginReply(&out, r.id, bin::Status::kOk);
      for (int64_t v : {0, 16, 15, -1, 2}) bin::PutI64(&out, v);
      bin::EndFrame(&out, start);
      break;
    }
    case bin::Op::kFixedWindow: {
      size_t start = bin::BeginReply(&out, r.id, bin::Status::kOk);
      for (int64_t v : {1, 99, 1000}) bin::PutI64(&out, v);
      bin::EndFrame(&out, start);
      break;
    }
    case bin::Op::kSubscribe:
      (*subs)[r.id] = 0;
      bin::EncodeReply(&out, r.id, bin::Status::kOk, 0, std::string(8, '\0'));
      bin::EncodeHeartbeat(extra, r.id, 0);
      break;
    case bin::Op::kUnsubscribe: {
      uint32_t sub = 0;
      bin::ParseUnsubscribe(r.body, &sub);
      if (subs->erase(sub)) {
        bin::EncodeOk(&out, r.id);
      } else {
        bin::EncodeNil(&out, r.id);
      }
      break;
    }
    case bin::Op::kPublish:
      // Only this connection's subscriptions: enough to exercise event delivery.
      for (auto& [sub, seq] : *subs) bin::EncodeEvent(extra, sub, ++seq, r.key, r.body);
      bin::EncodeInt(&out, r.id, static_cast<int64_t>(subs->size()));
      break;
    case bin::Op::kTopology: {
      // A single node: this server's port owns every slot.
      bin::Topology topology;
      topology.endpoints.push_back({"127.0.0.1", port_, {{0, bin::kSlotCount - 1}}});
      topology.members.push_back({"", "127.0.0.1", port_, bin::MemberState::kUp, 0, 1});
      bin::EncodeTopologyReply(&out, r.id, topology);
      break;
    }
    case bin::Op::kCommand: {
      std::vector<std::string_view> args;
      if (!bin::ParseCommand(r.body, 1024, &args)) {
        bin::EncodeErrorText(&out, r.id, bin::Status::kError, "ERR malformed COMMAND body");
        break;
      }
      std::string name(args[0]);
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      std::string resp;
      if (name == "PING") {
        resp = args.size() > 1 ? Bulk(args[1]) : "+PONG\r\n";
      } else if (name == "ECHO" && args.size() == 2) {
        resp = Bulk(args[1]);
      } else if (name == "GET" && args.size() == 2) {
        auto it = store_.find(std::string(args[1]));
        resp = it == store_.end() ? "$-1\r\n" : Bulk(it->second);
      } else if (name == "SET" && args.size() == 3) {
        store_[std::string(args[1])] = std::string(args[2]);
        resp = "+OK\r\n";
      } else if (name == "DEL" && args.size() >= 2) {
        int64_t n = 0;
        for (size_t i = 1; i < args.size(); ++i) n += store_.erase(std::string(args[i]));
        resp.append(":").append(std::to_string(n)).append("\r\n");
      } else if (name == "KEYS") {
        resp.append("*").append(std::to_string(store_.size())).append("\r\n");
        for (auto& [k, v] : store_) resp += Bulk(k);
      } else {
        resp.append("-ERR unknown command '").append(args[0]).append("'\r\n");
      }
      bin::EncodeOk(&out, r.id, resp);
      break;
    }
    default:
      bin::EncodeErrorText(&out, r.id, bin::Status::kError,
                           "ERR " + std::string(bin::OpName(r.op)) + " not supported here");
  }
  return out;
}

}  // namespace keep::client::testing
