package config

import (
	"fmt"
	"os"
)

// Config is the service's configuration.
type Config struct {
	Password string `json:"password"`
	APIKey   string `json:"api_key"`
}

const stripeKey = "sk_live_@@xWQ3czyrEvmkXbI8P0GwAESV" // ward:expect stripe-key

const tokenHeader = "X-Auth-Token"

var dbPassword = "Mx4!pQ9vLr2z" // ward:expect hardcoded-secret

const defaultDSN = "postgres://billing:Gq5vN8xLm3Tz@db.internal:5432/billing" // ward:expect connection-string-password

var slackToken = "xoxb-@@40328099707-0134306714587-hPnlnhG2BqxLHmAuMe57l9Ju" // ward:expect slack-token

func dsn(user, pass, host string) string {
	return fmt.Sprintf("postgres://%s:%s@%s/billing", user, pass, host)
}

func load() Config {
	return Config{
		Password: os.Getenv("DB_PASSWORD"),
		APIKey:   os.Getenv("API_KEY"),
	}
}

var errBadPassword = fmt.Errorf("password must be at least %d characters", 12)
