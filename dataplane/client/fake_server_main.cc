// keep-fake-server [--port N] [--secret S]: runs FakeServer until killed (for trying keep-cli).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "dataplane/client/fake_server.h"

int main(int argc, char** argv) {
  keep::client::testing::FakeServer::Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0)
      options.port = static_cast<uint16_t>(std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--secret") == 0) options.secret = argv[i + 1];
  }
  keep::client::testing::FakeServer server(options);
  std::printf("listening on 127.0.0.1:%u\n", server.port());
  std::fflush(stdout);
  server.Wait();
  return 0;
}
