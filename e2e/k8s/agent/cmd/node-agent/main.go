// Command node-agent plays the kubelet's part for the e2e control plane: it registers Nodes,
// runs the containers of the pods bound to them as local processes (each in its own mount and
// UTS namespace, on its own 127.0.x.y address), reports their status, and serves cluster DNS.
//
//	node-agent [flags]                       run (see -h)
//	node-agent pod-exec SPEC.json            internal: set up a pod's namespaces, exec its process
//	node-agent cleanup --state-dir DIR       remove mount-point dirs the agent created on the host
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

type Config struct {
	Kubeconfig   string
	StateDir     string
	Nodes        int
	NodePrefix   string
	NodeIPBase   string // "127.0.100": node n is 127.0.(100+n).1, its pods .2-.254
	DNSAddr      string
	ClusterDom   string
	CPU          string
	Memory       string
	Hugepages2Mi string
	ImagePath    []string
	APIHost      string
	APIPort      string
	K8sVersion   string
	KubeletCert  string
	KubeletKey   string
	KubeletPort  int
	MaxBackoff   time.Duration
	Owner        string
}

type Agent struct {
	cfg    Config
	c      *Client
	nodes  map[string]*Node // by name
	ctx    context.Context
	mu     sync.Mutex
	pods   map[string]*Pod // all pods in the cluster, by ns/name
	svcs   map[string]*Service
	worker map[string]*podWorker // by pod UID
	wg     sync.WaitGroup
	proxy  *serviceProxy
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "pod-exec":
			podExecMain(os.Args[2:])
			return
		case "cleanup":
			cleanupMain(os.Args[2:])
			return
		}
	}
	var cfg Config
	var imagePath string
	fs := flag.NewFlagSet("node-agent", flag.ExitOnError)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig (server, CA, client cert)")
	fs.StringVar(&cfg.StateDir, "state-dir", "/dev/shm/keep-e2e-agent", "pod directories")
	fs.IntVar(&cfg.Nodes, "nodes", 1, "number of Nodes to register (1..7)")
	fs.StringVar(&cfg.NodePrefix, "node-prefix", "keep-node-", "node name prefix")
	fs.StringVar(&cfg.NodeIPBase, "node-ip-base", "127.0.100", "node n gets 127.0.(X+n).0/24 for X the last part")
	fs.StringVar(&cfg.DNSAddr, "dns-addr", "127.0.100.53", "cluster DNS listen address (port 53)")
	fs.StringVar(&cfg.ClusterDom, "cluster-domain", "cluster.local", "cluster domain")
	fs.StringVar(&cfg.CPU, "cpu", "8", "cpu capacity per node")
	fs.StringVar(&cfg.Memory, "memory", "16Gi", "memory capacity per node")
	fs.StringVar(&cfg.Hugepages2Mi, "hugepages-2mi", "1Gi", "hugepages-2Mi capacity per node")
	fs.StringVar(&imagePath, "image-path", "", "colon-separated dirs holding the binaries images map to")
	fs.StringVar(&cfg.APIHost, "api-host", "127.0.0.1", "KUBERNETES_SERVICE_HOST given to pods")
	fs.StringVar(&cfg.APIPort, "api-port", "6443", "KUBERNETES_SERVICE_PORT given to pods")
	fs.StringVar(&cfg.K8sVersion, "k8s-version", "v0.0.0", "kubelet version reported by the nodes")
	fs.StringVar(&cfg.KubeletCert, "kubelet-cert", "", "serving cert of the kubelet API (logs)")
	fs.StringVar(&cfg.KubeletKey, "kubelet-key", "", "serving key of the kubelet API")
	fs.IntVar(&cfg.KubeletPort, "kubelet-port", 10250, "kubelet API port on each node IP")
	fs.DurationVar(&cfg.MaxBackoff, "max-restart-backoff", 20*time.Second, "crash-loop backoff cap")
	_ = fs.Parse(os.Args[1:])
	cfg.ImagePath = strings.Split(imagePath, ":")
	cfg.Owner = os.Getenv("KEEP_E2E_OWNER")
	if cfg.Nodes < 1 || cfg.Nodes > 7 {
		log.Fatalf("--nodes must be 1..7")
	}
	c, err := LoadKubeconfig(cfg.Kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{cfg: cfg, c: c, ctx: ctx, nodes: map[string]*Node{}, pods: map[string]*Pod{},
		svcs: map[string]*Service{}, worker: map[string]*podWorker{}}

	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	a.proxy = newServiceProxy(a)
	if err := a.startDNS(); err != nil {
		log.Fatalf("dns: %v", err)
	}
	for i := 1; i <= cfg.Nodes; i++ {
		n := newNode(a, i)
		a.nodes[n.name] = n
	}
	for _, n := range a.nodes {
		for ctx.Err() == nil {
			if err := n.register(ctx); err != nil {
				log.Printf("register %s: %v", n.name, err)
				sleepCtx(ctx, time.Second)
				continue
			}
			break
		}
	}
	if cfg.KubeletCert != "" {
		a.startKubeletAPI()
	}
	svcInf := NewInformer(c, "/api/v1/services", a.onService)
	podInf := NewInformer(c, "/api/v1/pods", a.onPod)
	go svcInf.Run(ctx)
	go podInf.Run(ctx)
	go a.resyncLoop()
	log.Printf("node agent running: %d node(s), dns %s", cfg.Nodes, cfg.DNSAddr)

	<-sig
	log.Printf("shutting down: stopping all pods")
	a.mu.Lock()
	for _, w := range a.worker {
		w.shutdown()
	}
	a.mu.Unlock()
	done := make(chan struct{})
	go func() { a.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		log.Printf("pods did not stop in 10s")
	}
	cancel()
	removeCreatedMountpoints(cfg.StateDir)
}

func (a *Agent) onService(typ string, raw json.RawMessage) {
	if raw == nil {
		return
	}
	var s Service
	if err := json.Unmarshal(raw, &s); err != nil {
		return
	}
	key := s.Metadata.Namespace + "/" + s.Metadata.Name
	a.mu.Lock()
	defer a.mu.Unlock()
	if typ == "DELETED" {
		delete(a.svcs, key)
	} else {
		a.svcs[key] = &s
	}
	a.proxy.kick()
}

func (a *Agent) onPod(typ string, raw json.RawMessage) {
	switch typ {
	case "SYNC-BEGIN":
		a.mu.Lock()
		a.pods = map[string]*Pod{}
		a.mu.Unlock()
		return
	case "SYNC-END":
		// Pods that vanished while we were not watching: stop their workers.
		a.mu.Lock()
		for uid, w := range a.worker {
			if p, ok := a.pods[w.key]; !ok || p.Metadata.UID != uid {
				w.vanished()
			}
		}
		a.mu.Unlock()
		return
	}
	var p Pod
	if err := json.Unmarshal(raw, &p); err != nil {
		log.Printf("decode pod: %v", err)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if typ == "DELETED" {
		if cur, ok := a.pods[p.Key()]; ok && cur.Metadata.UID == p.Metadata.UID {
			delete(a.pods, p.Key())
		}
		if w, ok := a.worker[p.Metadata.UID]; ok {
			w.vanished()
		}
		return
	}
	a.pods[p.Key()] = &p
	node, ours := a.nodes[p.Spec.NodeName]
	if !ours {
		return
	}
	w, ok := a.worker[p.Metadata.UID]
	if !ok {
		if p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" {
			return // finished before we (re)started; nothing to run
		}
		w = newPodWorker(a, node, &p)
		a.worker[p.Metadata.UID] = w
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			w.run()
			a.mu.Lock()
			delete(a.worker, p.Metadata.UID)
			a.mu.Unlock()
		}()
	}
	w.update(&p)
}

// resyncLoop refreshes configMap/secret volumes of running pods (the kubelet does it periodically).
func (a *Agent) resyncLoop() {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-t.C:
		}
		a.mu.Lock()
		ws := make([]*podWorker, 0, len(a.worker))
		for _, w := range a.worker {
			ws = append(ws, w)
		}
		a.mu.Unlock()
		for _, w := range ws {
			w.refreshVolumes()
		}
	}
}

func (a *Agent) podsSnapshot() []*Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*Pod, 0, len(a.pods))
	for _, p := range a.pods {
		out = append(out, p)
	}
	return out
}

func cleanupMain(args []string) {
	fs := flag.NewFlagSet("cleanup", flag.ExitOnError)
	dir := fs.String("state-dir", "", "agent state dir")
	_ = fs.Parse(args)
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "cleanup: --state-dir required")
		os.Exit(2)
	}
	removeCreatedMountpoints(*dir)
}
