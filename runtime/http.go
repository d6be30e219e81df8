package runtime

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
	head, _ := json.Marshal(httpResponse{Status: resp.StatusCode, Header: resp.Header})
	out := make([]byte, 4, 4+len(head)+len(data))
	binary.LittleEndian.PutUint32(out, uint32(len(head)))
	out = append(append(out, head...), data...)
	c.resp = out
	return uint64(len(out))
}
