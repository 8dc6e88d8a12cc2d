package main

// Cluster DNS answered from the agent's watch caches of Services and Pods (EndpointSlices cannot
// hold loopback addresses, so the endpoint controllers do not run here):
//
//	<svc>.<ns>.svc.<domain>             A: the ClusterIP (a loopback address the agent proxies,
//	                                    see proxy.go); for a headless Service the IPs of the
//	                                    ready pods it selects (all with an IP if
//	                                    publishNotReadyAddresses)
//	<host>.<svc>.<ns>.svc.<domain>      A: the pod with spec.hostname=host, spec.subdomain=svc
//	                                    (StatefulSet pods), if selected by Service svc
//	<a-b-c-d>.<ns>.pod.<domain>         A: a.b.c.d
//	kubernetes.default.svc.<domain>     A: the apiserver address
//
// Anything outside the cluster domain gets NXDOMAIN (no upstream).

import (
	"encoding/binary"
	"io"
	"log"
	"net"
	"net/netip"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

func (a *Agent) startDNS() error {
	addr := net.JoinHostPort(a.cfg.DNSAddr, "53")
	uc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	tl, err := net.Listen("tcp", addr)
	if err != nil {
		uc.Close()
		return err
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := uc.ReadFrom(buf)
			if err != nil {
				if a.ctx.Err() != nil {
					return
				}
				continue
			}
			if resp := a.dnsAnswer(buf[:n], 512); resp != nil {
				_, _ = uc.WriteTo(resp, from)
			}
		}
	}()
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				for {
					_ = c.SetDeadline(time.Now().Add(10 * time.Second))
					var l [2]byte
					if _, err := io.ReadFull(c, l[:]); err != nil {
						return
					}
					q := make([]byte, binary.BigEndian.Uint16(l[:]))
					if _, err := io.ReadFull(c, q); err != nil {
						return
					}
					resp := a.dnsAnswer(q, 65535)
					if resp == nil {
						return
					}
					binary.BigEndian.PutUint16(l[:], uint16(len(resp)))
					if _, err := c.Write(append(l[:], resp...)); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	go func() { <-a.ctx.Done(); uc.Close(); tl.Close() }()
	return nil
}

func (a *Agent) dnsAnswer(req []byte, maxLen int) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(req)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	ips, exists := a.resolveName(name)
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired,
		RecursionAvailable: true, Authoritative: true}
	if !exists {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), rh)
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	if q.Type == dnsmessage.TypeA || q.Type == dnsmessage.TypeALL {
		for _, ip := range ips {
			a4 := ip.As4()
			_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5},
				dnsmessage.AResource{A: a4})
		}
	}
	if !exists || len(ips) == 0 || q.Type != dnsmessage.TypeA {
		// NXDOMAIN / NODATA: an SOA in the authority section lets resolvers cache the negative answer.
		_ = b.StartAuthorities()
		soaName := dnsmessage.MustNewName(a.cfg.ClusterDom + ".")
		_ = b.SOAResource(dnsmessage.ResourceHeader{Name: soaName, Class: dnsmessage.ClassINET, TTL: 5},
			dnsmessage.SOAResource{NS: dnsmessage.MustNewName("ns.dns." + a.cfg.ClusterDom + "."),
				MBox: dnsmessage.MustNewName("hostmaster." + a.cfg.ClusterDom + "."), Serial: 1,
				Refresh: 7200, Retry: 1800, Expire: 86400, MinTTL: 5})
	}
	out, err := b.Finish()
	if err != nil {
		log.Printf("dns: %v", err)
		return nil
	}
	if len(out) > maxLen {
		out = out[:12]
		out[2] |= 0x02 // TC
	}
	return out
}

// resolveName returns the A records for a name and whether the name exists.
func (a *Agent) resolveName(name string) ([]netip.Addr, bool) {
	dom := a.cfg.ClusterDom
	if name == dom || !strings.HasSuffix(name, "."+dom) {
		return nil, name == dom
	}
	rest := strings.TrimSuffix(name, "."+dom)
	labels := strings.Split(rest, ".")
	n := len(labels)
	switch {
	case n >= 1 && labels[n-1] == "svc":
		switch n {
		case 1:
			return nil, true
		case 2: // <ns>.svc
			return nil, true
		case 3: // <svc>.<ns>.svc
			if labels[0] == "kubernetes" && labels[1] == "default" {
				ip, err := netip.ParseAddr(a.cfg.APIHost)
				return []netip.Addr{ip}, err == nil
			}
			return a.serviceIPs(labels[1], labels[0], "")
		case 4: // <host>.<svc>.<ns>.svc
			return a.serviceIPs(labels[2], labels[1], labels[0])
		}
	case n == 3 && labels[2] == "pod": // a-b-c-d.<ns>.pod
		ip, err := netip.ParseAddr(strings.ReplaceAll(labels[0], "-", "."))
		if err == nil && ip.Is4() {
			return []netip.Addr{ip}, true
		}
	case n == 1 && labels[0] == "pod":
		return nil, true
	}
	return nil, false
}

func (a *Agent) serviceIPs(ns, svc, host string) ([]netip.Addr, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.svcs[ns+"/"+svc]
	if !ok {
		return nil, false
	}
	if ip, ok := loopbackClusterIP(s); ok && host == "" {
		return []netip.Addr{ip}, true // served by the agent's userspace proxy (proxy.go)
	}
	if len(s.Spec.Selector) == 0 {
		return nil, host == ""
	}
	var ips []netip.Addr
	found := false
	for _, p := range a.pods {
		if p.Metadata.Namespace != ns || p.Status.PodIP == "" || p.Metadata.DeletionTimestamp != nil {
			continue
		}
		if p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" {
			continue
		}
		if !selects(s.Spec.Selector, p.Metadata.Labels) {
			continue
		}
		if !s.Spec.PublishNotReadyAddresses && !p.IsReady() {
			continue
		}
		if host != "" {
			h := p.Spec.Hostname
			if h != host || p.Spec.Subdomain != svc {
				continue
			}
		}
		if ip, err := netip.ParseAddr(p.Status.PodIP); err == nil {
			ips = append(ips, ip)
			found = true
		}
	}
	if host != "" {
		return ips, found
	}
	return ips, true
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
