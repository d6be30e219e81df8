package client

import (
	"crypto/tls"
	"flag"
)

var insecure = flag.Bool("insecure", false, "skip certificate checks (tests only)")

func config() *tls.Config {
	return &tls.Config{InsecureSkipVerify: *insecure}
}
