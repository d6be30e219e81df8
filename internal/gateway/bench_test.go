package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// BenchmarkGateway compares submit and get through the gateway (HTTP,
// JSON, an API key) with the CLI's path (the Go client over NATS), on one
// system, 16 callers at once: requests/s and p99 of each.
//
//	go test -run '^$' -bench Gateway -benchtime 2000x ./internal/gateway
func BenchmarkGateway(b *testing.B) {
	s := start(b, sysOptions{rate: 1e6, burst: 1e6})
	// Tenant bench has no submission rate limit (config's default
	// scheduler.yaml), as ward bench's.
	key, _, err := s.Keys.Add(context.Background(), apikeySpec("bench"))
	if err != nil {
		b.Fatal(err)
	}
	// One job to read back.
	rep, err := s.Client.Submit(context.Background(), &wardv1.JobRequest{Topic: "job.echo", TenantId: "bench", Payload: []byte(`{"x":1}`)})
	if err != nil {
		b.Fatal(err)
	}
	id := rep.GetJobId()
	s.waitJob(b, key, id)
	bench := s.Client.For("bench")
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	httpCall := func(method, path string, body []byte) error {
		req, _ := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return &httpError{resp.StatusCode}
		}
		return nil
	}
	body := []byte(`{"topic":"job.echo","payload":{"x":1}}`)
	cases := []struct {
		name string
		op   func(ctx context.Context) error
	}{
		{"submit/http", func(context.Context) error { return httpCall("POST", "/v1/jobs", body) }},
		{"submit/client", func(ctx context.Context) error {
			_, err := bench.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", Payload: []byte(`{"x":1}`)})
			return err
		}},
		{"get/http", func(context.Context) error { return httpCall("GET", "/v1/jobs/"+id, nil) }},
		{"get/client", func(ctx context.Context) error { _, err := bench.Get(ctx, id, true); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			const callers = 16
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			work := make(chan struct{}, b.N)
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range work {
						t0 := time.Now()
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						err := c.op(ctx)
						cancel()
						d := time.Since(t0)
						if err != nil {
							b.Error(err)
							return
						}
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			el := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(len(lat))/el.Seconds(), "req/s")
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			}
		})
	}
}

type httpError struct{ status int }

func (e *httpError) Error() string { return http.StatusText(e.status) }
