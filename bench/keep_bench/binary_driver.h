// keep-bench over Keep's binary protocol, through libkeep (dataplane/client/keep_client.h): what an
// application using the client library gets. --connections concurrent callers, each keeping
// --pipeline requests in flight (closed loop) or sending its share of the --rate stream on the
// open-loop schedule (schedule.h) with at most --pipeline in flight, share --sockets libkeep
// connections; with batching on (libkeep's default) the requests of callers on one connection
// that queue while a write is in flight leave together in the next write. Each thread runs its
// own io_context over its sockets, with one timer for the open loop's next due request.
#pragma once

#include <string>

#include "bench/keep_bench/options.h"

namespace keep::bench {

// Empty when the workload maps onto binary ops; else why it does not (the Lua recipes).
std::string BinaryUnsupported(const Options& options);

// Populates (when asked), runs the load and prints the results like the RESP path. Returns the
// process exit status (0, or 2 when the server is unreachable or a connection fails).
int RunBinary(const Options& options);

}  // namespace keep::bench
