package main

// A userspace kube-proxy for TCP: the apiserver allocates ClusterIPs from a loopback range
// (127.(96+slot).0.0/16), so the agent listens on <clusterIP>:<port> of every Service with a
// selector and forwards each connection to a ready pod (round robin) on the resolved targetPort.
// Only loopback addresses are ever bound or dialled.

import (
	"encoding/json"
	"io"
	"log"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

type proxyListener struct {
	ln      net.Listener
	svcKey  string
	port    ServicePort
	counter int
}

type serviceProxy struct {
	a       *Agent
	mu      sync.Mutex
	ls      map[string]*proxyListener // "ip:port"
	trigger chan struct{}
}

func newServiceProxy(a *Agent) *serviceProxy {
	p := &serviceProxy{a: a, ls: map[string]*proxyListener{}, trigger: make(chan struct{}, 1)}
	go p.loop()
	return p
}

func (p *serviceProxy) kick() {
	select {
	case p.trigger <- struct{}{}:
	default:
	}
}

func (p *serviceProxy) loop() {
	for {
		select {
		case <-p.a.ctx.Done():
			p.mu.Lock()
			for _, l := range p.ls {
				l.ln.Close()
			}
			p.mu.Unlock()
			return
		case <-p.trigger:
		}
		p.reconcile()
	}
}

func loopbackClusterIP(s *Service) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(s.Spec.ClusterIP)
	return ip, err == nil && ip.Is4() && ip.IsLoopback() && len(s.Spec.Selector) > 0
}

func (p *serviceProxy) reconcile() {
	want := map[string]*proxyListener{}
	p.a.mu.Lock()
	for key, s := range p.a.svcs {
		ip, ok := loopbackClusterIP(s)
		if !ok {
			continue
		}
		for _, sp := range s.Spec.Ports {
			if sp.Protocol != "" && sp.Protocol != "TCP" {
				continue
			}
			addr := net.JoinHostPort(ip.String(), strconv.Itoa(sp.Port))
			want[addr] = &proxyListener{svcKey: key, port: sp}
		}
	}
	p.a.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, l := range p.ls {
		if w, ok := want[addr]; !ok || w.svcKey != l.svcKey {
			l.ln.Close()
			delete(p.ls, addr)
		} else {
			l.port = w.port
		}
	}
	for addr, w := range want {
		if _, ok := p.ls[addr]; ok {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			log.Printf("proxy %s (%s): %v", addr, w.svcKey, err)
			continue
		}
		w.ln = ln
		p.ls[addr] = w
		go p.serve(w)
	}
}

func (p *serviceProxy) serve(l *proxyListener) {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go p.forward(l, c)
	}
}

func (p *serviceProxy) forward(l *proxyListener, c net.Conn) {
	defer c.Close()
	backends := p.backends(l)
	if len(backends) == 0 {
		return // like kube-proxy's REJECT for a Service without endpoints: close at once
	}
	p.mu.Lock()
	l.counter++
	first := l.counter
	p.mu.Unlock()
	var up net.Conn
	for i := range backends {
		b := backends[(first+i)%len(backends)]
		var err error
		if up, err = net.DialTimeout("tcp", b, 2*time.Second); err == nil {
			break
		}
	}
	if up == nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(up, c)
	go cp(c, up)
	<-done
	<-done
}

// backends: "podIP:targetPort" of the ready pods the Service selects (loopback IPs only).
func (p *serviceProxy) backends(l *proxyListener) []string {
	p.a.mu.Lock()
	defer p.a.mu.Unlock()
	s, ok := p.a.svcs[l.svcKey]
	if !ok {
		return nil
	}
	p.mu.Lock()
	sp := l.port
	p.mu.Unlock()
	var out []string
	for _, pod := range p.a.pods {
		if pod.Metadata.Namespace != s.Metadata.Namespace || pod.Status.PodIP == "" ||
			pod.Metadata.DeletionTimestamp != nil || !selects(s.Spec.Selector, pod.Metadata.Labels) {
			continue
		}
		if !s.Spec.PublishNotReadyAddresses && !pod.IsReady() {
			continue
		}
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || !ip.IsLoopback() {
			continue
		}
		port := sp.Port
		if len(sp.TargetPort) > 0 {
			var n int
			var name string
			if json.Unmarshal(sp.TargetPort, &n) == nil {
				port = n
			} else if json.Unmarshal(sp.TargetPort, &name) == nil {
				port = 0
				for _, c := range pod.Spec.Containers {
					for _, cp := range c.Ports {
						if cp.Name == name {
							port = int(cp.ContainerPort)
						}
					}
				}
				if port == 0 {
					continue
				}
			}
		}
		out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
	}
	return out
}
