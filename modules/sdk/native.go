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

// streamClient has no overall timeout: a streamed body may take long.
var streamClient = &http.Client{}

// platformFetch sends req with net/http: outside the sandbox nothing is
// restricted.
func platformFetch(req *Request) (*Response, error) {
	hreq, err := newRequest(req)
	if err != nil {
		return nil, err
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

// platformFetchStream sends req with net/http and hands back the open body.
func platformFetchStream(req *Request) (*StreamResponse, error) {
	hreq, err := newRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := streamClient.Do(hreq)
	if err != nil {
		return nil, err
	}
	return &StreamResponse{Status: resp.StatusCode, Header: resp.Header, Body: resp.Body}, nil
}

func newRequest(req *Request) (*http.Request, error) {
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
	return hreq, nil
}
