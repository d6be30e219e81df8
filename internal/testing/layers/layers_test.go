// Package layers checks that Ward's imports run one way, top to bottom:
// cmd/, then the assembly (internal/assembly), then the gateway (over the
// client), then the parts (scheduler, host, safety, client, apikey), then
// what they stand on (jobstore, bus, modreg), then configuration, policies,
// the sandbox and apijson, then api/. Only api/, client/, modules/ (the
// SDK and the guests) and policies/ are outside internal/. A package may
// import only packages of a lower layer, or of its own folder.
package layers

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ward-run/ward/"

// layers maps a folder (the first path elements under the module) to its
// layer; the longest matching prefix wins.
var layers = []struct {
	prefix string
	layer  int
}{
	// What users import: the contracts, the client, the module SDK.
	{"api", 0},
	{"modules", 1}, // guest code: it imports only its own folder
	{"client", 4},
	// The policy users read and copy; the kernel embeds it.
	{"policies", 1},
	// The rest is Ward's own, under internal/.
	{"internal/config", 1},
	{"internal/apijson", 1}, // the JSON shape of api's messages
	{"internal/version", 1}, // the build, as every part reports it
	{"internal/sandbox", 1}, // stands on api alone; modreg reads its manifests
	{"internal/telemetry", 1},
	{"internal/failpoint", 1},
	{"internal/jsread", 1}, // JetStream reads without a consumer: bus and modreg read with it
	{"internal/audit", 2},
	{"internal/bus", 2},
	{"internal/jobstore", 2},
	{"internal/modreg", 2},
	{"internal/auth", 3}, // credentials and dispatch keys: above the bus whose subjects it permits
	{"internal/scheduler", 4},
	{"internal/scheduler/placement", 2}, // pure: below the scheduler it serves
	{"internal/workflow", 2},            // pure: the engine the scheduler drives runs with
	{"internal/host", 4},
	{"internal/safety", 4},
	{"internal/apikey", 4},
	{"internal/gateway", 5}, // over the client, as a CLI over HTTP
	// The dashboard: on the JSON API, which it reaches through an
	// interface the gateway passes in, so it imports no gateway; the
	// gateway mounts it (a folder may import its own subfolders).
	{"internal/gateway/dashboard", 5},
	{"internal/assembly", 6},
	{"internal/loadgen", 6},
	{"internal/testing", 6}, // test helpers: imported by tests only
	{"deploy", 6},           // tests only: the monitoring files against a running system
	{"cmd", 7},
	{"scripts", 7}, // what make runs (scripts/fuzzlist lists the fuzz targets)
	// What make test runs first: a program that compiles the modules as
	// the ward binary's hosts do (the assembly reads their directory).
	{"internal/testing/wasmtest/warmprog", 7},
}

// layerOf returns the layer of a package path inside the module, and the
// folder (the layers entry) it belongs to: its subpackages
// (sandbox/internal/wasmbin, jobstore/storetest) are part of it.
func layerOf(t *testing.T, rel string) (int, string) {
	best, layer := "", -1
	for _, l := range layers {
		if (rel == l.prefix || strings.HasPrefix(rel, l.prefix+"/")) && len(l.prefix) > len(best) {
			best, layer = l.prefix, l.layer
		}
	}
	if layer < 0 {
		t.Errorf("package %s is in no layer: add its folder to layers", rel)
	}
	return layer, best
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportsRunOneWay(t *testing.T) {
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
		rel := strings.TrimPrefix(p.ImportPath, module)
		from, fromFolder := layerOf(t, rel)
		for _, imp := range p.Imports {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			to, toFolder := layerOf(t, dep)
			if toFolder == fromFolder || strings.HasPrefix(dep, rel+"/") {
				continue // inside one part
			}
			if strings.HasPrefix(toFolder, "internal/testing") && !strings.HasPrefix(rel, "internal/testing/") {
				t.Errorf("%s imports the test helper %s outside a test", rel, dep)
				continue
			}
			if to >= from {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports run from higher layers to lower ones only", rel, from, dep, to)
			}
		}
	}
	if n < 20 {
		t.Fatalf("go list found only %d packages", n)
	}
}
