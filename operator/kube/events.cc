#include "operator/kube/events.h"

#include <atomic>
#include <chrono>
#include <cstdio>

#include "operator/kube/client.h"
#include "operator/kube/leader_election.h"

namespace keep::kube {

using nlohmann::json;

json EventRecorder::Build(const json& regarding, const std::string& type, const std::string& reason,
                          const std::string& action, const std::string& note) const {
  static std::atomic<uint64_t> seq{0};
  const json& md = regarding.value("metadata", json::object());
  auto ns = std::chrono::system_clock::now().time_since_epoch().count();
  char suffix[40];
  snprintf(suffix, sizeof(suffix), ".%llx%llx", static_cast<unsigned long long>(ns),
           static_cast<unsigned long long>(seq++));
  json ref = {{"apiVersion", regarding.value("apiVersion", "")},
              {"kind", regarding.value("kind", "")},
              {"name", md.value("name", "")},
              {"namespace", md.value("namespace", "")},
              {"uid", md.value("uid", "")}};
  if (md.contains("resourceVersion")) ref["resourceVersion"] = md["resourceVersion"];
  return {{"apiVersion", "events.k8s.io/v1"},
          {"kind", "Event"},
          {"metadata",
           {{"name", md.value("name", "object") + suffix},
            {"namespace", md.value("namespace", "default")}}},
          {"eventTime", NowRfc3339Micro()},
          {"regarding", ref},
          {"type", type},
          {"reason", reason},
          {"action", action},
          {"note", note.substr(0, 1024)},
          {"reportingController", controller_},
          {"reportingInstance", instance_}};
}

void EventRecorder::Emit(const json& regarding, const std::string& type, const std::string& reason,
                         const std::string& action, const std::string& note) {
  json event = Build(regarding, type, reason, action, note);
  fprintf(stderr, "event %s %s/%s %s: %s\n", type.c_str(),
          event["metadata"]["namespace"].get<std::string>().c_str(),
          event["regarding"]["name"].get<std::string>().c_str(), reason.c_str(), note.c_str());
  if (client_ == nullptr) return;
  Response r = client_->Create(
      ResourcePath("events.k8s.io/v1", "events", event["metadata"]["namespace"]), event);
  if (!r.ok()) fprintf(stderr, "event not recorded: %d %s\n", r.status, r.error.c_str());
}

}  // namespace keep::kube
