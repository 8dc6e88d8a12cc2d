#include <unistd.h>

#include "dataplane/server/server.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) environment.emplace_back(*entry);
  return keep::server::RunServer(args, environment);
}
