package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/policies"
	"github.com/ward-run/ward/safety"
)

// kernel is the stack's safety kernel: the Kernel, its gRPC server, and
// its reloader with its own NATS connection, which watches the policy
// directory and bucket, answers sys.safety.status and carries the decision
// log. The Kernel outlives a stop and a start, as a restarted kernel
// process would load the same policy.
type kernel struct {
	k      *safety.Kernel
	addr   string // the listen address, fixed once first bound
	dir    string
	bucket string
	conn   *bus.Conn

	srv      *safety.Server
	serving  chan error
	reloader *safety.Reloader
}

// startKernel loads the policy (o.PolicyDir, else o.Policies) and serves it.
func startKernel(ctx context.Context, o Options) (*kernel, error) {
	conn, err := bus.Connect(o.NATSURL, "ward-safety")
	if err != nil {
		return nil, err
	}
	kn := &kernel{addr: o.SafetyAddr, dir: o.PolicyDir, bucket: o.PolicyBucket, conn: conn}
	kn.k = safety.NewKernel(safety.Config{Log: safety.PublishDecisions(conn)})
	if o.PolicyDir != "" {
		b, err := safety.ReadBundleDir(o.PolicyDir)
		if err == nil {
			err = kn.k.LoadBundle(ctx, b, "dir "+o.PolicyDir)
		}
		if err != nil {
			conn.Close()
			return nil, err
		}
	} else {
		b, err := safety.ReadBundle(o.Policies)
		if err == nil {
			if o.Policies == fs.FS(policies.FS) {
				err = kn.k.LoadTested(b, "embedded") // its tests ran with Ward's
			} else {
				err = kn.k.LoadBundle(ctx, b, "options")
			}
		}
		if err != nil {
			conn.Close()
			return nil, err
		}
	}
	if err := kn.start(ctx, o); err != nil {
		conn.Close()
		return nil, err
	}
	return kn, nil
}

// start listens on the kernel's address and starts serving and watching.
func (kn *kernel) start(ctx context.Context, o Options) error {
	lis, err := net.Listen("tcp", kn.addr)
	if err != nil {
		return fmt.Errorf("safety kernel: %w", err)
	}
	kn.addr = lis.Addr().String()
	kn.reloader, err = safety.NewReloader(safety.ReloaderConfig{Kernel: kn.k, Dir: kn.dir, Bus: kn.conn,
		Bucket: kn.bucket, Addr: kn.addr, Logger: o.Logger})
	if err == nil {
		err = kn.reloader.Start(ctx)
	}
	if err != nil {
		lis.Close()
		kn.reloader = nil
		return err
	}
	kn.srv = safety.NewServer(kn.k)
	kn.serving = make(chan error, 1)
	go func() { kn.serving <- kn.srv.Serve(lis) }()
	return nil
}

// stop stops serving and watching; the Kernel stays loaded.
func (kn *kernel) stop(ctx context.Context) error {
	var errs []error
	if kn.reloader != nil {
		errs = append(errs, kn.reloader.Shutdown(ctx))
		kn.reloader = nil
	}
	if kn.srv != nil {
		errs = append(errs, kn.srv.Shutdown(ctx), <-kn.serving)
		kn.srv = nil
	}
	return errors.Join(errs...)
}

// close stops the kernel for good.
func (kn *kernel) close(ctx context.Context) error {
	err := kn.stop(ctx)
	kn.conn.Close()
	return err
}

// Kernel returns the stack's safety kernel.
func (s *Stack) Kernel() *safety.Kernel { return s.safety.k }

// SafetyStatus returns the safety kernel's status, nil while it is
// stopped.
func (s *Stack) SafetyStatus() *safetyv1.KernelStatus {
	if r := s.safety.reloader; r != nil {
		return r.Status()
	}
	return nil
}

// StopSafety stops the safety kernel as if its process died: Checks find
// nothing listening. StartSafety brings it back on the same address.
func (s *Stack) StopSafety(ctx context.Context) error { return s.safety.stop(ctx) }

// StartSafety restarts a stopped safety kernel on its address.
func (s *Stack) StartSafety(ctx context.Context) error {
	if s.safety.srv != nil {
		return errors.New("stack: safety kernel already running")
	}
	return s.safety.start(ctx, Options{Logger: s.log})
}
