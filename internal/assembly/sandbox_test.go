package assembly_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/repotest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
	"github.com/ward-run/ward/modules/sdk"
)

// builtModules builds modules as `make modules` does (reactors), with the
// manifests from the source tree.
func builtModules(t *testing.T, names ...string) (map[string][]byte, map[string]*sandbox.Manifest) {
	t.Helper()
	wasm := map[string][]byte{}
	manifests := map[string]*sandbox.Manifest{}
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join("..", "..", "modules", name, "manifest.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if manifests[name], err = sandbox.ParseManifest(raw); err != nil {
			t.Fatal(err)
		}
		wasm[name] = wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/"+name)
	}
	return wasm, manifests
}

// TestSandboxThroughEveryPart: pooled echo, and a repository far larger
// than a NATS message, submitted by a client, scheduled, and scanned by
// repo-scan in the sandbox.
func TestSandboxThroughEveryPart(t *testing.T) {
	wasm, manifests := builtModules(t, "echo", "repo-scan")
	// The cache the module tests filled: the same bytes compile once.
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: wasm, Manifests: manifests, CacheDir: wasmtest.CacheDir(t)}})

	for i := range 3 {
		_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("pooled")})
		if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || string(rec.GetResult()) != "pooled" {
			t.Fatalf("echo %d: %s %s %s, result %q", i, rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage(), rec.GetResult())
		}
	}

	// The demo repository and 64 MiB more, as a plain tar (the modules
	// take gzipped or plain tars; gzipping 64 MiB under the race detector
	// would be the slowest part of the test).
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.AddFS(os.DirFS(repotest.Tree(t))); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<20)
	_, _ = rand.Read(big)
	if err := tw.WriteHeader(&tar.Header{Name: "assets/big.bin", Mode: 0o644, Size: int64(len(big))}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write(big)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	archive := buf.Bytes()
	req := &wardv1.JobRequest{Topic: "job.repo.scan", TenantId: "acme", Payload: archive, JobId: uuid.NewString()}
	// Not e.run: 64 MiB through the object store and the sandbox takes
	// tens of seconds under the race detector on a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	w, err := e.client.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Wait(ctx, req.JobId, w, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := e.client.Get(ctx, req.JobId, true)
	if err != nil {
		t.Fatal(err)
	}
	if req.GetContextPtr() == "" || len(req.GetPayload()) != 0 {
		t.Fatalf("a %d-byte payload went inline", len(archive))
	}
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || rec.GetContextPtr() != req.GetContextPtr() {
		t.Fatalf("repo-scan: %s %s %s (context %s)", rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage(), rec.GetContextPtr())
	}
	var scan sdk.ScanResult
	if err := json.Unmarshal(rec.GetResult(), &scan); err != nil {
		t.Fatal(err)
	}
	if scan.TotalFiles != repotest.Files+1 || scan.TotalBytes < 64<<20 {
		t.Fatalf("scan: %d files, %d bytes", scan.TotalFiles, scan.TotalBytes)
	}
}
