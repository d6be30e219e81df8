package gateway

import (
	"context"
	"errors"
	"fmt"

	"github.com/ward-run/ward/internal/apikey"
)

// APIKeys is the Authenticator of the keys in s (`ward auth key add`).
// Its errors wrap ErrUnauthenticated and the store's (apikey.ErrUnknown,
// apikey.ErrRevoked, apikey.ErrTenantRevoked, ...), which the metric of
// failures is labelled by.
func APIKeys(s *apikey.Store) Authenticator {
	return AuthFunc(func(ctx context.Context, token string) (Principal, error) {
		rec, err := s.Verify(ctx, token)
		if err != nil {
			for _, e := range []error{apikey.ErrMalformed, apikey.ErrUnknown, apikey.ErrRevoked, apikey.ErrExpired} {
				if errors.Is(err, e) {
					return Principal{}, fmt.Errorf("%w: %w", ErrUnauthenticated, err)
				}
			}
			return Principal{}, err
		}
		p := Principal{KeyID: rec.ID, Name: rec.Name, Tenant: rec.Tenant}
		for _, sc := range rec.Scopes {
			p.Scopes = append(p.Scopes, string(sc))
		}
		return p, nil
	})
}
