// Package redistest runs a real redis-server for tests, the way nats-server's
// test.RunServer runs NATS: one process per caller, on a free loopback port,
// stopped when the test ends.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
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
	return "redis://" + StartArgs(t)
}

// StartArgs is Start with args added to redis-server's command line (an
// --aclfile, say), and returns the server's address (127.0.0.1:port), not a
// URL: with an ACL, the URL names a user. A server whose default user is
// off counts as up when it answers NOAUTH.
func StartArgs(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH: the tests of the Redis job store need it (apt-get install redis-server)")
	}
	// Another process can take the free port between our probe and the
	// server's bind, so try a few ports before giving up.
	var last error
	for range 3 {
		addr, err := start(t, bin, args...)
		if err == nil {
			return addr
		}
		last = err
	}
	t.Fatalf("redistest: %v", last)
	return ""
}

// start runs one server and waits for it to answer; on failure the server
// is stopped.
func start(t testing.TB, bin string, extra ...string) (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, append([]string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
	}, extra...)...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start redis-server: %w", err)
	}
	var waitErr error // Wait's, read after done
	done := make(chan struct{})
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	stop := func() {
		// Kill fails only when the server has exited already; either
		// way done says when Wait has returned.
		_ = cmd.Process.Kill()
		<-done
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			// out is complete: Wait has returned.
			return "", fmt.Errorf("redis-server on %s exited (%v): %s", addr, waitErr, strings.TrimSpace(out.String()))
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
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	return port, nil
}

// ping sends PING in the inline protocol and expects +PONG (or NOAUTH,
// from a server whose default user is off).
func ping(addr string) (err error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	if err := c.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	// NOAUTH: a server that requires a user answers, and is up.
	if line != "+PONG\r\n" && !strings.HasPrefix(line, "-NOAUTH") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// StartCluster runs a Redis Cluster of masters redis-server processes
// (no replicas) on free loopback ports, joined with
// `redis-cli --cluster create`, and returns its redis+cluster:// URL
// (jobstore.Open). The servers are killed when the test ends.
func StartCluster(t testing.TB, masters int) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH: the tests of the Redis job store need it (apt-get install redis-server)")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: it creates the test cluster (apt-get install redis-server)")
	}
	var addrs []string
	for range masters {
		var addr string
		var last error
		for range 3 {
			bus, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			// The bus port is given (cluster-port): port+10000 may be
			// taken, or past 65535.
			if addr, last = start(t, bin, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000"); last == nil {
				break
			}
		}
		if last != nil {
			t.Fatalf("redistest: %v", last)
		}
		addrs = append(addrs, addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	out, err := exec.Command(cli, append(args, "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	deadline := time.Now().Add(startTimeout)
	for _, addr := range addrs {
		for {
			info, err := command(addr, "CLUSTER INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %s not ok within %v: %q %v", addr, startTimeout, info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	u := "redis+cluster://" + addrs[0]
	for i, a := range addrs[1:] {
		if i == 0 {
			u += "?addr=" + a
		} else {
			u += "&addr=" + a
		}
	}
	return u
}

// command sends an inline command and returns its bulk string reply.
func command(addr, cmd string) (_ string, err error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer func() { err = errors.Join(err, c.Close()) }()
	if err := c.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(head, "$") {
		return "", fmt.Errorf("%s answered %q", cmd, head)
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return "", fmt.Errorf("%s answered %q", cmd, head)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return "", err
	}
	return string(body[:n]), nil
}

// Sentinel is a primary, a replica and one Sentinel watching them as
// "ward", for tests of the store through Sentinel (redis+sentinel://).
type Sentinel struct {
	// URL is the store's: redis+sentinel://<sentinel>?master_name=ward.
	URL string
	// Primary and Replica are the servers' addresses as started.
	Primary, Replica string
	// Admin is the Sentinel's address.
	Admin string
}

// StartSentinel runs a primary, its replica and a Sentinel (redis-server
// --sentinel) that fails over after 1 s of silence. All are killed when
// the test ends.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH: the tests of the Redis job store need it (apt-get install redis-server)")
	}
	primary, err := start(t, bin)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	host, port, _ := net.SplitHostPort(primary)
	replica, err := start(t, bin, "--replicaof", host, port)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	deadline := time.Now().Add(startTimeout)
	for {
		info, _ := command(replica, "INFO replication")
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s did not sync with %s: %q", replica, primary, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sport, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	conf := dir + "/sentinel.conf"
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
		"sentinel monitor ward %s %s 1\nsentinel down-after-milliseconds ward 1000\n"+
		"sentinel failover-timeout ward 5000\nsentinel parallel-syncs ward 1\n", sport, dir, host, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("redistest: start sentinel: %v", err)
	}
	done := make(chan struct{})
	go func() {
		// Ended by the Kill below when the test ends: Wait's error is
		// that kill's.
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // fails only when it has exited already
		<-done
	})
	admin := net.JoinHostPort("127.0.0.1", strconv.Itoa(sport))
	for ping(admin) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: sentinel on %s did not answer: %s", admin, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return &Sentinel{URL: "redis+sentinel://" + admin + "?master_name=ward", Primary: primary, Replica: replica, Admin: admin}
}

// Kill stops the server at addr (started by this package) with SIGKILL,
// by asking it to shut down without saving: as a crash, to the others.
func Kill(t testing.TB, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatalf("redistest: kill %s: %v", addr, err)
	}
	// The server closes the connection as it shuts down: ours only frees
	// the descriptor, and its error would say nothing about the kill.
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte("SHUTDOWN NOSAVE\r\n")); err != nil {
		t.Fatalf("redistest: kill %s: %v", addr, err)
	}
	if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatalf("redistest: kill %s: %v", addr, err)
	}
	// Until the server closes the connection.
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Logf("redistest: kill %s: the server did not close the connection cleanly: %v", addr, err)
	}
}

// Process is a redis-server a test kills and starts again (StartProcess):
// on the same port, in the same directory, with the same arguments, so
// that it reads back what its append-only file holds.
type Process struct {
	Addr string
	t    testing.TB
	bin  string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
	out  *bytes.Buffer
}

// StartProcess is StartArgs for a server the test may Kill and Restart.
// It is stopped when the test ends.
func StartProcess(t testing.TB, args ...string) *Process {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH: the tests of the Redis job store need it (apt-get install redis-server)")
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := &Process{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), t: t, bin: bin,
		args: append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir}, args...)}
	t.Cleanup(p.Kill)
	p.Restart()
	return p
}

// Restart starts the server (again) and waits for it to answer.
func (p *Process) Restart() {
	p.t.Helper()
	p.out = new(bytes.Buffer)
	p.cmd = exec.Command(p.bin, p.args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		p.t.Fatalf("redistest: start redis-server: %v", err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		_ = cmd.Wait() // the exit of a killed server says nothing more
		close(done)
	}(p.cmd, p.done)
	deadline := time.Now().Add(startTimeout)
	for ping(p.Addr) != nil {
		select {
		case <-p.done:
			p.t.Fatalf("redistest: redis-server on %s exited: %s", p.Addr, strings.TrimSpace(p.out.String()))
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("redistest: redis-server on %s did not answer PING within %v", p.Addr, startTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Kill stops the server with SIGKILL (a crash: it writes nothing more)
// and waits for it to exit.
func (p *Process) Kill() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill() // fails only when it exited already
	<-p.done
}
