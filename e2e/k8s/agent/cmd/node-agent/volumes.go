package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

type fileContent struct {
	data []byte
	mode os.FileMode
}

// materializeVolumes writes each volume of the pod into <poddir>/volumes/<name>. On refresh,
// ConfigMap/Secret/downward-API contents are rewritten when they changed (atomic renames into the
// bind-mounted directory, so running processes see updates like with the kubelet) and
// service-account tokens are left alone.
func (w *podWorker) materializeVolumes(refresh bool) error {
	p := w.snapshotPod()
	ctx := w.a.ctx
	ns := p.Metadata.Namespace
	for _, v := range p.Spec.Volumes {
		dir := filepath.Join(w.dir, "volumes", v.Name)
		files := map[string]fileContent{}
		managed := true
		switch {
		case v.EmptyDir != nil:
			managed = false
		case v.HostPath != nil, v.PersistentVolumeClaim != nil:
			managed = false
			if v.HostPath != nil && (v.HostPath.Type == "DirectoryOrCreate" || v.HostPath.Type == "") {
				_ = os.MkdirAll(v.HostPath.Path, 0o755)
			}
			if v.PersistentVolumeClaim != nil {
				_ = os.MkdirAll(w.pvcDir(ns, v.PersistentVolumeClaim.ClaimName), 0o755)
			}
		case v.ConfigMap != nil:
			if err := w.objFiles(ctx, ns, "configmap", v.ConfigMap.Name, v.ConfigMap, v.ConfigMap.DefaultMode, "", files); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.Secret != nil:
			if err := w.objFiles(ctx, ns, "secret", v.Secret.SecretName, v.Secret, v.Secret.DefaultMode, "", files); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.DownwardAPI != nil:
			if err := w.downwardFiles(p, v.DownwardAPI.Items, modeOr(v.DownwardAPI.DefaultMode, 0o644), files); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		case v.Projected != nil:
			def := v.Projected.DefaultMode
			for _, src := range v.Projected.Sources {
				var err error
				switch {
				case src.ConfigMap != nil:
					err = w.objFiles(ctx, ns, "configmap", src.ConfigMap.Name, src.ConfigMap, def, "", files)
				case src.Secret != nil:
					err = w.objFiles(ctx, ns, "secret", src.Secret.Name, src.Secret, def, "", files)
				case src.DownwardAPI != nil:
					err = w.downwardFiles(p, src.DownwardAPI.Items, modeOr(def, 0o644), files)
				case src.ServiceAccountToken != nil:
					t := src.ServiceAccountToken
					path := filepath.Join(dir, t.Path)
					if refresh {
						if b, rerr := os.ReadFile(path); rerr == nil {
							files[t.Path] = fileContent{b, modeOr(def, 0o600)}
							continue
						}
					}
					var tok string
					tok, err = w.token(ctx, p, t.Audience, t.ExpirationSeconds)
					files[t.Path] = fileContent{[]byte(tok), modeOr(def, 0o600)}
				}
				if err != nil {
					return fmt.Errorf("volume %s: %w", v.Name, err)
				}
			}
		default:
			return fmt.Errorf("volume %s: unsupported volume type", v.Name)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if managed {
			if err := syncDir(dir, files); err != nil {
				return err
			}
		}
	}
	return nil
}

func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m != nil {
		return os.FileMode(*m)
	}
	return def
}

func (w *podWorker) pvcDir(ns, claim string) string {
	return filepath.Join(w.a.cfg.StateDir, "pvc", ns, claim)
}

// objFiles adds a ConfigMap's or Secret's keys (or the selected items) as files.
func (w *podWorker) objFiles(ctx context.Context, ns, kind, name string, v *ObjVolume, defMode *int32, _ string, files map[string]fileContent) error {
	var data map[string]string
	var err error
	if kind == "configmap" {
		data, err = w.configMapData(ctx, ns, name)
	} else {
		data, err = w.secretData(ctx, ns, name)
	}
	if err != nil {
		if IsNotFound(err) && v.Optional != nil && *v.Optional {
			return nil
		}
		return fmt.Errorf("%s %s: %w", kind, name, err)
	}
	mode := modeOr(v.DefaultMode, 0o644)
	if defMode != nil {
		mode = os.FileMode(*defMode)
	}
	if len(v.Items) == 0 {
		for k, val := range data {
			files[k] = fileContent{[]byte(val), mode}
		}
		return nil
	}
	for _, it := range v.Items {
		val, ok := data[it.Key]
		if !ok {
			if v.Optional != nil && *v.Optional {
				continue
			}
			return fmt.Errorf("%s %s: no key %q", kind, name, it.Key)
		}
		files[it.Path] = fileContent{[]byte(val), modeOr(it.Mode, mode)}
	}
	return nil
}

func (w *podWorker) downwardFiles(p *Pod, items []DownwardItem, mode os.FileMode, files map[string]fileContent) error {
	w.mu.Lock()
	ip := w.ip
	w.mu.Unlock()
	for _, it := range items {
		var v string
		var err error
		if it.FieldRef != nil {
			v, err = fieldRefValue(p, it.FieldRef.FieldPath, ip, w.node.ip)
		} else if it.ResourceFieldRef != nil {
			c := &p.Spec.Containers[0]
			v, err = w.resourceValue(p, c, it.ResourceFieldRef)
		}
		if err != nil {
			return err
		}
		files[it.Path] = fileContent{[]byte(v), modeOr(it.Mode, mode)}
	}
	return nil
}

// token asks the TokenRequest API for a pod-bound service-account token.
func (w *podWorker) token(ctx context.Context, p *Pod, aud string, exp *int64) (string, error) {
	sa := p.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	spec := map[string]any{"boundObjectRef": map[string]any{"kind": "Pod", "apiVersion": "v1",
		"name": p.Metadata.Name, "uid": p.Metadata.UID}}
	if aud != "" {
		spec["audiences"] = []string{aud}
	}
	if exp != nil {
		spec["expirationSeconds"] = *exp
	}
	body := map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}
	var out struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	path := fmt.Sprintf("/api/v1/namespaces/%s/serviceaccounts/%s/token", p.Metadata.Namespace, sa)
	if err := w.a.c.Do(ctx, "POST", path, "", body, &out); err != nil {
		return "", fmt.Errorf("token for %s: %w", sa, err)
	}
	return out.Status.Token, nil
}

// syncDir makes dir contain exactly files (atomic rename per changed file).
func syncDir(dir string, files map[string]fileContent) error {
	for rel, fc := range files {
		path := filepath.Join(dir, filepath.Clean("/"+rel))
		if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, fc.data) {
			if st, err := os.Stat(path); err == nil && st.Mode().Perm() == fc.mode.Perm() {
				continue
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
		if err := os.WriteFile(tmp, fc.data, fc.mode.Perm()); err != nil {
			return err
		}
		_ = os.Chmod(tmp, fc.mode.Perm())
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
	}
	// Remove files no longer present.
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if _, ok := files[rel]; !ok {
			os.Remove(path)
		}
		return nil
	})
	return nil
}

type Mount struct {
	Src      string `json:"src"`
	Dst      string `json:"dst"`
	ReadOnly bool   `json:"readOnly"`
}

var mountpointMu sync.Mutex

// mountsFor lists the bind mounts of a container: its volumes, plus the pod's hosts,
// resolv.conf and hostname files. Missing mount points are created on the host (recorded, and
// removed again by `node-agent cleanup` when empty).
func (w *podWorker) mountsFor(p *Pod, c *Container) ([]Mount, error) {
	ms := []Mount{
		{Src: filepath.Join(w.dir, "etc/hosts"), Dst: "/etc/hosts"},
		{Src: filepath.Join(w.dir, "etc/resolv.conf"), Dst: "/etc/resolv.conf"},
		{Src: filepath.Join(w.dir, "etc/hostname"), Dst: "/etc/hostname"},
	}
	vols := map[string]*Volume{}
	for i := range p.Spec.Volumes {
		vols[p.Spec.Volumes[i].Name] = &p.Spec.Volumes[i]
	}
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s: no such volume", vm.Name)
		}
		src := filepath.Join(w.dir, "volumes", v.Name)
		ro := vm.ReadOnly
		switch {
		case v.HostPath != nil:
			src = v.HostPath.Path
		case v.PersistentVolumeClaim != nil:
			src = w.pvcDir(p.Metadata.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.ConfigMap != nil, v.Secret != nil, v.Projected != nil, v.DownwardAPI != nil:
			ro = true
		}
		if vm.SubPath != "" {
			src = filepath.Join(src, filepath.Clean("/"+vm.SubPath))
			if _, err := os.Stat(src); os.IsNotExist(err) {
				_ = os.MkdirAll(src, 0o755)
			}
		}
		st, err := os.Stat(src)
		if err != nil {
			return nil, fmt.Errorf("volumeMount %s: %w", vm.Name, err)
		}
		if err := w.ensureMountpoint(vm.MountPath, st.IsDir()); err != nil {
			return nil, err
		}
		ms = append(ms, Mount{Src: src, Dst: vm.MountPath, ReadOnly: ro})
	}
	return ms, nil
}

func (w *podWorker) ensureMountpoint(dst string, dir bool) error {
	mountpointMu.Lock()
	defer mountpointMu.Unlock()
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	// Record every path component we create, outermost first.
	var created []string
	for p := filepath.Dir(dst); p != "/"; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		created = append([]string{p}, created...)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if dir {
		if err := os.Mkdir(dst, 0o755); err != nil && !os.IsExist(err) {
			return err
		}
	} else if f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		f.Close()
	} else {
		return err
	}
	created = append(created, dst)
	f, err := os.OpenFile(filepath.Join(w.a.cfg.StateDir, "created-mountpoints"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, c := range created {
		fmt.Fprintln(f, c)
	}
	return nil
}

// removeCreatedMountpoints removes (innermost first) the empty mount points the agent created.
func removeCreatedMountpoints(stateDir string) {
	b, err := os.ReadFile(filepath.Join(stateDir, "created-mountpoints"))
	if err != nil {
		return
	}
	paths := strings.Fields(string(b))
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	for _, p := range paths {
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if st.IsDir() || st.Size() == 0 {
			_ = os.Remove(p) // fails (and so keeps it) unless empty
		}
	}
	_ = os.Remove(filepath.Join(stateDir, "created-mountpoints"))
}
