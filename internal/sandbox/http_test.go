package sandbox_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// httpStandIns are two servers: a (on 127.0.0.1) and b, reached as
// localhost, another host name.
type httpStandIns struct {
	a, aHost string
}

func newHTTPStandIns(t *testing.T) *httpStandIns {
	t.Helper()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("you reached b"))
	}))
	t.Cleanup(b.Close)
	bURL, _ := url.Parse(b.URL)
	bURL.Host = "localhost:" + bURL.Port()

	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("hello")) })
	mux.HandleFunc("/redirect-same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/hello", http.StatusFound) })
	mux.HandleFunc("/redirect-other", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, bURL.String(), http.StatusFound) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(strings.Repeat("x", 4096))) })
	a := httptest.NewServer(mux)
	t.Cleanup(a.Close)
	aURL, _ := url.Parse(a.URL)
	return &httpStandIns{a: a.URL, aHost: aURL.Host}
}
