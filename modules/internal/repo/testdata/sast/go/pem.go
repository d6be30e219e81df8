package keys

import "strings"

const rsaHeader = "-----BEGIN RSA PRIVATE KEY-----"

// isPrivate reports whether a PEM block holds a private key.
func isPrivate(block string) bool {
	return strings.HasPrefix(block, rsaHeader) || strings.Contains(block, "PRIVATE KEY-----")
}
