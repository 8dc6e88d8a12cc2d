// The e2e node agent (kubelet stand-in + cluster DNS) and a tiny test HTTP server.
module keep.e2e/agent

go 1.26.0

require golang.org/x/net v0.61.0
