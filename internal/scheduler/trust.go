package scheduler

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
)

// admitHost checks a heartbeat against the bus and the host's credential.
// The worker id must be the subject's. With HostTrust set, the heartbeat
// must carry a credential issued for that host; pools the credential does
// not allow are taken out of the heartbeat, and so are GPU claims
// (capabilities gpu and gpu:*, type gpu) when it does not allow GPUs. A
// refused heartbeat is logged and counted, and the host stays unknown.
func (f *fleet) admitHost(subject string, hb *wardv1.Heartbeat) bool {
	id := bus.WorkerOf(subject)
	refuse := func(why string) bool {
		reportsRefused.WithLabelValues("heartbeat", string(reason.HostNotAdmitted)).Inc()
		f.log.Warn("heartbeat refused", "worker_id", id, "code", reason.HostNotAdmitted, "why", why)
		return false
	}
	if hb.GetWorkerId() != id {
		return refuse("it names worker " + hb.GetWorkerId())
	}
	if f.trust == nil {
		return true
	}
	ident, err := f.trust.Admit(hb.GetCredential(), id, time.Now())
	if err != nil {
		return refuse(err.Error())
	}
	var dropped []string
	keep := func(p string) bool {
		if ident.AllowsPool(p) {
			return true
		}
		dropped = append(dropped, p)
		return false
	}
	if hb.Pool != "" && !keep(hb.Pool) {
		hb.Pool = ""
	}
	hb.Pools = slices.DeleteFunc(hb.Pools, func(p string) bool { return !keep(p) })
	if !ident.GPU {
		hb.Capabilities = slices.DeleteFunc(hb.Capabilities, func(c string) bool {
			if c == "gpu" || strings.HasPrefix(c, "gpu:") {
				dropped = append(dropped, c)
				return true
			}
			return false
		})
		if hb.Type == "gpu" {
			hb.Type = "cpu"
		}
		hb.GpuUtilization = 0
	}
	if len(dropped) > 0 {
		reportsRefused.WithLabelValues("heartbeat_claims", string(reason.HostNotAdmitted)).Inc()
		f.log.Debug("heartbeat claims its credential does not allow dropped", "worker_id", id, "dropped", dropped)
	}
	return true
}

// owner is who runs a dispatched job: its tenant, worker and attempt.
type owner struct {
	tenant, worker string
	attempt        int
}

// owners remembers the owner of the jobs a replica dispatched (and of
// others' whose progress it forwarded), so that forwarding a streamed
// chunk reads nothing from the store. An entry goes when its job ends here;
// the map is emptied when it grows past ownersMax (jobs that ended on other
// replicas), and a miss reads the store again.
type owners struct {
	mu sync.Mutex
	m  map[string]owner
}

const ownersMax = 100_000

func (o *owners) set(id string, v owner) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil || len(o.m) >= ownersMax {
		o.m = make(map[string]owner)
	}
	o.m[id] = v
}

func (o *owners) get(id string) (owner, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	v, ok := o.m[id]
	return v, ok
}

func (o *owners) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, id)
}
