package main

// The part of the kubelet API the apiserver proxies for `kubectl logs` (no exec/attach/port-forward).

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func (a *Agent) startKubeletAPI() {
	cert, err := tls.LoadX509KeyPair(a.cfg.KubeletCert, a.cfg.KubeletKey)
	if err != nil {
		log.Printf("kubelet API disabled: %v", err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	mux.HandleFunc("/containerLogs/", a.serveLogs)
	for _, n := range a.nodes {
		srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
			ReadHeaderTimeout: 10 * time.Second}
		ln, err := net.Listen("tcp", net.JoinHostPort(n.ip, strconv.Itoa(a.cfg.KubeletPort)))
		if err != nil {
			log.Printf("kubelet API on %s: %v", n.ip, err)
			continue
		}
		go func() { _ = srv.ServeTLS(ln, "", "") }()
		go func() { <-a.ctx.Done(); srv.Close() }()
	}
}

func (a *Agent) serveLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 {
		http.Error(w, "bad path", http.StatusBadRequest)
		return
	}
	key, ctrName := parts[0]+"/"+parts[1], parts[2]
	a.mu.Lock()
	var pw *podWorker
	for _, x := range a.worker {
		if x.key == key {
			pw = x
		}
	}
	a.mu.Unlock()
	if pw == nil {
		http.Error(w, "pod not found on this node", http.StatusNotFound)
		return
	}
	pw.mu.Lock()
	var cs *ctrState
	for _, c := range pw.ctrs {
		if c.spec.Name == ctrName {
			cs = c
		}
	}
	var rc int
	if cs != nil {
		rc = cs.restartCount
		if cs.state == "waiting" && rc > 0 {
			rc-- // crash-looping: the last run's log
		}
	}
	pw.mu.Unlock()
	if cs == nil {
		http.Error(w, "container not found", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	if q.Get("previous") == "true" {
		if rc == 0 {
			http.Error(w, "previous terminated container not found", http.StatusBadRequest)
			return
		}
		rc--
	}
	path := filepath.Join(pw.dir, "logs", fmt.Sprintf("%s.%d.log", ctrName, rc))
	b, err := os.ReadFile(path)
	if err != nil {
		http.Error(w, "no logs yet", http.StatusNotFound)
		return
	}
	if t := q.Get("tailLines"); t != "" {
		if n, err := strconv.Atoi(t); err == nil {
			lines := bytes.SplitAfter(b, []byte("\n"))
			if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
				lines = lines[:len(lines)-1]
			}
			if len(lines) > n {
				lines = lines[len(lines)-n:]
			}
			b = bytes.Join(lines, nil)
		}
	}
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write(b)
	if q.Get("follow") != "true" {
		return
	}
	fl, _ := w.(http.Flusher)
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	off, _ := f.Seek(0, io.SeekEnd)
	_ = off
	for {
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
		if _, err := io.Copy(w, f); err != nil {
			return
		}
		pw.mu.Lock()
		done := cs.restartCount != rc || cs.state != "running" || pw.stopped()
		pw.mu.Unlock()
		if done {
			_, _ = io.Copy(w, f)
			return
		}
	}
}
