package scheduler

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/modreg"
)

var (
	adminRefused = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "ward_scheduler_admin_requests_refused_total",
		Help: "Admin requests (mode change, DLQ retry and drop, a cancel for every tenant) refused because they carried no valid signed admin credential, by subject.",
	}, []string{"subject"})
	auditFailures = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_scheduler_audit_failures_total",
		Help: "Admin actions this replica carried out whose audit record could not be written (logged).",
	})
)

// admins identifies the admin credentials that sign admin requests
// (Config.AdminTrust) and records the admin actions carried out in the
// audit log (Config.Audit): the scheduler, the cancels (an admin's of any
// tenant's job), the workflow runs (a cancel for every tenant) and the
// read side (a DLQ drop) share one.
type admins struct {
	trust *auth.AdminTrust    // nil: --insecure
	audit jetstream.JetStream // nil: no audit log
	log   *slog.Logger
}

// of identifies the admin credential that signed msg, an admin's
// request (auth.AdminTrust): the actor its audit record names. An admin
// subject is one only admins may publish on, but NATS does not tell a
// subscriber who published, so the request carries its signed credential;
// one that does not, or whose signature does not verify, is refused. With
// no AdminTrust (--insecure) nothing tells admins apart: "insecure".
func (a *admins) of(msg *nats.Msg) (string, error) {
	if a.trust == nil {
		return "insecure", nil
	}
	id, err := a.trust.Verify(msg.Subject, msg.Header, msg.Data, time.Now())
	if err != nil {
		adminRefused.WithLabelValues(msg.Subject).Inc()
		a.log.Warn("admin request refused", "subject", msg.Subject, "code", reason.Unauthenticated, "why", err)
		return "", err
	}
	return id.Actor(), nil
}

// record writes an admin action this replica carried out to the audit
// log. The action is done: a failure is logged and counted.
func (a *admins) record(ctx context.Context, e audit.Entry) {
	if a.audit == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := audit.Record(ctx, a.audit, e); err != nil {
		auditFailures.Inc()
		a.log.Warn("audit record not written", "action", e.Action, "target", e.Target, "actor", e.Actor, "err", err)
	}
}

// followModules applies the registry's state, and audits the changes of
// a module's active record it brings (not the state Follow starts with):
// a deploy, a rollback, a retirement. Every replica records the same
// entry (its time is the record's, its actor the one the record claims),
// and the audit log stores identical entries once (audit.Record's message
// id), so one record is kept whichever replicas hear the change.
func (s *Scheduler) followModules(st *modreg.State) {
	s.conf.follow(st)
	prev := s.modsSeen
	s.modsSeen = st.Actives
	if prev == nil {
		return
	}
	for name, a := range st.Actives {
		old := prev[name]
		if old != nil && old.UpdatedAt.Equal(a.UpdatedAt) {
			continue
		}
		action := audit.ModuleDeploy
		switch {
		case a.Retired:
			if old != nil && old.Retired {
				continue
			}
			action = audit.ModuleRm
		case old != nil && len(a.History) < len(old.History):
			action = audit.ModuleRollback
		}
		detail := map[string]string{"version": a.Version, "digest": a.Digest, "recorded_by": "scheduler"}
		if action != audit.ModuleRm {
			detail["signed"] = boolString(a.Signed)
		}
		s.admin.record(context.Background(), audit.Entry{At: a.UpdatedAt, Actor: audit.Claimed(a.By), Action: action, Target: name, Detail: detail})
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
