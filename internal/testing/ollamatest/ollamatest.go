// Package ollamatest is an Ollama stand-in for tests: an httptest server
// that speaks /api/version, /api/tags and /api/generate, with and without
// streaming, the way Ollama does.
package ollamatest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Version is what /api/version answers.
const Version = "0.5.7"

// models are the models /api/tags lists.
var models = []string{"llama3:latest", "codellama:7b"}

// Request is the body of a POST /api/generate.
type Request struct {
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	System string `json:"system,omitempty"`
	Format string `json:"format,omitempty"`
	Stream bool   `json:"stream"`
}

// chunk is one line of a streamed answer, or the whole of one that is not.
type chunk struct {
	Model      string `json:"model"`
	CreatedAt  string `json:"created_at"`
	Response   string `json:"response"`
	Done       bool   `json:"done"`
	DoneReason string `json:"done_reason,omitempty"`
}

// Server is a running stand-in. Close stops it: from then on nothing
// answers at its address, as when Ollama stops.
type Server struct {
	*httptest.Server
	answer func(Request) []string

	mu     sync.Mutex // guards the 3 following fields
	reqs   []Request
	down   bool
	before func(i int, token string)
}

// New starts a stand-in whose model answers a request with the tokens
// answer returns: streamed one line each when the request asks for a
// stream, else joined in one answer. It is closed when the test ends.
func New(t testing.TB, answer func(Request) []string) *Server {
	s := &Server{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Host is the stand-in's host:port, what a job must be granted.
func (s *Server) Host() string {
	u, _ := url.Parse(s.URL)
	return u.Host
}

// SetDown makes every endpoint answer 503 (down) or serve again.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// BeforeToken sets a function called before each streamed token is sent,
// with its index from 0: a test steps the stream with it, waiting until
// the previous token arrived where it should.
func (s *Server) BeforeToken(f func(i int, token string)) {
	s.mu.Lock()
	s.before = f
	s.mu.Unlock()
}

// Requests returns the /api/generate requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down, before := s.down, s.before
	s.mu.Unlock()
	if down {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	switch {
	case r.URL.Path == "/api/version":
		writeJSON(w, map[string]string{"version": Version})
	case r.URL.Path == "/api/tags":
		type model struct {
			Name string `json:"name"`
		}
		var ms []model
		for _, m := range models {
			ms = append(ms, model{m})
		}
		writeJSON(w, map[string][]model{"models": ms})
	case r.URL.Path == "/api/generate" && r.Method == http.MethodPost:
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.mu.Unlock()
		tokens := s.answer(req)
		now := time.Now().UTC().Format(time.RFC3339Nano)
		if !req.Stream {
			writeJSON(w, chunk{Model: req.Model, CreatedAt: now, Response: strings.Join(tokens, ""), Done: true, DoneReason: "stop"})
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		flusher, _ := w.(http.Flusher)
		for i, tok := range tokens {
			if before != nil {
				before(i, tok)
			}
			if enc.Encode(chunk{Model: req.Model, CreatedAt: now, Response: tok}) != nil {
				return // the client went away
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		_ = enc.Encode(chunk{Model: req.Model, CreatedAt: now, Done: true, DoneReason: "stop"})
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
