package modreg

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// ErrSignature: a module is unsigned, or signed by no trusted key.
var ErrSignature = errors.New("modreg: signature")

// Sign signs a module digest ("sha256:<hex>") with key.
func Sign(key ed25519.PrivateKey, digest string) []byte {
	return ed25519.Sign(key, []byte(digest))
}

// Verify checks sig over digest against each trusted key.
func Verify(trusted []ed25519.PublicKey, digest string, sig []byte) error {
	if len(sig) == 0 {
		return fmt.Errorf("%w: module %s is unsigned", ErrSignature, digest)
	}
	for _, k := range trusted {
		if ed25519.Verify(k, []byte(digest), sig) {
			return nil
		}
	}
	return fmt.Errorf("%w: module %s is not signed by a trusted key", ErrSignature, digest)
}

// GenerateKey returns a new key pair as PEM (PKCS #8 private, PKIX public).
func GenerateKey() (private, public []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	p8, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}), nil
}

// ParsePrivateKey reads a PEM PKCS #8 ed25519 private key.
func ParsePrivateKey(data []byte) (ed25519.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("modreg: no PEM block in private key")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("modreg: private key: %w", err)
	}
	ek, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("modreg: private key is %T, not ed25519", k)
	}
	return ek, nil
}

// ParsePublicKey reads a PEM PKIX ed25519 public key.
func ParsePublicKey(data []byte) (ed25519.PublicKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("modreg: no PEM block in public key")
	}
	k, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("modreg: public key: %w", err)
	}
	ek, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("modreg: public key is %T, not ed25519", k)
	}
	return ek, nil
}
