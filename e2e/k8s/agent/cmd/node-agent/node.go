package main

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

type Node struct {
	a     *Agent
	name  string
	ip    string // 127.0.X.1
	net   string // 127.0.X
	mu    sync.Mutex
	inUse map[int]bool
	next  int
}

func newNode(a *Agent, i int) *Node {
	parts := strings.Split(a.cfg.NodeIPBase, ".")
	third, _ := strconv.Atoi(parts[2])
	netp := fmt.Sprintf("%s.%s.%d", parts[0], parts[1], third+i)
	return &Node{a: a, name: fmt.Sprintf("%s%d", a.cfg.NodePrefix, i), ip: netp + ".1", net: netp,
		inUse: map[int]bool{}, next: 2}
}

// allocIP hands out 127.0.X.2-254 round robin (a freed address is reused last).
func (n *Node) allocIP() (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i := 0; i < 253; i++ {
		h := n.next
		n.next++
		if n.next > 254 {
			n.next = 2
		}
		if !n.inUse[h] {
			n.inUse[h] = true
			return fmt.Sprintf("%s.%d", n.net, h), nil
		}
	}
	return "", fmt.Errorf("node %s: no free pod IP", n.name)
}

func (n *Node) freeIP(ip string) {
	if !strings.HasPrefix(ip, n.net+".") {
		return
	}
	h, err := strconv.Atoi(strings.TrimPrefix(ip, n.net+"."))
	if err != nil {
		return
	}
	n.mu.Lock()
	delete(n.inUse, h)
	n.mu.Unlock()
}

func (n *Node) resources() map[string]string {
	c := n.a.cfg
	return map[string]string{
		"cpu": c.CPU, "memory": c.Memory, "hugepages-2Mi": c.Hugepages2Mi, "hugepages-1Gi": "0",
		"pods": "110", "ephemeral-storage": "100Gi",
	}
}

func (n *Node) register(ctx context.Context) error {
	c := n.a.c
	node := map[string]any{
		"apiVersion": "v1", "kind": "Node",
		"metadata": map[string]any{
			"name": n.name,
			"labels": map[string]string{
				"kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
				"kubernetes.io/arch": runtime.GOARCH, "keep.e2e/node-agent": "true",
				"topology.kubernetes.io/zone": "zone-" + strings.TrimPrefix(n.name, n.a.cfg.NodePrefix),
			},
		},
		"spec": map[string]any{"podCIDR": n.net + ".0/24", "podCIDRs": []string{n.net + ".0/24"}},
	}
	if err := c.Do(ctx, "POST", "/api/v1/nodes", "", node, nil); err != nil && !IsConflict(err) {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	cond := func(t, s, reason string) map[string]any {
		return map[string]any{"type": t, "status": s, "reason": reason, "message": reason,
			"lastHeartbeatTime": now, "lastTransitionTime": now}
	}
	status := map[string]any{"status": map[string]any{
		"capacity":    n.resources(),
		"allocatable": n.resources(),
		"conditions": []any{
			cond("Ready", "True", "KubeletReady"),
			cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
			cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
			cond("PIDPressure", "False", "KubeletHasSufficientPID"),
		},
		"addresses": []any{
			map[string]string{"type": "InternalIP", "address": n.ip},
			map[string]string{"type": "Hostname", "address": n.name},
		},
		"daemonEndpoints": map[string]any{"kubeletEndpoint": map[string]any{"Port": n.a.cfg.KubeletPort}},
		"nodeInfo": map[string]string{
			"machineID": n.name, "systemUUID": n.name, "bootID": n.name,
			"kernelVersion": "keep-e2e", "osImage": "keep-e2e node agent",
			"containerRuntimeVersion": "keep-e2e://0.1", "kubeletVersion": n.a.cfg.K8sVersion,
			"kubeProxyVersion": "", "operatingSystem": "linux", "architecture": runtime.GOARCH,
		},
	}}
	if err := c.Do(ctx, "PATCH", "/api/v1/nodes/"+n.name+"/status", "application/strategic-merge-patch+json", status, nil); err != nil {
		return err
	}
	// The TaintNodesByCondition admission plugin adds node.kubernetes.io/not-ready at creation;
	// the node lifecycle controller (not run here) would remove it once Ready. Do it ourselves.
	var cur struct {
		Spec struct {
			Taints []map[string]any `json:"taints"`
		} `json:"spec"`
	}
	if err := c.Do(ctx, "GET", "/api/v1/nodes/"+n.name, "", nil, &cur); err != nil {
		return err
	}
	keep := []map[string]any{}
	for _, t := range cur.Spec.Taints {
		k, _ := t["key"].(string)
		if k == "node.kubernetes.io/not-ready" || k == "node.kubernetes.io/unreachable" {
			continue
		}
		keep = append(keep, t)
	}
	if len(keep) != len(cur.Spec.Taints) {
		patch := map[string]any{"spec": map[string]any{"taints": keep}}
		if err := c.Do(ctx, "PATCH", "/api/v1/nodes/"+n.name, "application/merge-patch+json", patch, nil); err != nil {
			return err
		}
	}
	return nil
}
