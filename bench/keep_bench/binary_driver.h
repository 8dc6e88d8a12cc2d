// keep-bench over Keep's binary protocol, through libkeep (dataplane/client/keep_client.h): what an
// application using the client library gets. --connections concurrent callers, each keeping
// --pipeline requests in flight (closed loop), share --sockets libkeep connections; with batching
// on (libkeep's default) the requests of callers on one connection that queue while a write is in
// flight leave together in the next write. Each thread runs its own io_context over its sockets.
#pragma once

#include <string>

#include "bench/keep_bench/options.h"

namespace keep::bench {

// Empty when the workload maps onto binary ops; else why it does not (the Lua recipes, the open
// loop).
std::string BinaryUnsupported(const Options& options);

// Populates (when asked), runs the load and prints the results like the RESP path. Returns the
// process exit status (0, or 2 when the server is unreachable or a connection fails).
int RunBinary(const Options& options);

}  // namespace keep::bench
