#include "operator/node_tuner/irq_tuner.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace keep::tuner {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> Read(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  while (!text.empty() && isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  return text;
}

bool Write(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::trunc);
  if (!out) return false;
  out << text << "\n";
  return static_cast<bool>(out.flush());
}

bool IsQueueName(const std::string& name, const std::string& iface) {
  if (name.rfind(iface, 0) != 0 || name.size() <= iface.size()) return false;
  char sep = name[iface.size()];
  if (sep != '-' && sep != '_') return false;
  std::string rest = name.substr(iface.size() + 1);
  std::string lower = rest;
  std::transform(lower.begin(), lower.end(), lower.begin(), ::tolower);
  // Receive or combined queues; "eth0-tx-0" alone is transmit-only.
  return lower.find("rx") != std::string::npos ||
         (!rest.empty() && std::all_of(rest.begin(), rest.end(), ::isdigit));
}

int QueueNumber(const std::string& name) {
  size_t end = name.size();
  size_t start = end;
  while (start > 0 && isdigit(static_cast<unsigned char>(name[start - 1]))) --start;
  return start == end ? 0 : std::stoi(name.substr(start));
}

fs::path StateFile(const Roots& roots) { return fs::path(roots.state_dir) / "saved-affinity.json"; }

}  // namespace

std::optional<std::set<int>> ParseCpuList(const std::string& text) {
  std::set<int> cpus;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    part.erase(std::remove_if(part.begin(), part.end(), ::isspace), part.end());
    if (part.empty()) continue;
    size_t dash = part.find('-');
    try {
      size_t used = 0;
      int lo = std::stoi(part.substr(0, dash), &used);
      if (used != (dash == std::string::npos ? part.size() : dash)) return std::nullopt;
      int hi = lo;
      if (dash != std::string::npos) {
        std::string tail = part.substr(dash + 1);
        hi = std::stoi(tail, &used);
        if (used != tail.size()) return std::nullopt;
      }
      if (lo < 0 || hi < lo || hi > 65535) return std::nullopt;
      for (int c = lo; c <= hi; ++c) cpus.insert(c);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return cpus;
}

std::string FormatCpuList(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int lo = *it, hi = lo;
    ++it;
    while (it != cpus.end() && *it == hi + 1) hi = *it++;
    if (!out.empty()) out.push_back(',');
    out.append(std::to_string(lo));
    if (hi != lo) {
      out.push_back('-');
      out.append(std::to_string(hi));
    }
  }
  return out;
}

std::vector<int> FindQueueIrqs(const Roots& roots, const std::string& interface) {
  std::vector<std::string> ifaces;
  if (!interface.empty()) {
    ifaces.push_back(interface);
  } else {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(fs::path(roots.sys) / "class/net", ec)) {
      if (fs::exists(e.path() / "device")) ifaces.push_back(e.path().filename().string());
    }
    std::sort(ifaces.begin(), ifaces.end());
  }
  std::vector<std::tuple<std::string, int, int>> found;  // iface, queue, irq
  std::ifstream in(fs::path(roots.proc) / "interrupts");
  std::string line;
  while (std::getline(in, line)) {
    std::stringstream ls(line);
    std::string head;
    ls >> head;
    if (head.empty() || head.back() != ':') continue;
    head.pop_back();
    if (head.empty() || !std::all_of(head.begin(), head.end(), ::isdigit)) continue;
    int irq = std::stoi(head);
    std::string token, last;
    while (ls >> token) last = token;
    for (const auto& iface : ifaces) {
      if (IsQueueName(last, iface)) found.emplace_back(iface, QueueNumber(last), irq);
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<int> irqs;
  for (const auto& [iface, queue, irq] : found) irqs.push_back(irq);
  return irqs;
}

std::optional<std::set<int>> FindContainerCpus(const Roots& roots, const Container& c) {
  std::string uid_underscore = c.pod_uid;
  std::replace(uid_underscore.begin(), uid_underscore.end(), '-', '_');
  fs::path cgroup = fs::path(roots.sys) / "fs/cgroup";
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           cgroup, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (!it->is_directory(ec)) continue;
    std::string dir = it->path().filename().string();
    if (dir.find(c.container_id) == std::string::npos || c.container_id.empty()) continue;
    std::string parent = it->path().parent_path().filename().string();
    if (parent.find(c.pod_uid) == std::string::npos &&
        parent.find(uid_underscore) == std::string::npos) {
      continue;
    }
    for (const char* file : {"cpuset.cpus.effective", "cpuset.cpus"}) {
      if (auto text = Read(it->path() / file)) return ParseCpuList(*text);
    }
  }
  return std::nullopt;
}

TuneResult Tune(const Roots& roots, const std::string& interface, const std::string& mode,
                const std::set<int>& exclusive) {
  TuneResult result;
  nlohmann::json saved = nlohmann::json::object();
  if (auto text = Read(StateFile(roots))) {
    saved = nlohmann::json::parse(*text, nullptr, false);
    if (!saved.is_object()) saved = nlohmann::json::object();
  }
  auto irq_file = [&](int irq) {
    return fs::path(roots.proc) / "irq" / std::to_string(irq) / "smp_affinity_list";
  };

  if (exclusive.empty()) {
    for (const auto& [irq, affinity] : saved.items()) {
      fs::path f = irq_file(std::stoi(irq));
      if (Read(f) == affinity.get<std::string>()) continue;
      if (Write(f, affinity.get<std::string>())) {
        result.written[std::stoi(irq)] = affinity.get<std::string>();
      } else {
        result.errors.push_back("cannot restore " + f.string());
      }
    }
    std::error_code ec;
    fs::remove(StateFile(roots), ec);
    return result;
  }

  auto online = ParseCpuList(Read(fs::path(roots.sys) / "devices/system/cpu/online").value_or(""));
  std::set<int> others;
  if (online) {
    for (int c : *online) {
      if (!exclusive.count(c)) others.insert(c);
    }
  }
  std::vector<int> irqs = FindQueueIrqs(roots, interface);
  std::vector<int> cpus(exclusive.begin(), exclusive.end());
  bool saved_changed = false;
  std::vector<std::pair<fs::path, std::string>> writes;
  for (size_t i = 0; i < irqs.size(); ++i) {
    std::set<int> target;
    if (mode == "onto" && i < cpus.size()) {
      target = {cpus[i]};  // one receive queue per shard CPU
    } else {
      target = others;  // every other queue stays off the shards' CPUs
    }
    if (target.empty()) continue;  // nowhere else to go: leave it
    fs::path f = irq_file(irqs[i]);
    auto current = Read(f);
    if (!current) {
      result.errors.push_back("cannot read " + f.string());
      continue;
    }
    std::string key = std::to_string(irqs[i]);
    if (!saved.contains(key)) {
      saved[key] = *current;
      saved_changed = true;
    }
    if (ParseCpuList(*current) == target) continue;
    writes.emplace_back(f, FormatCpuList(target));
    result.written[irqs[i]] = FormatCpuList(target);
  }
  if (saved_changed) {
    // The previous affinity is on disk (written whole, then renamed) before anything changes.
    std::error_code ec;
    fs::create_directories(roots.state_dir, ec);
    fs::path tmp = StateFile(roots).string() + ".tmp";
    bool ok = Write(tmp, saved.dump());
    if (ok) fs::rename(tmp, StateFile(roots), ec);
    if (!ok || ec) {
      result.errors.push_back("cannot save the previous affinity in " + roots.state_dir);
      result.written.clear();
      return result;
    }
  }
  for (const auto& [f, want] : writes) {
    if (!Write(f, want)) {
      result.errors.push_back("cannot write " + f.string());
      result.written.erase(std::stoi(f.parent_path().filename().string()));
    }
  }
  return result;
}

}  // namespace keep::tuner
