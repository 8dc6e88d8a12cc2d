package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type termInfo struct {
	ExitCode   int
	Signal     int
	Reason     string
	StartedAt  time.Time
	FinishedAt time.Time
	ID         string
}

type ctrState struct {
	spec         Container
	init         bool
	restartCount int
	state        string // waiting | running | terminated
	reason       string // waiting reason
	message      string
	startedAt    time.Time
	term         *termInfo // current state when terminated
	last         *termInfo // lastState
	ready        bool
	started      bool
	binary       string
	pid          int // process group id of the running process
	runID        string
	killReason   string
}

type podWorker struct {
	a    *Agent
	node *Node
	key  string
	uid  string
	dir  string

	mu        sync.Mutex
	pod       *Pod
	notify    chan struct{}
	dirty     chan struct{}
	gone      bool // the API object is gone: kill at once, no final delete
	deleting  bool
	shutdownF bool // agent shutdown: stop processes, leave the API object alone
	ip        string
	phase     string
	initDone  bool
	ctrs      []*ctrState
	startTime time.Time
	condTimes map[string]condTime
	stopCh    chan struct{}
	stopOnce  sync.Once
	volErr    string
}

type condTime struct {
	status string
	at     time.Time
}

func newPodWorker(a *Agent, n *Node, p *Pod) *podWorker {
	w := &podWorker{a: a, node: n, key: p.Key(), uid: p.Metadata.UID, pod: p,
		dir:    filepath.Join(a.cfg.StateDir, "pods", p.Metadata.UID),
		notify: make(chan struct{}, 1), dirty: make(chan struct{}, 1),
		phase: "Pending", condTimes: map[string]condTime{}, stopCh: make(chan struct{}),
		startTime: time.Now()}
	for _, c := range p.Spec.InitContainers {
		w.ctrs = append(w.ctrs, &ctrState{spec: c, init: true, state: "waiting", reason: "PodInitializing"})
	}
	for _, c := range p.Spec.Containers {
		w.ctrs = append(w.ctrs, &ctrState{spec: c, state: "waiting", reason: "ContainerCreating"})
	}
	return w
}

func (w *podWorker) update(p *Pod) {
	w.mu.Lock()
	w.pod = p
	if p.Metadata.DeletionTimestamp != nil && !w.deleting {
		w.deleting = true
		w.stop()
	}
	w.mu.Unlock()
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

func (w *podWorker) vanished() {
	w.mu.Lock()
	w.gone = true
	w.stop()
	w.mu.Unlock()
}

func (w *podWorker) shutdown() {
	w.mu.Lock()
	w.shutdownF = true
	w.stop()
	w.mu.Unlock()
}

func (w *podWorker) stop() { w.stopOnce.Do(func() { close(w.stopCh) }) }

func (w *podWorker) stopped() bool {
	select {
	case <-w.stopCh:
		return true
	default:
		return false
	}
}

func (w *podWorker) markDirty() {
	select {
	case w.dirty <- struct{}{}:
	default:
	}
}

func (w *podWorker) snapshotPod() *Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

func (w *podWorker) logf(format string, args ...any) {
	log.Printf("pod %s: %s", w.key, fmt.Sprintf(format, args...))
}

// run is the pod's lifecycle: set up, init containers, containers, stop, final delete.
func (w *podWorker) run() {
	ctx := w.a.ctx
	reporterDone, reporterStop := make(chan struct{}), make(chan struct{})
	go w.reporter(reporterStop, reporterDone)
	defer func() {
		close(reporterStop)
		<-reporterDone
	}()

	if !w.stopped() {
		w.setup()
	}
	var wg sync.WaitGroup
	if !w.stopped() && w.runInit() {
		w.mu.Lock()
		w.initDone = true
		w.mu.Unlock()
		w.markDirty()
		for _, cs := range w.ctrs {
			if cs.init {
				continue
			}
			wg.Add(1)
			go func(cs *ctrState) { defer wg.Done(); w.runContainer(cs) }(cs)
		}
	}
	allDone := make(chan struct{})
	go func() { wg.Wait(); close(allDone) }()
	select {
	case <-w.stopCh:
	case <-allDone:
		// Completed (restartPolicy Never/OnFailure): report, free the IP, wait for deletion.
		w.markDirty()
		select {
		case <-w.stopCh:
		case <-ctx.Done():
		}
	}
	w.terminateAll()
	wg.Wait()
	w.mu.Lock()
	deleting, gone, shutdown := w.deleting, w.gone, w.shutdownF
	uid := w.uid
	w.mu.Unlock()
	if deleting && !gone && !shutdown {
		// The kubelet's final delete: grace 0, preconditioned on the UID.
		body := map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
			"preconditions": map[string]any{"uid": uid}}
		p := w.snapshotPod()
		path := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s", p.Metadata.Namespace, p.Metadata.Name)
		for i := 0; i < 20; i++ {
			err := w.a.c.Do(context.Background(), "DELETE", path, "", body, nil)
			if err == nil || IsNotFound(err) || IsConflict(err) {
				break
			}
			w.logf("final delete: %v", err)
			time.Sleep(500 * time.Millisecond)
		}
	}
	w.releaseIP()
	os.RemoveAll(w.dir)
	w.logf("stopped")
}

func (w *podWorker) releaseIP() {
	w.mu.Lock()
	ip := w.ip
	w.mu.Unlock()
	if ip != "" {
		w.node.freeIP(ip)
	}
}

// setup allocates the pod IP, writes the pod dir (hosts, resolv.conf) and materializes volumes.
func (w *podWorker) setup() {
	ip, err := w.node.allocIP()
	if err != nil {
		w.logf("%v", err)
		return
	}
	w.mu.Lock()
	w.ip = ip
	w.mu.Unlock()
	p := w.snapshotPod()
	for _, d := range []string{"etc", "volumes", "logs"} {
		_ = os.MkdirAll(filepath.Join(w.dir, d), 0o755)
	}
	host, fqdn := podHostname(p, w.a.cfg.ClusterDom)
	names := host
	if fqdn != "" {
		names = fqdn + " " + host
	}
	hosts := fmt.Sprintf("# Kubernetes-managed hosts file (keep-e2e node agent).\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n", ip, names)
	ns := p.Metadata.Namespace
	dom := w.a.cfg.ClusterDom
	resolv := fmt.Sprintf("search %s.svc.%s svc.%s %s\nnameserver %s\noptions ndots:5\n", ns, dom, dom, dom, w.a.cfg.DNSAddr)
	_ = os.WriteFile(filepath.Join(w.dir, "etc/hosts"), []byte(hosts), 0o644)
	_ = os.WriteFile(filepath.Join(w.dir, "etc/resolv.conf"), []byte(resolv), 0o644)
	_ = os.WriteFile(filepath.Join(w.dir, "etc/hostname"), []byte(host+"\n"), 0o644)
	w.markDirty()
	for !w.stopped() {
		err := w.materializeVolumes(false)
		w.mu.Lock()
		if err != nil {
			w.volErr = err.Error()
		} else {
			w.volErr = ""
		}
		w.mu.Unlock()
		if err == nil {
			return
		}
		w.logf("volumes: %v", err)
		w.markDirty()
		select {
		case <-w.stopCh:
		case <-time.After(time.Second):
		}
	}
}

func (w *podWorker) refreshVolumes() {
	w.mu.Lock()
	ready := w.initDone && !w.deleting
	w.mu.Unlock()
	if ready && !w.stopped() {
		if err := w.materializeVolumes(true); err != nil {
			w.logf("volume refresh: %v", err)
		}
	}
}

func podHostname(p *Pod, dom string) (host, fqdn string) {
	host = p.Spec.Hostname
	if host == "" {
		host = p.Metadata.Name
	}
	if len(host) > 63 {
		host = host[:63]
	}
	if p.Spec.Subdomain != "" {
		fqdn = fmt.Sprintf("%s.%s.%s.svc.%s", host, p.Spec.Subdomain, p.Metadata.Namespace, dom)
	}
	return host, fqdn
}

// runInit runs the init containers in order; false if the pod failed or is stopping.
func (w *podWorker) runInit() bool {
	p := w.snapshotPod()
	for _, cs := range w.ctrs {
		if !cs.init {
			continue
		}
		if cs.spec.RestartPolicy != nil && *cs.spec.RestartPolicy == "Always" {
			go w.runContainer(cs) // native sidecar: keeps running beside the containers
			continue
		}
		backoff := time.Second
		for {
			if w.stopped() {
				return false
			}
			code, err := w.runOnce(cs)
			if err == nil && code == 0 {
				break
			}
			if p.Spec.RestartPolicy == "Never" {
				w.mu.Lock()
				w.phase = "Failed"
				w.mu.Unlock()
				w.markDirty()
				return false
			}
			w.mu.Lock()
			cs.restartCount++
			w.mu.Unlock()
			if !w.sleep(backoff) {
				return false
			}
			backoff = min(backoff*2, w.a.cfg.MaxBackoff)
		}
	}
	return true
}

func (w *podWorker) sleep(d time.Duration) bool {
	select {
	case <-w.stopCh:
		return false
	case <-time.After(d):
		return true
	}
}

// runContainer runs a regular container with restarts per restartPolicy.
func (w *podWorker) runContainer(cs *ctrState) {
	p := w.snapshotPod()
	policy := p.Spec.RestartPolicy
	if cs.spec.RestartPolicy != nil {
		policy = *cs.spec.RestartPolicy
	}
	backoff := time.Second
	for !w.stopped() {
		t0 := time.Now()
		code, err := w.runOnce(cs)
		if w.stopped() {
			return
		}
		restart := policy == "Always" || policy == "" || (policy == "OnFailure" && (err != nil || code != 0))
		if !restart {
			return
		}
		if time.Since(t0) > 30*time.Second {
			backoff = time.Second
		}
		w.mu.Lock()
		cs.restartCount++
		cs.last = cs.term
		cs.state, cs.reason, cs.term = "waiting", "CrashLoopBackOff", nil
		cs.message = fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backoff, cs.spec.Name, p.Metadata.Name)
		w.mu.Unlock()
		w.markDirty()
		if !w.sleep(backoff) {
			return
		}
		backoff = min(backoff*2, w.a.cfg.MaxBackoff)
	}
}

// runOnce starts the container's process, probes it, and waits for it to exit.
func (w *podWorker) runOnce(cs *ctrState) (int, error) {
	p := w.snapshotPod()
	w.mu.Lock()
	ip := w.ip
	w.mu.Unlock()
	env, err := w.containerEnv(p, &cs.spec, ip)
	var argv []string
	var bin string
	if err == nil {
		bin, argv, err = w.resolveCommand(&cs.spec, env)
	}
	var mounts []Mount
	if err == nil {
		mounts, err = w.mountsFor(p, &cs.spec)
	}
	if err != nil {
		w.mu.Lock()
		cs.state, cs.reason, cs.message = "waiting", "CreateContainerConfigError", err.Error()
		var ee *imageError
		if errors.As(err, &ee) {
			cs.reason = "ErrImagePull"
		}
		w.mu.Unlock()
		w.logf("container %s: %v", cs.spec.Name, err)
		w.markDirty()
		return -1, err
	}
	host, _ := podHostname(p, w.a.cfg.ClusterDom)
	spec := ExecSpec{Hostname: host, Binary: bin, Argv: argv, WorkingDir: cs.spec.WorkingDir, Mounts: mounts}
	w.mu.Lock()
	runID := fmt.Sprintf("%s-%s-%d", w.uid, cs.spec.Name, cs.restartCount)
	w.mu.Unlock()
	specFile := filepath.Join(w.dir, "exec-"+cs.spec.Name+".json")
	b, _ := json.Marshal(spec)
	_ = os.WriteFile(specFile, b, 0o600)
	logPath := filepath.Join(w.dir, "logs", fmt.Sprintf("%s.%d.log", cs.spec.Name, cs.restartCount))
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return -1, err
	}
	self, _ := os.Executable()
	cmd := exec.Command(self, "pod-exec", specFile)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS,
		Pdeathsig:  syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		lf.Close()
		w.mu.Lock()
		cs.state, cs.reason, cs.message = "waiting", "RunContainerError", err.Error()
		w.mu.Unlock()
		w.markDirty()
		return -1, err
	}
	lf.Close()
	_ = os.WriteFile(filepath.Join(w.dir, "pid-"+cs.spec.Name), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
	w.mu.Lock()
	cs.state, cs.reason, cs.message = "running", "", ""
	cs.startedAt = time.Now()
	cs.pid = cmd.Process.Pid
	cs.binary = bin
	cs.runID = runID
	cs.killReason = ""
	cs.ready = false
	cs.started = cs.spec.StartupProbe == nil
	if !cs.init && cs.spec.ReadinessProbe == nil && cs.started {
		cs.ready = true
	}
	w.mu.Unlock()
	w.logf("container %s started (pid %d, %s)", cs.spec.Name, cmd.Process.Pid, bin)
	w.markDirty()

	probeCtx, cancel := context.WithCancel(context.Background())
	if !cs.init {
		go w.probeLoop(probeCtx, cs, ip)
	}
	err = cmd.Wait()
	cancel()
	code, sig := 0, 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ws := ee.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				sig = int(ws.Signal())
				code = 128 + sig
			} else {
				code = ws.ExitStatus()
			}
		} else {
			code = -1
		}
	}
	w.mu.Lock()
	reason := "Completed"
	if code != 0 {
		reason = "Error"
	}
	if cs.killReason != "" && !w.stopped() {
		reason = cs.killReason
	}
	cs.state = "terminated"
	cs.term = &termInfo{ExitCode: code, Signal: sig, Reason: reason, StartedAt: cs.startedAt, FinishedAt: time.Now(), ID: runID}
	cs.ready, cs.pid = false, 0
	w.mu.Unlock()
	w.logf("container %s exited: code %d", cs.spec.Name, code)
	w.markDirty()
	return code, nil
}

// terminateAll stops every running process: SIGTERM to its process group, SIGKILL after the
// grace period (the pod's deletionGracePeriodSeconds; 0 if the object is gone; ≤2s on shutdown).
func (w *podWorker) terminateAll() {
	w.mu.Lock()
	p := w.pod
	grace := int64(30)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	if p.Metadata.DeletionGracePeriodSeconds != nil {
		grace = *p.Metadata.DeletionGracePeriodSeconds
	}
	if w.gone {
		grace = 0
	}
	if w.shutdownF && grace > 2 {
		grace = 2
	}
	var pids []int
	var hooks []*ctrState
	for _, cs := range w.ctrs {
		if cs.pid > 0 {
			pids = append(pids, cs.pid)
			if cs.spec.Lifecycle != nil && cs.spec.Lifecycle.PreStop != nil {
				hooks = append(hooks, cs)
			}
		}
	}
	ip := w.ip
	w.mu.Unlock()
	if len(pids) == 0 {
		return
	}
	deadline := time.Now().Add(time.Duration(grace) * time.Second)
	if grace > 0 && len(hooks) > 0 {
		// preStop hooks first (exec in the container's namespaces, or HTTP GET), within the grace period.
		var hwg sync.WaitGroup
		for _, cs := range hooks {
			hwg.Add(1)
			go func(cs *ctrState) {
				defer hwg.Done()
				w.mu.Lock()
				pid := cs.pid
				w.mu.Unlock()
				ok := w.probeOnce(context.Background(), cs, &Probe{Handler: *cs.spec.Lifecycle.PreStop}, ip, pid, time.Until(deadline))
				w.logf("container %s: preStop hook done (ok=%v)", cs.spec.Name, ok)
			}(cs)
		}
		hwg.Wait()
	}
	sig := syscall.SIGTERM
	if grace == 0 {
		sig = syscall.SIGKILL
	}
	for _, pid := range pids {
		_ = syscall.Kill(-pid, sig)
	}
	for time.Now().Before(deadline) {
		if !w.anyRunning() {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range pids {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

func (w *podWorker) anyRunning() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, cs := range w.ctrs {
		if cs.pid > 0 {
			return true
		}
	}
	return false
}

// killContainer is used by a failing liveness or startup probe.
func (w *podWorker) killContainer(cs *ctrState, reason string) {
	w.mu.Lock()
	pid := cs.pid
	cs.killReason = reason
	p := w.pod
	w.mu.Unlock()
	if pid <= 0 {
		return
	}
	grace := int64(30)
	if p.Spec.TerminationGracePeriodSeconds != nil {
		grace = *p.Spec.TerminationGracePeriodSeconds
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	go func() {
		time.Sleep(time.Duration(grace) * time.Second)
		w.mu.Lock()
		same := cs.pid == pid
		w.mu.Unlock()
		if same {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}()
}

// ---------------------------------------------------------------- status

func (w *podWorker) reporter(stop, done chan struct{}) {
	defer close(done)
	var last []byte
	for {
		select {
		case <-w.dirty:
		case <-stop:
			w.report(&last)
			return
		}
		time.Sleep(50 * time.Millisecond) // coalesce bursts
		select {
		case <-w.dirty:
		default:
		}
		w.report(&last)
	}
}

func (w *podWorker) report(last *[]byte) {
	w.mu.Lock()
	if w.gone || w.shutdownF {
		w.mu.Unlock()
		return
	}
	st := w.buildStatus()
	p := w.pod
	w.mu.Unlock()
	b, _ := json.Marshal(st)
	if string(b) == string(*last) {
		return
	}
	patch := map[string]any{"status": st}
	path := fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/status", p.Metadata.Namespace, p.Metadata.Name)
	for i := 0; i < 5; i++ {
		err := w.a.c.Do(context.Background(), "PATCH", path, "application/strategic-merge-patch+json", patch, nil)
		if err == nil {
			*last = b
			return
		}
		if IsNotFound(err) {
			return
		}
		w.logf("status: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func termJSON(t *termInfo) map[string]any {
	m := map[string]any{"exitCode": t.ExitCode, "reason": t.Reason, "startedAt": ts(t.StartedAt),
		"finishedAt": ts(t.FinishedAt), "containerID": "keep-e2e://" + t.ID}
	if t.Signal != 0 {
		m["signal"] = t.Signal
	}
	return m
}

// buildStatus computes the pod status; w.mu held.
func (w *podWorker) buildStatus() map[string]any {
	p := w.pod
	var ctrs, inits []any
	allReady, anyRunning, allTerm, anyFailed, started := true, false, true, false, true
	for _, cs := range w.ctrs {
		m := map[string]any{"name": cs.spec.Name, "image": cs.spec.Image, "imageID": "keep-e2e://" + cs.binary,
			"ready": cs.ready, "restartCount": cs.restartCount, "started": cs.state == "running" && cs.started}
		switch cs.state {
		case "running":
			m["state"] = map[string]any{"running": map[string]any{"startedAt": ts(cs.startedAt)}}
			m["containerID"] = "keep-e2e://" + cs.runID
		case "terminated":
			m["state"] = map[string]any{"terminated": termJSON(cs.term)}
			m["containerID"] = "keep-e2e://" + cs.term.ID
		default:
			wt := map[string]any{"reason": cs.reason}
			if cs.message != "" {
				wt["message"] = cs.message
			} else if w.volErr != "" {
				wt["message"] = w.volErr
			}
			m["state"] = map[string]any{"waiting": wt}
		}
		if cs.last != nil {
			m["lastState"] = map[string]any{"terminated": termJSON(cs.last)}
		} else {
			m["lastState"] = map[string]any{}
		}
		if cs.init {
			inits = append(inits, m)
			continue
		}
		ctrs = append(ctrs, m)
		if !cs.ready {
			allReady = false
		}
		if cs.state == "running" {
			anyRunning = true
		}
		if cs.state != "terminated" {
			allTerm = false
		} else if cs.term.ExitCode != 0 {
			anyFailed = true
		}
		if cs.state == "waiting" && cs.restartCount == 0 {
			started = false
		}
	}
	phase := w.phase
	if phase != "Failed" {
		switch {
		case !w.initDone || !started:
			phase = "Pending"
		case allTerm && !anyRunning:
			phase = "Succeeded"
			if anyFailed {
				phase = "Failed"
			}
		default:
			phase = "Running"
		}
	}
	w.phase = phase
	b := func(v bool) string {
		if v {
			return "True"
		}
		return "False"
	}
	ready := allReady && phase == "Running"
	conds := []any{}
	for _, c := range []struct {
		t string
		s string
	}{
		{"PodReadyToStartContainers", b(w.ip != "")},
		{"Initialized", b(w.initDone)},
		{"ContainersReady", b(ready)},
		{"Ready", b(ready)},
	} {
		ct, ok := w.condTimes[c.t]
		if !ok || ct.status != c.s {
			ct = condTime{c.s, time.Now()}
			w.condTimes[c.t] = ct
		}
		conds = append(conds, map[string]any{"type": c.t, "status": c.s, "lastTransitionTime": ts(ct.at), "lastProbeTime": nil})
	}
	st := map[string]any{
		"phase": phase, "conditions": conds, "containerStatuses": ctrs,
		"hostIP": w.node.ip, "hostIPs": []any{map[string]string{"ip": w.node.ip}},
		"startTime": ts(w.startTime),
	}
	if inits != nil {
		st["initContainerStatuses"] = inits
	}
	if w.ip != "" {
		st["podIP"] = w.ip
		st["podIPs"] = []any{map[string]string{"ip": w.ip}}
	}
	_ = p
	return st
}

type imageError struct{ msg string }

func (e *imageError) Error() string { return e.msg }

// resolveCommand maps the image to a binary (image "keep/<name>[:tag]" or "<anything>/<name>"
// -> <name> in the image path) and builds argv from command/args like a container runtime
// (command replaces the entrypoint; args replace the default args).
func (w *podWorker) resolveCommand(c *Container, env []string) (string, []string, error) {
	envm := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		envm[k] = v
	}
	cmd := expandAll(c.Command, envm)
	args := expandAll(c.Args, envm)
	imgBin := w.imageBinary(c.Image)
	if len(cmd) == 0 {
		if imgBin == "" {
			return "", nil, &imageError{fmt.Sprintf("image %q maps to no binary in %v (and no command given)", c.Image, w.a.cfg.ImagePath)}
		}
		return imgBin, append([]string{imgBin}, args...), nil
	}
	argv := append(append([]string{}, cmd...), args...)
	name := cmd[0]
	if imgBin != "" && filepath.Base(name) == filepath.Base(imgBin) {
		return imgBin, argv, nil
	}
	if strings.Contains(name, "/") {
		if st, err := os.Stat(name); err == nil && !st.IsDir() {
			return name, argv, nil
		}
		// An absolute path inside the "image": try the image path by base name.
		if b := w.findInImagePath(filepath.Base(name)); b != "" {
			return b, argv, nil
		}
		return "", nil, &imageError{fmt.Sprintf("command %q not found", name)}
	}
	if b := w.findInImagePath(name); b != "" {
		return b, argv, nil
	}
	if b, err := exec.LookPath(name); err == nil {
		return b, argv, nil
	}
	return "", nil, &imageError{fmt.Sprintf("command %q not found", name)}
}

func (w *podWorker) imageBinary(image string) string {
	name := image
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name = name[:i]
	}
	name = name[strings.LastIndex(name, "/")+1:]
	return w.findInImagePath(name)
}

func (w *podWorker) findInImagePath(name string) string {
	for _, d := range w.a.cfg.ImagePath {
		if d == "" {
			continue
		}
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}
