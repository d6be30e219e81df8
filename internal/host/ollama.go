package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// OllamaProbe watches an Ollama server beside the host. While it answers
// /api/version and /api/tags, heartbeats carry capability `ollama`, label
// ollama.version, and a label ollama.model.<name>=true for every model
// present (ollama.models lists them all). When it stops answering (a
// refusal, an error, or slowDown probes in a row past probeTimeout), the
// capability is gone from the next heartbeat, and comes back with it.
type OllamaProbe struct {
	url      string
	interval time.Duration
	client   *http.Client
	log      *slog.Logger

	mu      sync.Mutex // guards the 4 following fields
	up      bool
	slow    int // probes in a row that timed out while up
	version string
	models  []string
}

// slowDown is how many probes in a row must time out before a slow Ollama
// counts as gone: a machine under load answers late, and one late answer
// should not take the host out of every LLM pool for a heartbeat (jobs
// needing Ollama would fail no_workers meanwhile). A refusal or an error
// answer counts at once.
const slowDown = 3

// probeTimeout bounds one probe (both requests).
const probeTimeout = 2 * time.Second

// NewOllamaProbe probes url every interval (default 2 s).
func NewOllamaProbe(url string, interval time.Duration, log *slog.Logger) *OllamaProbe {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	if log == nil {
		log = slog.Default()
	}
	return &OllamaProbe{
		url:      strings.TrimRight(url, "/"),
		interval: interval,
		// A probe may outlast a short interval (the next waits for it),
		// and never follows a redirect somewhere else.
		client: &http.Client{Timeout: probeTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		log: log,
	}
}

// Refresh probes once (the host's first look, before its first
// heartbeat).
func (p *OllamaProbe) Refresh(ctx context.Context) { p.probe(ctx) }

// Run probes every interval until ctx ends, the first an interval after
// Refresh.
func (p *OllamaProbe) Run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.probe(ctx)
	}
}

// probe asks Ollama once and records the answer.
func (p *OllamaProbe) probe(ctx context.Context) {
	var ver struct {
		Version string `json:"version"`
	}
	var tags struct {
		Models []struct {
			Name string `json:"name"`
		} `json:"models"`
	}
	err := p.get(ctx, "/api/version", &ver)
	if err == nil {
		err = p.get(ctx, "/api/tags", &tags)
	}
	var models []string
	for _, m := range tags.Models {
		if m.Name != "" {
			models = append(models, m.Name)
		}
	}
	sort.Strings(models)

	p.mu.Lock()
	was := p.up
	var ne net.Error
	switch {
	case err == nil:
		p.up, p.slow = true, 0
		p.version, p.models = ver.Version, models
	case was && errors.As(err, &ne) && ne.Timeout() && p.slow+1 < slowDown:
		p.slow++ // late: still up, as last seen
	default:
		p.up, p.slow = false, 0
		p.version, p.models = "", nil
	}
	up := p.up
	p.mu.Unlock()
	if up && err != nil {
		p.log.Info("ollama answered late; still counted up", "url", p.url, "err", err)
		return
	}
	switch {
	case was && err != nil:
		p.log.Warn("ollama went away", "url", p.url, "err", err)
	case !was && err == nil:
		p.log.Info("ollama is up", "url", p.url, "version", ver.Version, "models", models)
	}
}

func (p *OllamaProbe) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// reachable reports whether the last probe reached Ollama.
func (p *OllamaProbe) reachable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.up
}

// Observe adds what the last probe saw to hb.
func (p *OllamaProbe) Observe(_ context.Context, hb *wardv1.Heartbeat) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.up {
		return
	}
	hb.Capabilities = appendNew(hb.Capabilities, "ollama")
	if hb.Labels == nil {
		hb.Labels = map[string]string{}
	}
	hb.Labels["ollama.version"] = p.version
	hb.Labels["ollama.models"] = strings.Join(p.models, ",")
	for _, m := range p.models {
		hb.Labels["ollama.model."+m] = "true"
	}
}
