// Package redistest runs a real redis-server for tests, the way nats-server's
// test.RunServer runs NATS: one process per caller, on a free loopback port,
// stopped when the test ends.
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startTimeout bounds how long Start waits for a server to answer PING.
const startTimeout = 10 * time.Second

// Start runs redis-server on a free loopback port, with no persistence and
// its working directory in t.TempDir(), and returns its redis:// URL. The
// server is killed when the test ends. Start fails the test, saying how to
// install it, when redis-server is not on PATH (a skipped Redis test would
// hide that the production store went untested), and when the server does
// not come up.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH: the tests of the Redis job store need it (apt-get install redis-server)")
	}
	// Another process can take the free port between our probe and the
	// server's bind, so try a few ports before giving up.
	var last error
	for range 3 {
		addr, err := start(t, bin)
		if err == nil {
			return "redis://" + addr
		}
		last = err
	}
	t.Fatalf("redistest: %v", last)
	return ""
}

// start runs one server and waits for it to answer; on failure the server
// is stopped.
func start(t testing.TB, bin string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	dir := t.TempDir()
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
	)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start redis-server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	stop := func() {
		cmd.Process.Kill()
		<-done
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			// out is complete: Wait has returned.
			return "", fmt.Errorf("redis-server on %s exited: %s", addr, strings.TrimSpace(out.String()))
		default:
		}
		if ping(addr) == nil {
			t.Cleanup(stop)
			return addr, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", fmt.Errorf("redis-server on %s did not answer PING within %v: %s", addr, startTimeout, strings.TrimSpace(out.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
