package apikey

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ward-run/ward/internal/auth"
)

// tenantKeyPrefix starts a tenant's mark in the bucket: tenant.<name>.
// A key's id never holds a dot, so the two cannot meet.
const tenantKeyPrefix = "tenant."

// TenantRevocation is a tenant's mark in the bucket (tenant.<name>),
// written by RevokeTenant: while it stands, every replica refuses every
// key of the tenant (Verify: ErrRevoked and ErrTenantRevoked), whatever
// the key's own record says, and Add refuses new ones. ReinstateTenant
// lifts it; the record stays, with when and by whom.
type TenantRevocation struct {
	Tenant    string    `json:"tenant"`
	RevokedAt time.Time `json:"revoked_at"`
	RevokedBy string    `json:"revoked_by,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	// ReinstatedAt is zero while the tenant stands revoked.
	ReinstatedAt time.Time `json:"reinstated_at,omitzero"`
	ReinstatedBy string    `json:"reinstated_by,omitempty"`
}

// Revoked reports whether the mark stands (not reinstated).
func (t TenantRevocation) Revoked() bool { return t.ReinstatedAt.IsZero() }

// tenantEntry is a tenant's mark in the store's memory.
type tenantEntry struct {
	rec TenantRevocation
	rev uint64
	// gone: no mark in force (deleted, purged, or reinstated).
	gone bool
}

// applyTenant puts a tenant's mark in memory, unless a newer revision of
// it is there already. A mark that does not decode stands: the tenant's
// keys are refused rather than let through.
func (s *Store) applyTenant(tenant string, op jetstream.KeyValueOp, value []byte, rev uint64) {
	e := &tenantEntry{rev: rev, gone: op != jetstream.KeyValuePut}
	if !e.gone {
		if err := json.Unmarshal(value, &e.rec); err != nil || e.rec.Tenant != tenant {
			e.rec = TenantRevocation{Tenant: tenant}
		}
		e.gone = !e.rec.Revoked()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.tenants[tenant]; ok && cur.rev >= rev {
		return
	}
	s.tenants[tenant] = e
}

// TenantRevoked reports whether tenant stands revoked, and its mark, from
// memory.
func (s *Store) TenantRevoked(tenant string) (TenantRevocation, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.tenants[tenant]
	if !ok || e.gone {
		return TenantRevocation{}, false
	}
	return e.rec, true
}

// RevokeTenant revokes tenant's API keys, as `ward auth tenant revoke`
// does: first it marks the tenant revoked in the bucket (every replica's
// watch delivers the mark, and from then on Verify refuses every key of
// the tenant and Add refuses new ones), then it revokes each of the
// tenant's keys not revoked yet, recording by and the reason ("tenant
// <name> revoked: <reason>"), so that `ward auth key ls` shows them
// revoked. It returns the mark (the first one, when the tenant stood
// revoked already) and the keys it revoked now. Run again, it revokes
// what it missed.
func (s *Store) RevokeTenant(ctx context.Context, tenant, by, reason string) (TenantRevocation, []Record, error) {
	if err := s.checkTenantArgs(tenant, by, reason); err != nil {
		return TenantRevocation{}, nil, err
	}
	key := tenantKeyPrefix + tenant
	var tr TenantRevocation
	for {
		cur, err := s.kv.Get(ctx, key)
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return TenantRevocation{}, nil, fmt.Errorf("apikey: revoke tenant %s: %w", tenant, err)
		}
		if err == nil && json.Unmarshal(cur.Value(), &tr) == nil && tr.Tenant == tenant && tr.Revoked() {
			s.apply(key, cur.Operation(), cur.Value(), cur.Revision())
			break // revoked already: the first mark stands
		}
		tr = TenantRevocation{Tenant: tenant, RevokedAt: s.now().UTC(), RevokedBy: by, Reason: reason}
		b, err := json.Marshal(tr)
		if err != nil {
			return TenantRevocation{}, nil, err
		}
		var rev uint64
		if cur == nil {
			rev, err = s.kv.Create(ctx, key, b)
		} else {
			rev, err = s.kv.Update(ctx, key, b, cur.Revision())
		}
		if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue // written meanwhile: read it again
		}
		if err != nil {
			return TenantRevocation{}, nil, fmt.Errorf("apikey: revoke tenant %s: %w", tenant, err)
		}
		s.apply(key, jetstream.KeyValuePut, b, rev)
		break
	}
	why := "tenant " + tenant + " revoked"
	if tr.Reason != "" {
		why += ": " + tr.Reason
	}
	revoked, err := s.revokeAll(ctx, tenant, by, why)
	return tr, revoked, err
}

// ReinstateTenant lifts tenant's mark (`ward auth tenant add` of a
// tenant revoked before): Add takes keys for it again. Its keys stay
// revoked: any that are not yet (added on a replica the mark had not
// reached) are revoked first. It reports whether the tenant stood
// revoked, and the keys it revoked.
func (s *Store) ReinstateTenant(ctx context.Context, tenant, by string) (bool, []Record, error) {
	if err := s.checkTenantArgs(tenant, by, ""); err != nil {
		return false, nil, err
	}
	key := tenantKeyPrefix + tenant
	for {
		cur, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return false, nil, nil
		}
		if err != nil {
			return false, nil, fmt.Errorf("apikey: reinstate tenant %s: %w", tenant, err)
		}
		var tr TenantRevocation
		if json.Unmarshal(cur.Value(), &tr) != nil || tr.Tenant != tenant {
			tr = TenantRevocation{Tenant: tenant}
		} else if !tr.Revoked() {
			s.apply(key, cur.Operation(), cur.Value(), cur.Revision())
			return false, nil, nil
		}
		revoked, err := s.revokeAll(ctx, tenant, by, "tenant "+tenant+" revoked (the key was added as it was being revoked)")
		if err != nil {
			return true, revoked, err
		}
		tr.ReinstatedAt, tr.ReinstatedBy = s.now().UTC(), by
		b, err := json.Marshal(tr)
		if err != nil {
			return true, revoked, err
		}
		rev, err := s.kv.Update(ctx, key, b, cur.Revision())
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return true, revoked, fmt.Errorf("apikey: reinstate tenant %s: %w", tenant, err)
		}
		s.apply(key, jetstream.KeyValuePut, b, rev)
		return true, revoked, nil
	}
}

// revokeAll revokes every key of tenant not revoked yet, with reason why.
func (s *Store) revokeAll(ctx context.Context, tenant, by, why string) ([]Record, error) {
	if len(why) > MaxReasonLen {
		why = strings.ToValidUTF8(why[:MaxReasonLen], "")
	}
	recs, err := s.List(ctx, tenant)
	if err != nil {
		return nil, err
	}
	var revoked []Record
	var errs []error
	for _, rec := range recs {
		if rec.Revoked() {
			continue
		}
		r, err := s.revoke(ctx, rec.ID, by, why)
		switch {
		case errors.Is(err, ErrRevoked): // revoked meanwhile
		case err != nil:
			errs = append(errs, err)
		default:
			revoked = append(revoked, r)
		}
	}
	return revoked, errors.Join(errs...)
}

func (s *Store) checkTenantArgs(tenant, by, reason string) error {
	if err := s.closed(); err != nil {
		return err
	}
	if err := auth.ValidName("tenant", tenant); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := checkText("revoked by", by); err != nil {
		return err
	}
	return checkTextLen("reason", reason, MaxReasonLen)
}
