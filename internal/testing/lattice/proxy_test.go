//go:build lattice

package lattice

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// cutProxy is a TCP proxy between one host and one NATS server that can
// cut the path as a network partition does: while cut, what either side
// sends is dropped, and a new connection is accepted and then left
// silent, so neither side hears a close (a NATS client finds out by its
// pings, if at all); heal resets every connection held across the cut
// (TCP gives up on a partition eventually), and new ones flow again.
//
// It is some forty lines of the standard library: Shopify's toxiproxy does
// this and more (latency, bandwidth, slicing) as a second server driven
// over HTTP, but this fault needs a switch on one path, not a toxics
// engine, and the lattice would have to build and drive one more binary
// from a module of its own for it.
type cutProxy struct {
	ln     net.Listener
	target string
	cut    atomic.Bool
	mu     sync.Mutex
	conns  map[net.Conn]bool
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.heal() })
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		held := p.cut.Load()
		p.mu.Unlock()
		if held {
			continue // held, silent, until heal resets it
		}
		go func() {
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			p.track(s)
			go p.pipe(s, c)
			p.pipe(c, s)
		}()
	}
}

func (p *cutProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns[c] = true
	p.mu.Unlock()
}

// pipe copies src to dst, dropping what comes while the path is cut.
func (p *cutProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.cut.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			break
		}
	}
	src.Close()
	dst.Close()
	p.mu.Lock()
	delete(p.conns, src)
	delete(p.conns, dst)
	p.mu.Unlock()
}

// partition cuts the path.
func (p *cutProxy) partition() { p.cut.Store(true) }

// heal resets every connection and lets new ones through.
func (p *cutProxy) heal() {
	p.mu.Lock()
	old := p.conns
	p.conns = map[net.Conn]bool{}
	p.cut.Store(false)
	p.mu.Unlock()
	for c := range old {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // a reset, not a polite close
		}
		c.Close()
	}
}
