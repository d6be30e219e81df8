package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tetratelabs/wazero/api"
)

// httpRequest is the metadata of ward.http_request, as JSON.
type httpRequest struct {
	Method string              `json:"method"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header"`
	// Stream leaves the body out of the response: the guest reads it as
	// it arrives, with ward.http_read.
	Stream bool `json:"stream"`
}

// httpResponse is the metadata part of a response.
type httpResponse struct {
	Status int                 `json:"status"`
	Header map[string][]string `json:"header"`
}

// errRedirectHost refuses a redirect to another host.
var errRedirectHost = errors.New("redirect to another host refused")

func newHTTPClient(cfg HTTPConfig) *http.Client {
	tr := cfg.Transport
	if tr == nil {
		tr = &http.Transport{
			// No proxy from the environment: a request goes to the host
			// that was granted, nowhere else.
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:          64,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   5 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("stopped after 5 redirects")
			}
			if !strings.EqualFold(req.URL.Hostname(), via[0].URL.Hostname()) {
				return fmt.Errorf("%w: %s to %s", errRedirectHost, via[0].URL.Host, req.URL.Host)
			}
			if c, _ := req.Context().Value(callKey{}).(*call); c == nil || !hostGranted(c.in.Grants.HTTPHosts, req.URL) {
				return fmt.Errorf("%w: %s is not granted", errRedirectHost, req.URL.Host)
			}
			return nil
		},
	}
}

// hostGranted reports whether u's host is in grants: "host" (any port),
// "host:port", or "*.domain" (its subdomains, any port; never an IP
// address). Names compare case-insensitively.
func hostGranted(grants []string, u *url.URL) bool {
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	if host == "" {
		return false
	}
	for _, g := range grants {
		g = strings.ToLower(strings.TrimSpace(g))
		if domain, ok := strings.CutPrefix(g, "*."); ok {
			if net.ParseIP(host) == nil && strings.HasSuffix(host, "."+domain) {
				return true
			}
			continue
		}
		gh, gp, err := net.SplitHostPort(g)
		if err != nil { // no port
			gh, gp = strings.Trim(g, "[]"), ""
		}
		if gh == host && (gp == "" || gp == port) {
			return true
		}
	}
	return false
}

// http_request(meta_ptr, meta_len, body_ptr, body_len) -> i32: sends the
// request described by the JSON at meta_ptr ({"method", "url", "header"})
// with the body at body_ptr, to a granted host only, and keeps the response
// for ward.response_read: a little-endian u32 length, that many bytes of
// JSON ({"status", "header"}), then the body. Returns the response's length.
func hostHTTPRequest(c *call, mod api.Module, args []uint64) uint64 {
	metaPtr, metaLen := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	bodyPtr, bodyLen := api.DecodeU32(args[2]), api.DecodeU32(args[3])
	c.resp = nil
	c.closeBody()
	cfg := c.r.cfg.HTTP
	if metaLen > maxHTTPMetaBytes {
		return errno(c.fail(ErrnoLimit, "http_request: request metadata over %d bytes", maxHTTPMetaBytes))
	}
	if uint64(bodyLen) > uint64(cfg.MaxRequestBytes) {
		return errno(c.fail(ErrnoLimit, "http_request: request body over %d bytes", cfg.MaxRequestBytes))
	}
	meta, ok := read(mod, metaPtr, metaLen)
	if !ok {
		return errno(c.fail(ErrnoInvalid, "http_request: [%d, +%d) is outside the module's memory", metaPtr, metaLen))
	}
	body, ok := read(mod, bodyPtr, bodyLen)
	if !ok {
		return errno(c.fail(ErrnoInvalid, "http_request: [%d, +%d) is outside the module's memory", bodyPtr, bodyLen))
	}
	var req httpRequest
	if err := json.Unmarshal(meta, &req); err != nil {
		return errno(c.fail(ErrnoInvalid, "http_request: request metadata: %v", err))
	}
	u, err := url.Parse(req.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errno(c.fail(ErrnoInvalid, "http_request: %q is not an absolute http(s) URL", req.URL))
	}
	if req.Method == "" {
		req.Method = http.MethodGet
	}
	if !hostGranted(c.in.Grants.HTTPHosts, u) {
		return errno(c.refuse("http: %s %s: host %s is not granted to this job", req.Method, u.Redacted(), u.Host))
	}
	if c.httpCalls >= cfg.MaxRequests {
		return errno(c.fail(ErrnoLimit, "http_request: more than %d requests in one run", cfg.MaxRequests))
	}
	c.httpCalls++

	// The body is copied: the guest's memory may move once it runs again.
	if req.Stream {
		return c.openStream(&req, u, bytes.Clone(body))
	}
	ctx, cancel := context.WithTimeout(c.ctx, cfg.Timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(withCall(ctx, c), req.Method, u.String(), bytes.NewReader(bytes.Clone(body)))
	if err != nil {
		return errno(c.fail(ErrnoInvalid, "http_request: %v", err))
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	resp, err := c.r.http.Do(hreq)
	if err != nil {
		if errors.Is(err, errRedirectHost) {
			return errno(c.refuse("http: %s %s: %v", req.Method, u.Redacted(), errors.Unwrap(err)))
		}
		return errno(c.fail(ErrnoFailed, "http: %s %s: %v", req.Method, u.Redacted(), err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(cfg.MaxResponseBytes)+1))
	if err != nil {
		return errno(c.fail(ErrnoFailed, "http: %s %s: reading the response: %v", req.Method, u.Redacted(), err))
	}
	if len(data) > cfg.MaxResponseBytes {
		return errno(c.fail(ErrnoLimit, "http: %s %s: response body over %d bytes", req.Method, u.Redacted(), cfg.MaxResponseBytes))
	}
	c.resp = response(resp, data)
	return uint64(len(c.resp))
}

// response is what ward.response_read reads: a little-endian u32 length,
// that many bytes of JSON ({"status", "header"}), then the body.
func response(resp *http.Response, body []byte) []byte {
	head, _ := json.Marshal(httpResponse{Status: resp.StatusCode, Header: resp.Header})
	out := make([]byte, 4, 4+len(head)+len(body))
	binary.LittleEndian.PutUint32(out, uint32(len(head)))
	return append(append(out, head...), body...)
}

// httpStream is a response body the guest reads as it arrives
// (ward.http_read). Each read waits at most HTTPConfig.Timeout for bytes,
// and the run's context bounds it too; all reads together are capped at
// HTTPConfig.MaxResponseBytes.
type httpStream struct {
	body   io.ReadCloser
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   *time.Timer
	what   string // "GET https://host/path", for errors
	read   int
	eof    bool
}

// errIdle is the cause of a streamed request's context when no byte came
// within HTTPConfig.Timeout.
var errIdle = errors.New("no data within the timeout")

// openStream sends req and keeps its body open for ward.http_read; the
// response ward.response_read reads has the status and headers only.
func (c *call) openStream(req *httpRequest, u *url.URL, body []byte) uint64 {
	cfg := c.r.cfg.HTTP
	what := req.Method + " " + u.Redacted()
	ctx, cancel := context.WithCancelCause(c.ctx)
	idle := time.AfterFunc(cfg.Timeout, func() { cancel(errIdle) })
	hreq, err := http.NewRequestWithContext(withCall(ctx, c), req.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		idle.Stop()
		cancel(nil)
		return errno(c.fail(ErrnoInvalid, "http_request: %v", err))
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	resp, err := c.r.http.Do(hreq)
	idle.Stop()
	if err != nil {
		cancel(nil)
		if errors.Is(err, errRedirectHost) {
			return errno(c.refuse("http: %s: %v", what, errors.Unwrap(err)))
		}
		return errno(c.fail(ErrnoFailed, "http: %s: %v", what, err))
	}
	c.body = &httpStream{body: resp.Body, ctx: ctx, cancel: cancel, idle: idle, what: what}
	c.resp = response(resp, nil)
	return uint64(len(c.resp))
}

// closeBody closes the streamed response body, if one is open.
func (c *call) closeBody() {
	if c.body != nil {
		c.body.idle.Stop()
		c.body.cancel(nil)
		_ = c.body.body.Close()
		c.body = nil
	}
}

// maxHTTPRead caps one ward.http_read.
const maxHTTPRead = 64 << 10

// http_read(ptr, len) -> i32: reads up to len bytes of the body of the last
// response asked for with "stream": true, waiting until some arrive;
// returns the count, 0 at the end. A wait longer than the HTTP timeout, or
// a body over the response cap in all, fails the call.
func hostHTTPRead(c *call, mod api.Module, args []uint64) uint64 {
	ptr, n := api.DecodeU32(args[0]), api.DecodeU32(args[1])
	s := c.body
	if s == nil {
		return errno(c.fail(ErrnoInvalid, "http_read: no streamed response is open (http_request with \"stream\": true)"))
	}
	if s.eof || n == 0 {
		return 0
	}
	cfg := c.r.cfg.HTTP
	if room := cfg.MaxResponseBytes - s.read; room > 0 {
		n = min(n, uint32(room))
	} else {
		// One byte more says whether the body ends here or goes past the cap.
		n = 1
	}
	buf := make([]byte, min(n, maxHTTPRead))
	s.idle.Reset(cfg.Timeout)
	k, err := readSome(s.body, buf)
	s.idle.Stop()
	if k > 0 && s.read+k > cfg.MaxResponseBytes {
		c.closeBody()
		return errno(c.fail(ErrnoLimit, "http: %s: response body over %d bytes", s.what, cfg.MaxResponseBytes))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		idle := errors.Is(context.Cause(s.ctx), errIdle)
		c.closeBody()
		if idle {
			return errno(c.fail(ErrnoFailed, "http: %s: reading the response: %v (%s)", s.what, errIdle, cfg.Timeout))
		}
		return errno(c.fail(ErrnoFailed, "http: %s: reading the response: %v", s.what, err))
	}
	s.eof = err != nil
	s.read += k
	if k > 0 && !mod.Memory().Write(ptr, buf[:k]) {
		c.closeBody()
		return errno(c.fail(ErrnoInvalid, "http_read: [%d, +%d) is outside the module's memory", ptr, k))
	}
	return uint64(k)
}

// readSome reads until it has a byte or an error.
func readSome(r io.Reader, p []byte) (int, error) {
	for {
		n, err := r.Read(p)
		if n > 0 || err != nil {
			return n, err
		}
	}
}
