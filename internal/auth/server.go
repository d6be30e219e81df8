package auth

import (
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
)

// Apply makes a NATS server's options trust k: operator mode, the system
// account, and a memory resolver holding the accounts. The embedded server
// of `ward dev` and the tests' servers use it; a separate nats-server reads
// the same from Authority.ServerConfig.
func (k ServerKeys) Apply(o *server.Options) error {
	oc, err := jwt.DecodeOperatorClaims(k.OperatorJWT)
	if err != nil {
		return fmt.Errorf("auth: operator: %w", err)
	}
	res := &server.MemAccResolver{}
	for key, tok := range k.Accounts {
		if err := res.Store(key, tok); err != nil {
			return err
		}
	}
	o.TrustedOperators = []*jwt.OperatorClaims{oc}
	o.SystemAccount = k.SystemAccount
	o.AccountResolver = res
	return nil
}
