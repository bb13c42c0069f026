package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sidecar-dev/sidecar/config"
)

// manifest is one YAML document of a deploy/ manifest file.
type manifest struct {
	file string
	doc  map[string]any
}

func (m manifest) kind() string { s, _ := m.doc["kind"].(string); return s }

func (m manifest) name() string { s, _ := at(m.doc, "metadata", "name").(string); return s }

// readManifests decodes every document of every *.yaml under deploy/.
func readManifests(t *testing.T) []manifest {
	t.Helper()
	var out []manifest
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for i := 0; ; i++ {
			var doc map[string]any
			err := dec.Decode(&doc)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			if doc == nil {
				continue
			}
			if doc["apiVersion"] == nil || doc["kind"] == nil {
				return fmt.Errorf("%s: document %d has no apiVersion or kind", path, i)
			}
			out = append(out, manifest{file: path, doc: doc})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func find(t *testing.T, ms []manifest, file, kind string) manifest {
	t.Helper()
	for _, m := range ms {
		if m.file == filepath.FromSlash(file) && m.kind() == kind {
			return m
		}
	}
	t.Fatalf("no %s in %s", kind, file)
	return manifest{}
}

// at walks maps by key and lists by index ("0").
func at(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func intAt(t *testing.T, v any, path ...string) int {
	t.Helper()
	n, ok := at(v, path...).(int)
	if !ok {
		t.Fatalf("%s = %#v: want a number", strings.Join(path, "."), at(v, path...))
	}
	return n
}

func seconds(n int) time.Duration { return time.Duration(n) * time.Second }

// restartWindow is the longest an agent that keeps failing stays down
// under restart.policy on-failure before the sidecar gives up (each
// backoff, doubling up to 30s), not counting its boots.
func restartWindow(r config.Restart) time.Duration {
	var total time.Duration
	d := r.Backoff
	for i := 0; i < r.Max; i++ {
		total += d
		d = min(2*d, 30*time.Second)
	}
	return total
}

func listenPort(t *testing.T, cfg *config.Config) int {
	t.Helper()
	_, p, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// probePort resolves a probe's port (a number or a container port's name).
func probePort(t *testing.T, container any, probe any) int {
	t.Helper()
	p := at(probe, "port")
	if n, ok := p.(int); ok {
		return n
	}
	for _, port := range at(container, "ports").([]any) {
		if at(port, "name") == p {
			return at(port, "containerPort").(int)
		}
	}
	t.Fatalf("probe port %v names no container port", p)
	return 0
}

func TestManifestsParse(t *testing.T) {
	ms := readManifests(t)
	kinds := map[string]bool{}
	for _, m := range ms {
		kinds[m.file+" "+m.kind()] = true
	}
	for _, want := range []string{"cloud-run/service.yaml Service", "kubernetes/deployment.yaml Deployment",
		"kubernetes/service.yaml Service", "kubernetes/configmap.yaml ConfigMap"} {
		if !kinds[filepath.FromSlash(want)] {
			t.Errorf("missing %s (have %v)", want, kinds)
		}
	}
}

// TestCloudRunService holds the Cloud Run manifest to the sidecar its image
// runs (examples/python/sidecar.yaml, baked in by Dockerfile.python).
func TestCloudRunService(t *testing.T) {
	svc := find(t, readManifests(t), "cloud-run/service.yaml", "Service")
	if svc.doc["apiVersion"] != "serving.knative.dev/v1" {
		t.Errorf("apiVersion %v", svc.doc["apiVersion"])
	}
	cfg, err := config.Load("../examples/python/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := at(svc.doc, "spec", "template", "spec")
	c := at(spec, "containers", "0")
	if got := intAt(t, c, "ports", "0", "containerPort"); got != listenPort(t, cfg) {
		t.Errorf("containerPort %d, want the sidecar's %d", got, listenPort(t, cfg))
	}
	for _, probe := range []string{"startupProbe", "livenessProbe"} {
		if at(c, probe, "httpGet", "path") != "/healthz" || probePort(t, c, at(c, probe, "httpGet")) != listenPort(t, cfg) {
			t.Errorf("%s = %v, want httpGet /healthz on %d", probe, at(c, probe), listenPort(t, cfg))
		}
	}
	// Liveness must outlast every legitimate 503 of /healthz: an agent
	// restart (restart.policy on-failure, default backoff) and a drain.
	live := seconds(intAt(t, c, "livenessProbe", "periodSeconds") * intAt(t, c, "livenessProbe", "failureThreshold"))
	onFailure := parse(t, "upstream: {url: \"http://127.0.0.1:1\", restart: {policy: on-failure}}\nmethods: {q: {}}\n")
	if w := restartWindow(onFailure.Upstream.Restart); live <= w {
		t.Errorf("liveness fails after %s, within a default restart sequence (%s)", live, w)
	}
	if d := cfg.Shutdown.Budget(); live <= d {
		t.Errorf("liveness fails after %s, within the shutdown (%s)", live, d)
	}
	// Cloud Run's kill grace is fixed at 10s: the whole shutdown must fit,
	// and the manifest must not pretend otherwise.
	if d := cfg.Shutdown.Budget(); d >= 10*time.Second {
		t.Errorf("shutdown budget %s (drain %s + agent grace %s + %s) does not fit Cloud Run's 10s",
			d, cfg.Shutdown.Drain, cfg.Shutdown.AgentGrace, config.ShutdownMargin)
	}
	if at(spec, "terminationGracePeriodSeconds") != nil {
		t.Error("terminationGracePeriodSeconds set: Cloud Run's is fixed at 10s")
	}
	if got := seconds(intAt(t, spec, "timeoutSeconds")); got < cfg.Timeouts.Total {
		t.Errorf("timeoutSeconds %s cuts calls the sidecar allows (timeouts.total %s)", got, cfg.Timeouts.Total)
	}
	if intAt(t, spec, "containerConcurrency") < 1 {
		t.Error("containerConcurrency < 1")
	}
}

// TestKubernetes holds the Deployment to its ConfigMap's method map: port,
// probes on /healthz and the drain budget, the mount the image's
// ENTRYPOINT reads, non-root and a read-only root filesystem; and the
// Service to the Deployment.
func TestKubernetes(t *testing.T) {
	ms := readManifests(t)
	cm := find(t, ms, "kubernetes/configmap.yaml", "ConfigMap")
	dep := find(t, ms, "kubernetes/deployment.yaml", "Deployment")
	svc := find(t, ms, "kubernetes/service.yaml", "Service")

	text, _ := at(cm.doc, "data", "sidecar.yaml").(string)
	cfg, err := config.Parse("configmap.yaml:sidecar.yaml", []byte(text))
	if err != nil {
		t.Fatalf("the ConfigMap's method map: %v", err)
	}
	pod := at(dep.doc, "spec", "template", "spec")
	c := at(pod, "containers", "0")
	port := listenPort(t, cfg)

	// The config is mounted where the image's ENTRYPOINT reads it.
	ep := jsonForm(t, readDockerfile(t, "examples/Dockerfile.python").stages[1].one(t, "ENTRYPOINT"))
	confPath := ep[2]
	var volume string
	for _, m := range at(c, "volumeMounts").([]any) {
		if at(m, "mountPath") == confPath {
			volume, _ = at(m, "name").(string)
			if at(m, "subPath") != "sidecar.yaml" || at(m, "readOnly") != true {
				t.Errorf("mount %v: want subPath sidecar.yaml, readOnly", m)
			}
		}
	}
	if volume == "" {
		t.Fatalf("nothing mounted at %s (the ENTRYPOINT's --config)", confPath)
	}
	var found bool
	for _, v := range at(pod, "volumes").([]any) {
		if at(v, "name") == volume {
			found = at(v, "configMap", "name") == cm.name()
		}
	}
	if !found {
		t.Errorf("volume %s is not the ConfigMap %s", volume, cm.name())
	}

	if got := intAt(t, c, "ports", "0", "containerPort"); got != port {
		t.Errorf("containerPort %d, want the sidecar's %d", got, port)
	}
	for _, probe := range []string{"startupProbe", "readinessProbe"} {
		if at(c, probe, "httpGet", "path") != "/healthz" || probePort(t, c, at(c, probe, "httpGet")) != port {
			t.Errorf("%s = %v, want httpGet /healthz on %d", probe, at(c, probe), port)
		}
	}
	if at(c, "livenessProbe", "tcpSocket") == nil || probePort(t, c, at(c, "livenessProbe", "tcpSocket")) != port {
		t.Errorf("livenessProbe = %v, want tcpSocket on %d", at(c, "livenessProbe"), port)
	}

	// preStop sleep, then the whole shutdown (drain, agent grace, exit):
	// all within terminationGracePeriodSeconds.
	preStop := seconds(intAt(t, c, "lifecycle", "preStop", "sleep", "seconds"))
	grace := seconds(intAt(t, pod, "terminationGracePeriodSeconds"))
	if need := preStop + cfg.Shutdown.Budget(); grace < need {
		t.Errorf("terminationGracePeriodSeconds %s < preStop %s + shutdown budget %s",
			grace, preStop, cfg.Shutdown.Budget())
	}
	if grace != 15*time.Second {
		t.Errorf("terminationGracePeriodSeconds %s, want 15s", grace)
	}

	if at(pod, "securityContext", "runAsNonRoot") != true {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if uid, _ := at(pod, "securityContext", "runAsUser").(int); uid == 0 {
		t.Error("pod securityContext.runAsUser is 0 or missing")
	}
	if at(c, "securityContext", "readOnlyRootFilesystem") != true || at(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext %v: want readOnlyRootFilesystem, no privilege escalation", at(c, "securityContext"))
	}
	var tmp bool
	for _, m := range at(c, "volumeMounts").([]any) {
		tmp = tmp || at(m, "mountPath") == "/tmp"
	}
	if !tmp {
		t.Error("no writable /tmp under a read-only root filesystem")
	}

	labels, _ := at(dep.doc, "spec", "template", "metadata", "labels").(map[string]any)
	for _, sel := range []map[string]any{
		at(dep.doc, "spec", "selector", "matchLabels").(map[string]any),
		at(svc.doc, "spec", "selector").(map[string]any),
	} {
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("selector %s=%v does not match the pod labels %v", k, v, labels)
			}
		}
	}
	target := at(svc.doc, "spec", "ports", "0", "targetPort")
	if target != at(c, "ports", "0", "name") && target != port {
		t.Errorf("Service targetPort %v is not the container's port", target)
	}
}

func TestRestartWindow(t *testing.T) {
	if got := restartWindow(config.Restart{Max: 5, Backoff: time.Second}); got != 31*time.Second {
		t.Errorf("restartWindow = %s, want 31s (1+2+4+8+16)", got)
	}
	if got := restartWindow(config.Restart{Max: 7, Backoff: 10 * time.Second}); got != 10*time.Second+20*time.Second+5*30*time.Second {
		t.Errorf("restartWindow = %s: the backoff is capped at 30s", got)
	}
}
