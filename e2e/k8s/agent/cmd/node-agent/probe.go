package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// probeLoop runs a container's startup, readiness and liveness probes while its process runs.
func (w *podWorker) probeLoop(ctx context.Context, cs *ctrState, ip string) {
	w.mu.Lock()
	spec := cs.spec
	pid := cs.pid
	w.mu.Unlock()
	if spec.StartupProbe != nil {
		if !w.runProbe(ctx, cs, spec.StartupProbe, ip, pid, func(ok bool) bool {
			if ok {
				return false // done
			}
			return true
		}, "startup") {
			return
		}
		w.mu.Lock()
		cs.started = true
		if spec.ReadinessProbe == nil {
			cs.ready = true
		}
		w.mu.Unlock()
		w.markDirty()
	}
	if spec.ReadinessProbe != nil {
		go w.runProbe(ctx, cs, spec.ReadinessProbe, ip, pid, func(ok bool) bool {
			w.mu.Lock()
			changed := cs.ready != ok && cs.pid == pid
			if changed {
				cs.ready = ok
			}
			w.mu.Unlock()
			if changed {
				w.markDirty()
			}
			return true
		}, "readiness")
	}
	if spec.LivenessProbe != nil {
		go w.runProbe(ctx, cs, spec.LivenessProbe, ip, pid, func(ok bool) bool { return true }, "liveness")
	}
}

// runProbe probes until ctx ends or onResult returns false (returns true in that case). Results
// pass through the success/failure thresholds; a liveness or startup probe that reaches its
// failure threshold kills the container.
func (w *podWorker) runProbe(ctx context.Context, cs *ctrState, p *Probe, ip string, pid int, onResult func(bool) bool, kind string) bool {
	period := time.Duration(max(p.PeriodSeconds, 1)) * time.Second
	if p.PeriodSeconds == 0 {
		period = 10 * time.Second
	}
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	succT, failT := int(max(p.SuccessThreshold, 1)), int(max(p.FailureThreshold, 1))
	if p.FailureThreshold == 0 {
		failT = 3
	}
	if !sleepCtx(ctx, time.Duration(p.InitialDelaySeconds)*time.Second) {
		return false
	}
	succ, fail := 0, 0
	state := false
	first := true
	for {
		ok := w.probeOnce(ctx, cs, p, ip, pid, timeout)
		if ctx.Err() != nil {
			return false
		}
		if ok {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
		}
		switch {
		case ok && (succ >= succT || (kind != "readiness" && succ >= 1)):
			if !state || first {
				state = true
				if !onResult(true) {
					return true
				}
			}
		case !ok && fail >= failT:
			if kind == "liveness" || kind == "startup" {
				w.logf("container %s: %s probe failed %d times; killing", cs.spec.Name, kind, fail)
				w.killContainer(cs, "Error")
				return false
			}
			if state || first {
				state = false
				onResult(false)
			}
		}
		first = false
		if !sleepCtx(ctx, period) {
			return false
		}
	}
}

func (w *podWorker) probeOnce(ctx context.Context, cs *ctrState, p *Probe, ip string, pid int, timeout time.Duration) bool {
	if timeout <= 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case p.Exec != nil:
		if len(p.Exec.Command) == 0 {
			return false
		}
		// Run inside the container's mount and UTS namespaces, with its environment.
		args := append([]string{"-t", strconv.Itoa(pid), "-m", "-u", "--"}, p.Exec.Command...)
		cmd := exec.CommandContext(ctx, "nsenter", args...)
		if env, err := w.containerEnv(w.snapshotPod(), &cs.spec, ip); err == nil {
			cmd.Env = env
		}
		return cmd.Run() == nil
	case p.HTTPGet != nil:
		port, err := resolvePort(p.HTTPGet.Port, &cs.spec)
		if err != nil {
			return false
		}
		host := p.HTTPGet.Host
		if host == "" {
			host = ip
		}
		scheme := strings.ToLower(p.HTTPGet.Scheme)
		if scheme == "" {
			scheme = "http"
		}
		path := p.HTTPGet.Path
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s://%s%s", scheme, net.JoinHostPort(host, strconv.Itoa(port)), path), nil)
		if err != nil {
			return false
		}
		req.Header.Set("User-Agent", "kube-probe/keep-e2e")
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	case p.TCPSocket != nil:
		port, err := resolvePort(p.TCPSocket.Port, &cs.spec)
		if err != nil {
			return false
		}
		host := p.TCPSocket.Host
		if host == "" {
			host = ip
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		c.Close()
		return true
	}
	return false
}

// resolvePort turns an IntOrString port (number or container port name) into a number.
func resolvePort(raw json.RawMessage, c *Container) (int, error) {
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil {
		return 0, err
	}
	if n, err := strconv.Atoi(name); err == nil {
		return n, nil
	}
	for _, p := range c.Ports {
		if p.Name == name {
			return int(p.ContainerPort), nil
		}
	}
	return 0, fmt.Errorf("no port named %q", name)
}
