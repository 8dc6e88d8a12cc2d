// Kubernetes Events (events.k8s.io/v1) about the objects the operator manages.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace keep::kube {

class Client;

class EventRecorder {
 public:
  EventRecorder(Client* client, std::string controller, std::string instance)
      : client_(client), controller_(std::move(controller)), instance_(std::move(instance)) {}

  // The event object (pure; tested).
  nlohmann::json Build(const nlohmann::json& regarding, const std::string& type,
                       const std::string& reason, const std::string& action,
                       const std::string& note) const;
  // Posts it; failures are logged, never fatal (events are best effort).
  void Emit(const nlohmann::json& regarding, const std::string& type, const std::string& reason,
            const std::string& action, const std::string& note);

 private:
  Client* client_;
  std::string controller_;
  std::string instance_;
};

}  // namespace keep::kube
