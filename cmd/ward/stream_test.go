package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestSubmitPrintsStreamedTokens runs `ward dev` beside an Ollama stand-in
// and `ward submit --wait` on chat-advanced: the command prints each token
// as it arrives — the stand-in produces a token only once the one before
// is on the command's output — and then the whole text as the result.
func TestSubmitPrintsStreamedTokens(t *testing.T) {
	tokens := []string{"alpha", "-bravo", "-charlie", "-delta", "-echo"}
	o := ollamatest.New(t, func(ollamatest.Request) []string { return tokens })
	var submitted atomic.Pointer[proc] // ward submit, once started
	o.BeforeToken(func(i int, _ string) {
		if i == 0 {
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		printed := func() bool {
			submit := submitted.Load()
			return submit != nil && strings.Contains(submit.out.String(), strings.Join(tokens[:i], ""))
		}
		for !printed() {
			if time.Now().After(deadline) {
				t.Errorf("ward submit had not printed %q before token %d was produced", tokens[i-1], i)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})

	// chat-advanced, granted the host's ollama service by the default
	// policy: the host resolves it to the stand-in (OLLAMA_URL), on
	// whatever port it listens.
	mods := t.TempDir()
	man, err := os.ReadFile("../../modules/chat-advanced/manifest.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "chat-advanced.yaml"), man, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mods, "chat-advanced.wasm"), wasmtest.BuildReactor(t, "github.com/ward-run/ward/modules/chat-advanced"), 0o644); err != nil {
		t.Fatal(err)
	}
	dev, natsURL := startDev(t, []string{"REDIS_URL=", "OLLAMA_URL=" + o.URL, "OLLAMA_MODEL=llama3"}, "--modules", mods)
	// Wait for the host to report Ollama, as `ward workers` shows it.
	c, err := client.Dial(natsURL, client.Options{Creds: devAdminCreds()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		hbs, err := c.Workers(context.Background(), 300*time.Millisecond)
		if err == nil && len(hbs) > 0 && slices.Contains(hbs[0].GetCapabilities(), "ollama") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host never reported ollama: %v %v", hbs, err)
		}
	}

	submit := startWard(t, "submit", nil, "submit", "--nats", natsURL, "--topic", "job.chat.advanced", "--tenant", "acme",
		"--payload", "spell it", "--wait")
	submitted.Store(submit)
	select {
	case err := <-submit.done:
		submit.waited = true
		if err != nil {
			t.Fatalf("ward submit: %v\n%s", err, submit.out.String())
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("ward submit did not end:\n%s", submit.out.String())
	}
	out := submit.out.String()
	whole := strings.Join(tokens, "")
	// The tokens, printed as they came, in order, after RUNNING…
	at := strings.Index(out, "RUNNING")
	for _, tok := range tokens {
		i := strings.Index(out[max(at, 0):], tok)
		if at < 0 || i < 0 {
			t.Fatalf("token %q is not printed after RUNNING and the tokens before it:\n%s", tok, out)
		}
		at += i + len(tok)
	}
	// … then the result, which holds the whole text.
	if !strings.Contains(out, "SUCCEEDED") || !strings.Contains(out, `"reply":"`+whole+`"`) {
		t.Errorf("ward submit output:\n%s", out)
	}
	dev.stop(t)
}
