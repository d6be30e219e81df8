//go:build !wasip1

package sdk

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

// mainBackend is the job Main runs natively: stdin in, stdout out.
func mainBackend() backend {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk: reading stdin:", err)
		os.Exit(2)
	}
	return &localBackend{input: in, stdout: os.Stdout, logTo: os.Stderr,
		jobInfo: Info{ID: "local", Tenant: "local"}}
}

var nativeClient = &http.Client{Timeout: 60 * time.Second}

// platformFetch sends req with net/http: outside the sandbox nothing is
// restricted.
func platformFetch(req *Request) (*Response, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	hreq, err := http.NewRequest(method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return nil, err
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	resp, err := nativeClient.Do(hreq)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: body}, nil
}
