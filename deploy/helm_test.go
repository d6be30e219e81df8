//go:build deploy

// The Helm chart's test (make deploy-check: go test -tags deploy ./deploy/):
// it builds helm and kubeconform from deploy/tools (their own go.mod), and
// kubeconform's schemas from the Kubernetes API's OpenAPI document, all
// through the Go module proxy, so it needs no other network.

package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kubernetesVersion is the k8s.io/kubernetes module whose
// api/openapi-spec/swagger.json the schemas are made from.
const kubernetesVersion = "v1.35.0"

const chartDir = "helm/ward"

type helmTools struct{ helm, kubeconform, schemas string }

// buildHelmTools builds helm, kubeconform and k8sschema (deploy/tools) and
// writes the schemas.
func buildHelmTools(t *testing.T) helmTools {
	t.Helper()
	dir := t.TempDir()
	goCmd := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = "tools"
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s (in deploy/tools): %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return out
	}
	goCmd("build", "-o", dir+"/", "helm.sh/helm/v3/cmd/helm", "github.com/yannh/kubeconform/cmd/kubeconform", "./k8sschema")
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(goCmd("mod", "download", "-json", "k8s.io/kubernetes@"+kubernetesVersion), &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download k8s.io/kubernetes@%s: %v %s", kubernetesVersion, err, mod.Error)
	}
	schemas := filepath.Join(dir, "schemas")
	cmd := exec.Command(filepath.Join(dir, "k8sschema"), "-swagger", filepath.Join(mod.Dir, "api", "openapi-spec", "swagger.json"), "-out", schemas)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("k8sschema: %v\n%s", err, out)
	}
	return helmTools{helm: filepath.Join(dir, "helm"), kubeconform: filepath.Join(dir, "kubeconform"), schemas: schemas}
}

// helmVariants are the value sets the chart is rendered with.
var helmVariants = []struct {
	name string
	args []string
}{
	{"defaults", nil},
	{"gpu", []string{"--set", "gpuHosts.enabled=true"}},
	{"gpu-external-ollama", []string{"--set", "gpuHosts.enabled=true", "--set", "gpuHosts.ollama.sidecar=false",
		"--set", "gpuHosts.ollama.url=http://ollama.ollama:11434", "--set", "gpuHosts.runtimeClassName=nvidia"}},
	{"everything", []string{"--set", "gpuHosts.enabled=true", "--set", "gateway.ingress.enabled=true",
		"--set", "gateway.ingress.tls.enabled=true", "--set", "gateway.ingress.className=nginx",
		"--set", "metrics.serviceMonitor.enabled=true", "--set", "auth.create=true",
		"--set", "auth.files.scheduler.scheduler\\.creds=CREDS", "--set", "auth.files.scheduler.dispatch\\.secret=00",
		"--set", "redis.existingSecret=ward-redis", "--set", "nats.tls.enabled=true", "--set", "nats.tls.mutual=true",
		"--set", "nats.url=nats://nats-0.nats:4222\\,nats://nats-1.nats:4222",
		"--set-string", "config.pools=pools: {}"}},
	{"insecure", []string{"--set", "auth.enabled=false", "--set", "safety.tls.enabled=false", "--set", "podDisruptionBudget.enabled=false"}},
}

// TestHelmChart lints the chart, renders it with each variant and
// validates the manifests with kubeconform -strict against the Kubernetes
// schemas, then checks what the schemas cannot: every ward command line and
// variable against the binary, the roles and their replicas, the GPU
// variant's scheduling, the security contexts, the configuration.
func TestHelmChart(t *testing.T) {
	tools := buildHelmTools(t)
	for _, f := range []string{"pools.yaml", "timeouts.yaml", "scheduler.yaml"} {
		chart, err1 := os.ReadFile(filepath.Join(chartDir, "files", f))
		repo, err2 := os.ReadFile(filepath.Join(repoRoot, "internal", "config", f))
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(chart, repo) {
			t.Errorf("deploy/%s/files/%s differs from config/%s: copy it again", chartDir, f, f)
		}
	}
	for _, v := range helmVariants {
		t.Run(v.name, func(t *testing.T) {
			lint := append([]string{"lint", "--strict", chartDir}, v.args...)
			if out, err := exec.Command(tools.helm, lint...).CombinedOutput(); err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(lint, " "), err, out)
			}
			tmpl := append([]string{"template", "ward", chartDir, "--namespace", "ward"}, v.args...)
			cmd := exec.Command(tools.helm, tmpl...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			manifests, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(tmpl, " "), err, stderr.Bytes())
			}
			kc := exec.Command(tools.kubeconform, "-strict", "-summary", "-schema-location", tools.schemas,
				"-skip", "ServiceMonitor", "-")
			kc.Stdin = bytes.NewReader(manifests)
			out, err := kc.CombinedOutput()
			t.Logf("kubeconform: %s", bytes.TrimSpace(out))
			if err != nil {
				t.Fatalf("kubeconform: %v\n%s", err, out)
			}
			checkManifests(t, v.name, manifests)
		})
	}
}

type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Template struct {
			Spec podSpec `yaml:"spec"`
		} `yaml:"template"`
		Endpoints []map[string]any `yaml:"endpoints"`
	} `yaml:"spec"`
	Data map[string]string `yaml:"data"`
}

type k8sEnv struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

type podSpec struct {
	SecurityContext struct {
		RunAsNonRoot *bool `yaml:"runAsNonRoot"`
	} `yaml:"securityContext"`
	NodeSelector map[string]string `yaml:"nodeSelector"`
	Tolerations  []map[string]any  `yaml:"tolerations"`
	Affinity     map[string]any    `yaml:"affinity"`
	Containers   []struct {
		Name      string   `yaml:"name"`
		Image     string   `yaml:"image"`
		Args      []string `yaml:"args"`
		Env       []k8sEnv `yaml:"env"`
		Resources struct {
			Limits map[string]any `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		} `yaml:"securityContext"`
		ReadinessProbe map[string]any `yaml:"readinessProbe"`
	} `yaml:"containers"`
}

func checkManifests(t *testing.T, variant string, manifests []byte) {
	t.Helper()
	objs := map[string]k8sObject{} // kind/name
	dec := yaml.NewDecoder(bytes.NewReader(manifests))
	for {
		var o k8sObject
		err := dec.Decode(&o)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the rendered manifests: %v", err)
		}
		if o.Kind != "" {
			objs[o.Kind+"/"+o.Metadata.Name] = o
		}
	}
	want := map[string]int{"Deployment/ward-scheduler": 2, "Deployment/ward-safety": 2, "Deployment/ward-gateway": 2}
	for k, n := range want {
		o, ok := objs[k]
		if !ok || o.Spec.Replicas == nil || *o.Spec.Replicas != n {
			t.Errorf("%s: want %d replicas: %+v", k, n, o.Spec.Replicas)
		}
	}
	for _, k := range []string{"DaemonSet/ward-host", "Service/ward-safety", "Service/ward-gateway", "ConfigMap/ward-config"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("%s is missing", k)
		}
	}
	gpu := strings.HasPrefix(variant, "gpu") || variant == "everything"
	if _, ok := objs["DaemonSet/ward-host-gpu"]; ok != gpu {
		t.Errorf("DaemonSet/ward-host-gpu rendered: %v, want %v", ok, gpu)
	}
	auth := variant != "insecure"
	// Only the schedulers reach Redis: no other container has a Redis
	// setting (REDIS_URL, --redis).
	for key, o := range objs {
		if o.Kind != "Deployment" && o.Kind != "DaemonSet" {
			continue
		}
		for _, c := range o.Spec.Template.Spec.Containers {
			hasURL := slices.ContainsFunc(c.Env, func(e k8sEnv) bool { return e.Name == "REDIS_URL" })
			hasFlag := slices.ContainsFunc(c.Args, func(a string) bool { return a == "--redis" || strings.HasPrefix(a, "--redis=") })
			if want := key == "Deployment/ward-scheduler"; hasURL != want || hasFlag {
				t.Errorf("%s container %s: REDIS_URL set: %v, want %v; --redis: %v (only the schedulers reach Redis)", key, c.Name, hasURL, want, hasFlag)
			}
		}
	}
	for _, k := range []string{"DaemonSet/ward-host", "Deployment/ward-scheduler"} {
		if _, ok := objs[k]; !ok {
			t.Errorf("%s is missing", k)
		}
	}
	// The scheduler's Redis ACL user: the rules of deploy/redis, which
	// TestRedisACL runs the store under.
	src, err := os.ReadFile(redisACLRules)
	if err != nil {
		t.Fatal(err)
	}
	rules := redisACLRuleLine(t, src)
	acl := objs["ConfigMap/ward-redis-acl"]
	if got := acl.Data["ward-scheduler.rules"]; got != rules {
		t.Errorf("ConfigMap/ward-redis-acl: ward-scheduler.rules %q, want %s's %q", got, redisACLRules, rules)
	}
	if got, want := acl.Data["setuser.redis"], "ACL SETUSER ward-scheduler reset on "+rules+"\n"; got != want {
		t.Errorf("ConfigMap/ward-redis-acl: setuser.redis %q, want %q", got, want)
	}
	for key, o := range objs {
		if o.Kind != "Deployment" && o.Kind != "DaemonSet" {
			continue
		}
		ps := o.Spec.Template.Spec
		if ps.SecurityContext.RunAsNonRoot == nil || !*ps.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: the pod is not runAsNonRoot", key)
		}
		for _, c := range ps.Containers {
			where := key + " container " + c.Name
			if c.Name == "ollama" {
				if _, ok := c.Resources.Limits["nvidia.com/gpu"]; !ok {
					t.Errorf("%s: no nvidia.com/gpu limit", where)
				}
				continue
			}
			if !strings.HasPrefix(c.Image, "ward:") {
				t.Errorf("%s: image %s", where, c.Image)
			}
			checkWardArgs(t, where, c.Args)
			for _, e := range c.Env {
				if e.Name != "POD_NAME" && e.Name != "NODE_NAME" && !strings.HasPrefix(e.Name, "NVIDIA_") && !readByWard(t, e.Name) {
					t.Errorf("%s: environment %s is read by no ward code", where, e.Name)
				}
			}
			if sc := c.SecurityContext; sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("%s: want a read-only root and no privilege escalation", where)
			}
			if c.ReadinessProbe == nil {
				t.Errorf("%s: no readiness probe", where)
			}
			args := strings.Join(c.Args, " ")
			if strings.Contains(args, "--creds=") != auth {
				t.Errorf("%s: --creds given: %v, want %v: %s", where, !auth, auth, args)
			}
			if key == "DaemonSet/ward-host-gpu" {
				if !strings.Contains(args, "--gpu=auto") {
					t.Errorf("%s: not --gpu=auto: %s", where, args)
				}
				if ps.NodeSelector["nvidia.com/gpu.present"] != "true" || len(ps.Tolerations) == 0 {
					t.Errorf("%s: not scheduled on GPU nodes: %v %v", where, ps.NodeSelector, ps.Tolerations)
				}
				_, limit := c.Resources.Limits["nvidia.com/gpu"]
				if sidecar := len(ps.Containers) == 2; sidecar == limit {
					t.Errorf("%s: nvidia.com/gpu limit %v with an Ollama sidecar %v: the GPUs go to one of them", where, limit, sidecar)
				}
			}
			if key == "DaemonSet/ward-host" && gpu && ps.Affinity == nil {
				t.Errorf("%s: the plain hosts do not keep off the GPU nodes", where)
			}
		}
	}
	cm := objs["ConfigMap/ward-config"]
	for _, f := range []string{"pools.yaml", "timeouts.yaml", "scheduler.yaml"} {
		if variant == "everything" && f == "pools.yaml" {
			if strings.TrimSpace(cm.Data[f]) != "pools: {}" {
				t.Errorf("ConfigMap: config.pools does not replace pools.yaml: %q", cm.Data[f])
			}
			continue
		}
		repo, _ := os.ReadFile(filepath.Join(repoRoot, "internal", "config", f))
		if strings.TrimSpace(cm.Data[f]) != strings.TrimSpace(string(repo)) {
			t.Errorf("ConfigMap: %s is not config/%s", f, f)
		}
	}
	if variant == "everything" {
		for _, k := range []string{"Ingress/ward-gateway", "ServiceMonitor/ward", "Secret/ward-scheduler", "Secret/ward-hosts"} {
			if _, ok := objs[k]; !ok {
				t.Errorf("%s is missing", k)
			}
		}
		if sm := objs["ServiceMonitor/ward"]; len(sm.Spec.Endpoints) == 0 {
			t.Errorf("ServiceMonitor: no endpoints")
		}
		gw := objs["Deployment/ward-gateway"].Spec.Template.Spec.Containers[0]
		if !strings.Contains(strings.Join(gw.Args, " "), "--secure-cookies") {
			t.Errorf("gateway behind the Ingress's TLS without --secure-cookies: %v", gw.Args)
		}
	}
}
