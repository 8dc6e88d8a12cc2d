// Process wiring for keep-server: configuration, CPU budget, listeners, shards, signals.
#pragma once

#include <string>
#include <vector>

namespace keep::server {

// Runs the server until SIGTERM (clean stop) or a second SIGINT; returns the exit code.
int RunServer(const std::vector<std::string>& argv, const std::vector<std::string>& environment);

}  // namespace keep::server
