package main

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// readmeParts reads the commands of docs/OPERATIONS.md's "Running the
// parts separately" (the README's once): the sh block that starts the
// section, a command a line (a trailing backslash continues it), comments
// dropped.
func readmeParts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start := strings.Index(s, "\n## Running the parts separately")
	if start < 0 {
		t.Fatal(`docs/OPERATIONS.md: no section "Running the parts separately"`)
	}
	s = s[start:]
	open := strings.Index(s, "\n```sh\n")
	if open < 0 {
		t.Fatal("docs/OPERATIONS.md: no sh block in \"Running the parts separately\"")
	}
	s = s[open+len("\n```sh\n"):]
	s = s[:strings.Index(s, "\n```")]
	var cmds []string
	cont := false
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		next := strings.HasSuffix(line, "\\")
		line = strings.TrimSpace(strings.TrimSuffix(line, "\\"))
		if cont {
			cmds[len(cmds)-1] += " " + line
		} else {
			cmds = append(cmds, line)
		}
		cont = next
	}
	return cmds
}

// TestREADMEParts runs docs/OPERATIONS.md's "Running the parts separately" as
// written, command by command, as separate processes: the keys and the
// server configuration from `ward auth init`, a real nats-server (built
// from the pinned module) with that configuration, a tenant's and a GPU
// host's credentials, `ward safety`, `ward scheduler` on a real
// redis-server, `ward host` beside an Ollama stand-in, `ward gateway`, a
// signed policy push, and the tenant's job, which must run. Only paths,
// addresses and ports differ from the page: /etc/ward is a temporary
// directory, every listener takes a free port on 127.0.0.1, JetStream
// stores in a temporary directory, and the host serves a directory of the
// echo module alone (the walkthrough's job is an echo; the ward binary
// compiles modules under -race, and the repo modules take minutes of it),
// from the tests' shared compiled-module cache. A
// walkthrough that stops working fails here.
func TestREADMEParts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds nats-server and runs every part as a process")
	}
	cmds := readmeParts(t)
	if len(cmds) < 9 {
		t.Fatalf("the walkthrough has %d commands: the sh block of docs/OPERATIONS.md was not read:\n%s", len(cmds), strings.Join(cmds, "\n"))
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	etc := filepath.Join(dir, "etc")
	natsBin := filepath.Join(dir, "nats-server")
	build := exec.Command("go", "build", "-o", natsBin, "github.com/nats-io/nats-server/v2")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building nats-server: %v\n%s", err, out)
	}
	natsAddr, safetyAddr, gatewayAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	ollama := ollamatest.New(t, nil)
	env := append(environWithoutRedis(),
		"HOME="+dir,
		"NATS_URL=nats://"+natsAddr,
		"REDIS_URL="+redistest.Start(t),
		"SAFETY_KERNEL_ADDR="+safetyAddr,
		"WARD_STATE_DIR="+filepath.Join(dir, "state"),
	)
	replace := strings.NewReplacer(
		"/etc/ward", etc,
		"0.0.0.0:50051", safetyAddr,
		"0.0.0.0:8080", gatewayAddr,
		"./modules/build", echoDir(t),
		"policies/", filepath.Join(root, "policies")+"/",
		"http://127.0.0.1:11434", "http://"+ollama.Host(),
	)
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	serving := regexp.MustCompile(`^(nats-server|ward (safety|scheduler|host|gateway)) `)
	var parts []*proc
	for _, line := range cmds {
		cmd := replace.Replace(line)
		if kv, ok := strings.CutPrefix(cmd, "export "); ok {
			env = append(env, kv) // each command runs in a shell of its own
			continue
		}
		// The programs: ward is the binary under test, nats-server the
		// one built above, listening where this test says.
		cmd = regexp.MustCompile(`(^|\s)ward `).ReplaceAllString(cmd, "${1}"+wardBin+" ")
		if strings.HasPrefix(line, "ward auth init ") {
			cmd += " --store-dir " + filepath.Join(dir, "nats") // not /var/lib/nats
		}
		if strings.HasPrefix(line, "ward host ") {
			// The compiled-module cache the package's tests share.
			cmd += " --cache-dir " + cacheDir
		}
		if strings.HasPrefix(cmd, "nats-server ") {
			cmd = natsBin + strings.TrimPrefix(cmd, "nats-server") + " -a 127.0.0.1 -p " + portOf(t, natsAddr)
		}
		if m := serving.FindString(line); m != "" {
			c := exec.Command("bash", "-c", "exec "+cmd)
			c.Dir, c.Env = dir, env
			p := startProc(t, m, c)
			parts = append(parts, p)
			switch {
			case strings.HasPrefix(line, "nats-server"):
				waitListening(t, natsAddr, p)
			case strings.HasPrefix(line, "ward safety"):
				waitListening(t, safetyAddr, p)
			case strings.HasPrefix(line, "ward gateway"):
				waitListening(t, gatewayAddr, p)
			case strings.HasPrefix(line, "ward host"):
				poll.Until(t, 90*time.Second, "the host serving", func() bool {
					return strings.Contains(p.out.String(), "host started") || exited(p)
				})
			case strings.HasPrefix(line, "ward scheduler"):
				poll.Until(t, 60*time.Second, "the scheduler started", func() bool {
					return strings.Contains(p.out.String(), "scheduler started") || exited(p)
				})
			}
			if exited(p) {
				t.Fatalf("$ %s\nexited at once:\n%s", line, p.out.String())
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		c := exec.CommandContext(ctx, "bash", "-c", cmd)
		c.Dir, c.Env = dir, env
		out, err := c.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("$ %s\n%v\n%s", line, err, out)
		}
		t.Logf("$ %s\n%s", line, out)
		if strings.Contains(string(out), "not written") {
			t.Errorf("$ %s\nsays something was not written:\n%s", line, out)
		}
		if strings.Contains(line, "submit") && !strings.Contains(string(out), "result:\nhi") {
			t.Errorf("the tenant's job did not run to its result:\n%s", out)
		}
	}
	// Each part drains and exits 0 on SIGTERM: the hosts first, the server
	// last.
	for i := len(parts) - 1; i >= 0; i-- {
		parts[i].stop(t)
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// waitListening waits until addr takes connections, or p exits.
func waitListening(t *testing.T, addr string, p *proc) {
	t.Helper()
	poll.Until(t, 60*time.Second, p.name+" listening on "+addr, func() bool {
		if exited(p) {
			return true
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err == nil
	})
}

// exited reports whether p has exited (and takes its status if so).
func exited(p *proc) bool {
	if p.waited {
		return true
	}
	select {
	case err := <-p.done:
		p.waited = true
		p.done <- err
		return true
	default:
		return false
	}
}
