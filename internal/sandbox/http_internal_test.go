package sandbox

import (
	"net/url"
	"testing"
)

func TestHostGranted(t *testing.T) {
	for _, tc := range []struct {
		url    string
		grants []string
		want   bool
	}{
		{"http://api.example.com/x", []string{"api.example.com"}, true},
		{"https://API.Example.com:8443/x", []string{"api.example.com"}, true},
		{"http://api.example.com/x", []string{"api.example.com:80"}, true},
		{"https://api.example.com/x", []string{"api.example.com:80"}, false},
		{"https://api.example.com/x", []string{"api.example.com:443"}, true},
		{"http://api.example.com/x", []string{"*.example.com"}, true},
		{"http://a.b.example.com/x", []string{"*.example.com"}, true},
		{"http://example.com/x", []string{"*.example.com"}, false},
		{"http://evilexample.com/x", []string{"*.example.com"}, false},
		{"http://example.com.evil.io/x", []string{"example.com"}, false},
		{"http://[::1]:11434/x", []string{"[::1]:11434"}, true},
		{"http://[::1]:11434/x", []string{"::1"}, true},
		{"http://10.0.0.1/x", []string{"*.0.0.1"}, false},
		{"http://api.example.com/x", nil, false},
		{"http:///x", []string{""}, false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostGranted(tc.grants, u); got != tc.want {
			t.Errorf("%s with %q: %v, want %v", tc.url, tc.grants, got, tc.want)
		}
	}
}
