package main

// A minimal JSON client for the kube-apiserver REST API (stdlib only) and the subset of the
// core/v1 types the agent reads.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"
)

type Client struct {
	server string
	http   *http.Client
	watch  *http.Client
	CAPEM  []byte
}

// LoadKubeconfig reads the simple kubeconfig written by `cluster up` (server, CA, client cert).
func LoadKubeconfig(path string) (*Client, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	get := func(key string) string {
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(key) + `:\s*(\S+)\s*$`).FindSubmatch(b)
		if m == nil {
			return ""
		}
		return string(m[1])
	}
	server, caFile, certFile, keyFile := get("server"), get("certificate-authority"), get("client-certificate"), get("client-key")
	if server == "" || caFile == "" || certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("%s: need server, certificate-authority, client-certificate, client-key", path)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}},
		MaxIdleConnsPerHost: 16,
		ForceAttemptHTTP2:   true,
	}
	return &Client{
		server: strings.TrimRight(server, "/"),
		http:   &http.Client{Transport: tr, Timeout: 30 * time.Second},
		watch:  &http.Client{Transport: tr, Timeout: 10 * time.Minute},
		CAPEM:  ca,
	}, nil
}

type APIError struct {
	Code int
	Body string
}

func (e *APIError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body) }

func IsNotFound(err error) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Code == 404
}

func IsConflict(err error) bool {
	ae, ok := err.(*APIError)
	return ok && ae.Code == 409
}

// Do sends a request with a JSON (or given content type) body and decodes a JSON reply into out.
func (c *Client) Do(ctx context.Context, method, path, contentType string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		if contentType == "" {
			contentType = "application/json"
		}
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return &APIError{Code: resp.StatusCode, Body: strings.TrimSpace(string(rb))}
	}
	if out != nil {
		return json.Unmarshal(rb, out)
	}
	return nil
}

type WatchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

// Informer keeps an up-to-date cache of one resource (list, then watch from the list's
// resourceVersion; relist on 410 Gone or any stream error) and calls onEvent for every change.
type Informer struct {
	c       *Client
	path    string // e.g. /api/v1/pods
	onEvent func(typ string, obj json.RawMessage)
	synced  chan struct{}
}

func NewInformer(c *Client, path string, onEvent func(string, json.RawMessage)) *Informer {
	return &Informer{c: c, path: path, onEvent: onEvent, synced: make(chan struct{})}
}

func (in *Informer) Run(ctx context.Context) {
	first := true
	for ctx.Err() == nil {
		var list struct {
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		if err := in.c.Do(ctx, "GET", in.path, "", nil, &list); err != nil {
			log.Printf("list %s: %v", in.path, err)
			sleepCtx(ctx, time.Second)
			continue
		}
		in.onEvent("SYNC-BEGIN", nil)
		for _, it := range list.Items {
			in.onEvent("ADDED", it)
		}
		in.onEvent("SYNC-END", nil)
		if first {
			close(in.synced)
			first = false
		}
		rv := list.Metadata.ResourceVersion
		for ctx.Err() == nil {
			next, gone, err := in.watchOnce(ctx, rv)
			if gone {
				break
			}
			if err != nil {
				log.Printf("watch %s: %v", in.path, err)
				sleepCtx(ctx, 500*time.Millisecond)
			}
			rv = next
		}
	}
}

// watchOnce streams one watch; returns the last resourceVersion seen, and gone=true on 410.
func (in *Informer) watchOnce(ctx context.Context, rv string) (string, bool, error) {
	sep := "?"
	if strings.Contains(in.path, "?") {
		sep = "&"
	}
	url := fmt.Sprintf("%s%s%swatch=1&resourceVersion=%s&allowWatchBookmarks=true&timeoutSeconds=300", in.c.server, in.path, sep, rv)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return rv, false, err
	}
	resp, err := in.c.watch.Do(req)
	if err != nil {
		return rv, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == 410 {
		return rv, true, nil
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return rv, false, &APIError{Code: resp.StatusCode, Body: string(b)}
	}
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var ev WatchEvent
		if err := dec.Decode(&ev); err != nil {
			if err == io.EOF || ctx.Err() != nil {
				return rv, false, nil
			}
			return rv, false, err
		}
		var meta struct {
			Code     int `json:"code"`
			Metadata struct {
				ResourceVersion string `json:"resourceVersion"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(ev.Object, &meta)
		switch ev.Type {
		case "ERROR":
			if meta.Code == 410 {
				return rv, true, nil
			}
			return rv, false, fmt.Errorf("watch error: %s", ev.Object)
		case "BOOKMARK":
		default:
			in.onEvent(ev.Type, ev.Object)
		}
		if meta.Metadata.ResourceVersion != "" {
			rv = meta.Metadata.ResourceVersion
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// ---------------------------------------------------------------- core/v1 subset

type ObjectMeta struct {
	Name                       string            `json:"name,omitempty"`
	Namespace                  string            `json:"namespace,omitempty"`
	UID                        string            `json:"uid,omitempty"`
	ResourceVersion            string            `json:"resourceVersion,omitempty"`
	Labels                     map[string]string `json:"labels,omitempty"`
	Annotations                map[string]string `json:"annotations,omitempty"`
	DeletionTimestamp          *string           `json:"deletionTimestamp,omitempty"`
	DeletionGracePeriodSeconds *int64            `json:"deletionGracePeriodSeconds,omitempty"`
}

type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
	Status   PodStatus  `json:"status"`
}

type PodSpec struct {
	NodeName                      string      `json:"nodeName,omitempty"`
	Hostname                      string      `json:"hostname,omitempty"`
	Subdomain                     string      `json:"subdomain,omitempty"`
	RestartPolicy                 string      `json:"restartPolicy,omitempty"`
	TerminationGracePeriodSeconds *int64      `json:"terminationGracePeriodSeconds,omitempty"`
	ServiceAccountName            string      `json:"serviceAccountName,omitempty"`
	InitContainers                []Container `json:"initContainers,omitempty"`
	Containers                    []Container `json:"containers"`
	Volumes                       []Volume    `json:"volumes,omitempty"`
	EnableServiceLinks            *bool       `json:"enableServiceLinks,omitempty"`
}

type Container struct {
	Name           string          `json:"name"`
	Image          string          `json:"image"`
	Command        []string        `json:"command,omitempty"`
	Args           []string        `json:"args,omitempty"`
	WorkingDir     string          `json:"workingDir,omitempty"`
	Env            []EnvVar        `json:"env,omitempty"`
	EnvFrom        []EnvFrom       `json:"envFrom,omitempty"`
	VolumeMounts   []VolumeMount   `json:"volumeMounts,omitempty"`
	Ports          []ContainerPort `json:"ports,omitempty"`
	ReadinessProbe *Probe          `json:"readinessProbe,omitempty"`
	LivenessProbe  *Probe          `json:"livenessProbe,omitempty"`
	StartupProbe   *Probe          `json:"startupProbe,omitempty"`
	Resources      struct {
		Limits   map[string]string `json:"limits,omitempty"`
		Requests map[string]string `json:"requests,omitempty"`
	} `json:"resources"`
	RestartPolicy *string    `json:"restartPolicy,omitempty"` // native sidecars (init containers)
	Lifecycle     *Lifecycle `json:"lifecycle,omitempty"`
}

type Lifecycle struct {
	PreStop *Handler `json:"preStop,omitempty"`
}

type Handler struct {
	Exec *struct {
		Command []string `json:"command"`
	} `json:"exec,omitempty"`
	HTTPGet *struct {
		Path   string          `json:"path"`
		Port   json.RawMessage `json:"port"`
		Host   string          `json:"host"`
		Scheme string          `json:"scheme"`
	} `json:"httpGet,omitempty"`
	TCPSocket *struct {
		Port json.RawMessage `json:"port"`
		Host string          `json:"host"`
	} `json:"tcpSocket,omitempty"`
}

type Probe struct {
	Handler
	InitialDelaySeconds int32 `json:"initialDelaySeconds"`
	TimeoutSeconds      int32 `json:"timeoutSeconds"`
	PeriodSeconds       int32 `json:"periodSeconds"`
	SuccessThreshold    int32 `json:"successThreshold"`
	FailureThreshold    int32 `json:"failureThreshold"`
}

type ContainerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
}

type EnvVar struct {
	Name      string `json:"name"`
	Value     string `json:"value,omitempty"`
	ValueFrom *struct {
		FieldRef         *FieldRef         `json:"fieldRef,omitempty"`
		ResourceFieldRef *ResourceFieldRef `json:"resourceFieldRef,omitempty"`
		ConfigMapKeyRef  *KeyRef           `json:"configMapKeyRef,omitempty"`
		SecretKeyRef     *KeyRef           `json:"secretKeyRef,omitempty"`
	} `json:"valueFrom,omitempty"`
}

type FieldRef struct {
	FieldPath string `json:"fieldPath"`
}

type ResourceFieldRef struct {
	ContainerName string `json:"containerName,omitempty"`
	Resource      string `json:"resource"`
	Divisor       string `json:"divisor,omitempty"`
}

type KeyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

type EnvFrom struct {
	Prefix       string   `json:"prefix,omitempty"`
	ConfigMapRef *NameRef `json:"configMapRef,omitempty"`
	SecretRef    *NameRef `json:"secretRef,omitempty"`
}

type NameRef struct {
	Name     string `json:"name"`
	Optional *bool  `json:"optional,omitempty"`
}

type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	SubPath   string `json:"subPath,omitempty"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode *int32 `json:"mode,omitempty"`
}

type DownwardItem struct {
	Path             string            `json:"path"`
	FieldRef         *FieldRef         `json:"fieldRef,omitempty"`
	ResourceFieldRef *ResourceFieldRef `json:"resourceFieldRef,omitempty"`
	Mode             *int32            `json:"mode,omitempty"`
}

type ObjVolume struct {
	Name        string      `json:"name"`       // configMap
	SecretName  string      `json:"secretName"` // secret
	Items       []KeyToPath `json:"items,omitempty"`
	DefaultMode *int32      `json:"defaultMode,omitempty"`
	Optional    *bool       `json:"optional,omitempty"`
}

type Volume struct {
	Name      string     `json:"name"`
	ConfigMap *ObjVolume `json:"configMap,omitempty"`
	Secret    *ObjVolume `json:"secret,omitempty"`
	EmptyDir  *struct {
		Medium string `json:"medium,omitempty"`
	} `json:"emptyDir,omitempty"`
	HostPath *struct {
		Path string `json:"path"`
		Type string `json:"type,omitempty"`
	} `json:"hostPath,omitempty"`
	DownwardAPI *struct {
		Items       []DownwardItem `json:"items"`
		DefaultMode *int32         `json:"defaultMode,omitempty"`
	} `json:"downwardAPI,omitempty"`
	Projected *struct {
		Sources []struct {
			ServiceAccountToken *struct {
				Audience          string `json:"audience,omitempty"`
				ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
				Path              string `json:"path"`
			} `json:"serviceAccountToken,omitempty"`
			ConfigMap   *ObjVolume `json:"configMap,omitempty"`
			Secret      *ObjVolume `json:"secret,omitempty"`
			DownwardAPI *struct {
				Items []DownwardItem `json:"items"`
			} `json:"downwardAPI,omitempty"`
		} `json:"sources"`
		DefaultMode *int32 `json:"defaultMode,omitempty"`
	} `json:"projected,omitempty"`
	PersistentVolumeClaim *struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim,omitempty"`
}

type PodCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

type PodStatus struct {
	Phase      string         `json:"phase,omitempty"`
	PodIP      string         `json:"podIP,omitempty"`
	Conditions []PodCondition `json:"conditions,omitempty"`
}

func (p *Pod) Key() string { return p.Metadata.Namespace + "/" + p.Metadata.Name }

func (p *Pod) IsReady() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

type Service struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		ClusterIP                string            `json:"clusterIP,omitempty"`
		Selector                 map[string]string `json:"selector,omitempty"`
		PublishNotReadyAddresses bool              `json:"publishNotReadyAddresses,omitempty"`
		Type                     string            `json:"type,omitempty"`
		ExternalName             string            `json:"externalName,omitempty"`
		Ports                    []ServicePort     `json:"ports,omitempty"`
	} `json:"spec"`
}

type ServicePort struct {
	Name       string          `json:"name,omitempty"`
	Protocol   string          `json:"protocol,omitempty"`
	Port       int             `json:"port"`
	TargetPort json.RawMessage `json:"targetPort,omitempty"`
}

type ConfigMap struct {
	Data       map[string]string `json:"data"`
	BinaryData map[string][]byte `json:"binaryData"` // base64 in JSON: []byte decodes it
}

type Secret struct {
	Data map[string][]byte `json:"data"`
}
