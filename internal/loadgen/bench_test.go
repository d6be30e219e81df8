package loadgen

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReportForms: the JSON a script reads and the table a person reads
// carry the same figures.
func TestReportForms(t *testing.T) {
	r := &Report{Jobs: 1000, Succeeded: 998, Ended: map[string]int{"FAILED": 2}, Elapsed: 2 * time.Second,
		P50: 3 * time.Millisecond, P90: 5 * time.Millisecond, P95: 6 * time.Millisecond, P99: 9500 * time.Microsecond,
		Max: 20 * time.Millisecond, ClientCPU: 50 * time.Millisecond, Watched: []ProcessCPU{{PID: 4242, CPU: 120 * time.Millisecond}}}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]float64{"jobs": 1000, "succeeded": 998, "jobs_per_second": 500, "p50_ms": 3, "p90_ms": 5,
		"p99_ms": 9.5, "max_ms": 20, "client_cpu_us_per_job": 50, "elapsed_ms": 2000} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if pids, _ := got["pid_cpu_us_per_job"].(map[string]any); pids["4242"] != 120.0 {
		t.Errorf("pid_cpu_us_per_job = %v, want 4242: 120", got["pid_cpu_us_per_job"])
	}
	table := r.String()
	for _, want := range []string{"throughput:  500 jobs/s", "p90 5ms", "p99 9.5ms", "client CPU:  50 µs/job", "CPU of 4242:  120 µs/job", "FAILED:"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}

// TestPIDCPU: the CPU a process spent, read from /proc, grows as the
// process works, as its own getrusage says; a process that is not there
// reads 0.
func TestPIDCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: --cpu-of reads it (Linux)")
	}
	before, self := pidCPU(os.Getpid()), processCPU()
	x := 0
	for processCPU()-self < 300*time.Millisecond {
		for i := range 1 << 16 {
			x += i
		}
	}
	// /proc counts in ticks of 10ms: well past half of what getrusage saw.
	if got := pidCPU(os.Getpid()) - before; got < 150*time.Millisecond {
		t.Errorf("/proc says %v of CPU after getrusage counted 300ms (%d)", got, x)
	}
	if got := pidCPU(1 << 30); got != 0 {
		t.Errorf("a process that is not there: %v", got)
	}
}
