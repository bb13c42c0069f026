package deploy

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/sidecar-dev/sidecar/config"
)

// bodyFactor is how many times a call in a slot may hold its request body
// (proxy's begin: the body, twice it while a body of unknown length is
// read, the agent's request built from it).
const bodyFactor = 4

// quantity reads a Kubernetes quantity: "1Gi", "512Mi", "2", "500m".
func quantity(t *testing.T, v any) float64 {
	t.Helper()
	s, _ := v.(string)
	for suffix, mult := range map[string]float64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "m": 1e-3} {
		if n, ok := strings.CutSuffix(s, suffix); ok {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil {
				t.Fatalf("quantity %q: %v", s, err)
			}
			return f * mult
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("quantity %q: %v", s, err)
	}
	return f
}

// concurrency is the sidecar's limits.concurrency for cfg in a container
// limited to cpus: 2 × GOMAXPROCS + 1 when the map sets none, GOMAXPROCS
// being the CPU limit rounded up, at least 2 (proxy.Concurrency).
func concurrency(cfg *config.Config, cpus float64) int {
	if cfg.Limits.Concurrency > 0 {
		return cfg.Limits.Concurrency
	}
	return 2*max(int(math.Ceil(cpus)), 2) + 1
}

// TestManifestsBoundMemory: the shipped manifests agree with the sidecar's
// concurrency, and their memory covers the request bodies it may hold
// (concurrency × request_bytes × bodyFactor) with room for the agent.
func TestManifestsBoundMemory(t *testing.T) {
	ms := readManifests(t)

	svc := find(t, ms, "cloud-run/service.yaml", "Service")
	cfg, err := config.Load("../examples/python/sidecar.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec := at(svc.doc, "spec", "template", "spec")
	limits := at(spec, "containers", "0", "resources", "limits")
	conc := concurrency(cfg, quantity(t, at(limits, "cpu")))
	if got := intAt(t, spec, "containerConcurrency"); got != conc {
		t.Errorf("Cloud Run containerConcurrency %d, want the sidecar's concurrency %d on this CPU limit", got, conc)
	}
	if bodies, mem := float64(conc)*float64(cfg.Limits.RequestBytes)*bodyFactor, quantity(t, at(limits, "memory")); bodies > mem/2 {
		t.Errorf("Cloud Run memory %.0f MiB: request bodies alone may take %.0f MiB, want at most half", mem/(1<<20), bodies/(1<<20))
	}

	cm := find(t, ms, "kubernetes/configmap.yaml", "ConfigMap")
	text, _ := at(cm.doc, "data", "sidecar.yaml").(string)
	kcfg, err := config.Parse("configmap.yaml:sidecar.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	dep := find(t, ms, "kubernetes/deployment.yaml", "Deployment")
	res := at(dep.doc, "spec", "template", "spec", "containers", "0", "resources")
	if at(res, "limits", "cpu") == nil && kcfg.Limits.Concurrency == 0 {
		t.Errorf("Kubernetes: no CPU limit and no limits.concurrency: the sidecar's concurrency would follow the node's CPUs")
	}
	kconc := kcfg.Limits.Concurrency
	if bodies, req := float64(kconc)*float64(kcfg.Limits.RequestBytes)*bodyFactor, quantity(t, at(res, "requests", "memory")); bodies > req {
		t.Errorf("Kubernetes memory request %.0f MiB is below the %.0f MiB request bodies may take", req/(1<<20), bodies/(1<<20))
	}
}
