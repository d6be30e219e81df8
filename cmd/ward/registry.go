package main

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"strings"

	"github.com/ward-run/ward/internal/modreg"
)

// readTrustedKeys reads ed25519 public keys, one PEM file each.
func readTrustedKeys(paths []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("trusted key: %w", err)
		}
		k, err := modreg.ParsePublicKey(b)
		if err != nil {
			return nil, fmt.Errorf("trusted key %s: %w", p, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// envList splits a comma-separated variable; nil when it is unset or empty.
func envList(key string) []string {
	v := os.Getenv(key)
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}
