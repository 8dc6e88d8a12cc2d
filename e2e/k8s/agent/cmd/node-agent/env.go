package main

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// containerEnv builds a container's environment like the kubelet: a base set, envFrom, then env
// in order with $(VAR) expansion; downward-API fieldRef/resourceFieldRef and ConfigMap/Secret
// key refs are resolved.
func (w *podWorker) containerEnv(p *Pod, c *Container, ip string) ([]string, error) {
	cfg := w.a.cfg
	host, _ := podHostname(p, cfg.ClusterDom)
	order := []string{}
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	set("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	set("HOSTNAME", host)
	set("HOME", "/root")
	set("KUBERNETES_SERVICE_HOST", cfg.APIHost)
	set("KUBERNETES_SERVICE_PORT", cfg.APIPort)
	set("KUBERNETES_SERVICE_PORT_HTTPS", cfg.APIPort)
	set("KUBERNETES_PORT", fmt.Sprintf("tcp://%s:%s", cfg.APIHost, cfg.APIPort))
	set("KEEP_E2E_POD_IP", ip)
	if cfg.Owner != "" {
		set("KEEP_E2E_OWNER", cfg.Owner)
	}
	ctx := w.a.ctx
	ns := p.Metadata.Namespace
	for _, ef := range c.EnvFrom {
		var data map[string]string
		var optional *bool
		var err error
		switch {
		case ef.ConfigMapRef != nil:
			optional = ef.ConfigMapRef.Optional
			data, err = w.configMapData(ctx, ns, ef.ConfigMapRef.Name)
		case ef.SecretRef != nil:
			optional = ef.SecretRef.Optional
			data, err = w.secretData(ctx, ns, ef.SecretRef.Name)
		}
		if err != nil {
			if IsNotFound(err) && optional != nil && *optional {
				continue
			}
			return nil, err
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			set(ef.Prefix+k, data[k])
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, expand(e.Value, vals))
			continue
		}
		vf := e.ValueFrom
		switch {
		case vf.FieldRef != nil:
			v, err := fieldRefValue(p, vf.FieldRef.FieldPath, ip, w.node.ip)
			if err != nil {
				return nil, err
			}
			set(e.Name, v)
		case vf.ResourceFieldRef != nil:
			v, err := w.resourceValue(p, c, vf.ResourceFieldRef)
			if err != nil {
				return nil, err
			}
			set(e.Name, v)
		case vf.ConfigMapKeyRef != nil, vf.SecretKeyRef != nil:
			ref := vf.ConfigMapKeyRef
			var data map[string]string
			var err error
			if ref != nil {
				data, err = w.configMapData(ctx, ns, ref.Name)
			} else {
				ref = vf.SecretKeyRef
				data, err = w.secretData(ctx, ns, ref.Name)
			}
			opt := ref.Optional != nil && *ref.Optional
			if err != nil && !(IsNotFound(err) && opt) {
				return nil, err
			}
			v, ok := data[ref.Key]
			if !ok && !opt {
				return nil, fmt.Errorf("key %q not found in %s", ref.Key, ref.Name)
			}
			if ok {
				set(e.Name, v)
			}
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out, nil
}

var varRef = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)`)

// expand implements the kubelet's $(VAR) syntax ($$ escapes a $; unknown refs stay as they are).
func expand(s string, vals map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := vals[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

func expandAll(in []string, vals map[string]string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = expand(s, vals)
	}
	return out
}

var bracketKey = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.+)'\]$`)

func fieldRefValue(p *Pod, path, podIP, hostIP string) (string, error) {
	switch path {
	case "metadata.name":
		return p.Metadata.Name, nil
	case "metadata.namespace":
		return p.Metadata.Namespace, nil
	case "metadata.uid":
		return p.Metadata.UID, nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return hostIP, nil
	case "metadata.labels":
		return formatMap(p.Metadata.Labels), nil
	case "metadata.annotations":
		return formatMap(p.Metadata.Annotations), nil
	}
	if m := bracketKey.FindStringSubmatch(path); m != nil {
		if m[1] == "labels" {
			return p.Metadata.Labels[m[2]], nil
		}
		return p.Metadata.Annotations[m[2]], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, m[k])
	}
	return b.String()
}

func (w *podWorker) resourceValue(p *Pod, c *Container, r *ResourceFieldRef) (string, error) {
	if r.ContainerName != "" {
		for i := range p.Spec.Containers {
			if p.Spec.Containers[i].Name == r.ContainerName {
				c = &p.Spec.Containers[i]
			}
		}
	}
	kind, res, _ := strings.Cut(r.Resource, ".")
	var q string
	if kind == "limits" {
		q = c.Resources.Limits[res]
	} else {
		q = c.Resources.Requests[res]
	}
	if q == "" {
		if kind == "requests" {
			q = "0"
		} else {
			q = w.node.resources()[res] // limits default to node allocatable
		}
	}
	v, err := parseQuantity(q)
	if err != nil {
		return "", err
	}
	div := 1.0
	if r.Divisor != "" {
		if div, err = parseQuantity(r.Divisor); err != nil || div == 0 {
			return "", fmt.Errorf("bad divisor %q", r.Divisor)
		}
	}
	return strconv.FormatInt(int64(math.Ceil(v/div)), 10), nil
}

var quantityRe = regexp.MustCompile(`^([0-9.]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][0-9]+)?$`)

func parseQuantity(s string) (float64, error) {
	m := quantityRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("bad quantity %q", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	mult := map[string]float64{"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
		"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50, "Ei": 1 << 60}
	if f, ok := mult[m[2]]; ok {
		return v * f, nil
	}
	e, _ := strconv.Atoi(m[2][1:])
	return v * math.Pow(10, float64(e)), nil
}

func (w *podWorker) configMapData(ctx context.Context, ns, name string) (map[string]string, error) {
	var cm ConfigMap
	if err := w.a.c.Do(ctx, "GET", fmt.Sprintf("/api/v1/namespaces/%s/configmaps/%s", ns, url.PathEscape(name)), "", nil, &cm); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range cm.Data {
		out[k] = v
	}
	for k, v := range cm.BinaryData {
		out[k] = string(v)
	}
	return out, nil
}

func (w *podWorker) secretData(ctx context.Context, ns, name string) (map[string]string, error) {
	var s Secret
	if err := w.a.c.Do(ctx, "GET", fmt.Sprintf("/api/v1/namespaces/%s/secrets/%s", ns, url.PathEscape(name)), "", nil, &s); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}
