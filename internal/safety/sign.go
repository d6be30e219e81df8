package safety

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/util"
)

// SignaturesFile is the file of a signed bundle that holds its signature,
// named and written as OPA's `opa sign` names and writes it: a JSON object
// {"signatures": [JWT]}, the JWT's "files" claim listing every file of the
// bundle with its SHA-256.
const SignaturesFile = ".signatures.json"

// ErrBundleSignature is wrapped by VerifyBundle's errors: the bundle is not
// signed, its signature does not verify with the key, or the files it
// covers are not the bundle's.
var ErrBundleSignature = errors.New("bundle signature")

// The signature algorithms of the two kinds of key Ward signs with, as JWS
// (and OPA's SigningConfig and KeyConfig) name them.
const (
	algEdDSA = "EdDSA" // ed25519, what GeneratePolicyKey makes
	algES256 = "ES256" // ECDSA on P-256
)

// The PEM block types of the two key files.
const (
	pemPrivateKey = "PRIVATE KEY" // PKCS #8
	pemPublicKey  = "PUBLIC KEY"  // PKIX
)

// hashAlg is the hash each file is signed by, OPA's default.
const hashAlg = opabundle.SHA256

// PolicySigningKey signs policy bundles (Bundle.Sign, Push). It is an
// ed25519 key (EdDSA), or an ECDSA P-256 key (ES256).
type PolicySigningKey struct {
	pem string // PKCS #8 PEM, as OPA's SigningConfig reads it
	pub *PolicyPublicKey
}

// PolicyPublicKey verifies policy bundles (VerifyBundle,
// ReloaderConfig.VerifyKey): the public half of a PolicySigningKey.
type PolicyPublicKey struct {
	pem string // PKIX PEM, as OPA's KeyConfig reads it
	alg string
	id  string
}

// ID names the key: the first 16 hex digits of a SHA-256 over its public
// half (PKIX DER). A bundle's signature carries the id of the key that
// made it, which a refusal reports.
func (k *PolicyPublicKey) ID() string { return k.id }

// Algorithm is the key's JWS signature algorithm: EdDSA or ES256.
func (k *PolicyPublicKey) Algorithm() string { return k.alg }

// PEM is the key as a PEM "PUBLIC KEY" block (PKIX).
func (k *PolicyPublicKey) PEM() []byte { return []byte(k.pem) }

// Public is the key that verifies the bundles k signs.
func (k *PolicySigningKey) Public() *PolicyPublicKey { return k.pub }

// ID is the id of k's public half (PolicyPublicKey.ID).
func (k *PolicySigningKey) ID() string { return k.pub.id }

// GeneratePolicyKey makes a new ed25519 key pair for signing policy
// bundles: the private key as a PEM "PRIVATE KEY" block (PKCS #8), for
// `ward policy push --signing-key`, and the public key as a PEM "PUBLIC
// KEY" block (PKIX), for `ward safety --policy-pubkey`.
func GeneratePolicyKey() (privPEM, pubPEM []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("safety: generate policy key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("safety: generate policy key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, fmt.Errorf("safety: generate policy key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: pubDER}), nil
}

// ParsePolicySigningKey reads a private key in PEM: a "PRIVATE KEY" block
// (PKCS #8) holding an ed25519 or ECDSA P-256 key, or an "EC PRIVATE KEY"
// block (SEC 1) holding a P-256 key.
func ParsePolicySigningKey(data []byte) (*PolicySigningKey, error) {
	block, err := onePEMBlock(data)
	if err != nil {
		return nil, fmt.Errorf("safety: policy signing key: %w", err)
	}
	var key any
	switch block.Type {
	case pemPrivateKey:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("safety: policy signing key: a PEM %q block, want %q", block.Type, pemPrivateKey)
	}
	if err != nil {
		return nil, fmt.Errorf("safety: policy signing key: %w", err)
	}
	var pub any
	switch k := key.(type) {
	case ed25519.PrivateKey:
		pub = k.Public()
	case *ecdsa.PrivateKey:
		pub = k.Public()
	default:
		return nil, fmt.Errorf("safety: policy signing key: a %T, want an ed25519 or ECDSA P-256 key", key)
	}
	p, err := newPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("safety: policy signing key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("safety: policy signing key: %w", err)
	}
	return &PolicySigningKey{pem: string(pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der})), pub: p}, nil
}

// ParsePolicyPublicKey reads a public key in PEM: a "PUBLIC KEY" block
// (PKIX) holding an ed25519 or ECDSA P-256 key.
func ParsePolicyPublicKey(data []byte) (*PolicyPublicKey, error) {
	block, err := onePEMBlock(data)
	if err != nil {
		return nil, fmt.Errorf("safety: policy public key: %w", err)
	}
	if block.Type != pemPublicKey {
		return nil, fmt.Errorf("safety: policy public key: a PEM %q block, want %q", block.Type, pemPublicKey)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("safety: policy public key: %w", err)
	}
	k, err := newPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("safety: policy public key: %w", err)
	}
	return k, nil
}

// LoadPolicySigningKey reads the private key file path (ParsePolicySigningKey).
func LoadPolicySigningKey(path string) (*PolicySigningKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safety: policy signing key: %w", err)
	}
	k, err := ParsePolicySigningKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return k, nil
}

// LoadPolicyPublicKey reads the public key file path (ParsePolicyPublicKey).
func LoadPolicyPublicKey(path string) (*PolicyPublicKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safety: policy public key: %w", err)
	}
	k, err := ParsePolicyPublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, path)
	}
	return k, nil
}

// onePEMBlock decodes the PEM block in data, which must hold nothing else.
func onePEMBlock(data []byte) (*pem.Block, error) {
	block, rest := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	if len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("more than one PEM block")
	}
	if len(block.Headers) > 0 {
		return nil, errors.New("PEM headers (an encrypted key?) are not supported")
	}
	return block, nil
}

// newPublicKey makes the PolicyPublicKey of pub.
func newPublicKey(pub any) (*PolicyPublicKey, error) {
	var alg string
	switch k := pub.(type) {
	case ed25519.PublicKey:
		alg = algEdDSA
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("an ECDSA key on %s, want P-256", k.Curve.Params().Name)
		}
		alg = algES256
	default:
		return nil, fmt.Errorf("a %T, want an ed25519 or ECDSA P-256 key", pub)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(der)
	return &PolicyPublicKey{
		pem: string(pem.EncodeToMemory(&pem.Block{Type: pemPublicKey, Bytes: der})),
		alg: alg,
		id:  hex.EncodeToString(sum[:8]),
	}, nil
}

// Sign returns b signed with key, as `opa sign` signs a bundle directory:
// its Signatures hold a .signatures.json whose one JWT lists every file of
// b (the tests and the data file included) with its SHA-256, a structured
// file (data.json, data.yaml) hashed by its content as OPA hashes it. A
// signature b had is replaced; b itself is not modified.
func (b *Bundle) Sign(key *PolicySigningKey) (*Bundle, error) {
	h, err := opabundle.NewSignatureHasher(hashAlg)
	if err != nil {
		return nil, fmt.Errorf("safety: sign: %w", err)
	}
	files := make([]opabundle.FileInfo, 0, len(b.Files))
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		var v any = b.Files[name]
		if opabundle.IsStructuredDoc(name) {
			if err := util.Unmarshal(b.Files[name], &v); err != nil {
				return nil, fmt.Errorf("safety: sign %s: %w", name, err)
			}
		}
		sum, err := h.HashFile(v)
		if err != nil {
			return nil, fmt.Errorf("safety: sign %s: %w", name, err)
		}
		files = append(files, opabundle.NewFile(name, hex.EncodeToString(sum), string(hashAlg)))
	}
	sc := &opabundle.SigningConfig{Key: key.pem, Algorithm: key.pub.alg}
	token, err := opabundle.GenerateSignedToken(files, sc, key.ID())
	if err != nil {
		return nil, fmt.Errorf("safety: sign: %w", err)
	}
	sigs, err := json.MarshalIndent(opabundle.SignaturesConfig{Signatures: []string{token}}, "", " ")
	if err != nil {
		return nil, fmt.Errorf("safety: sign: %w", err)
	}
	return &Bundle{Files: b.Files, Signatures: sigs}, nil
}

// VerifyBundle checks that b carries a signature made with key's private
// half that covers exactly b's files, with OPA's bundle verification (as
// `opa run` checks a bundle with a verification key): one JWT in
// .signatures.json, its signature valid for key, every file of b listed
// with its hash, and no file listed that b lacks. Its errors wrap
// ErrBundleSignature.
func VerifyBundle(b *Bundle, key *PolicyPublicKey) error {
	if len(b.Signatures) == 0 {
		return fmt.Errorf("safety: %w: the bundle is not signed (no %s)", ErrBundleSignature, SignaturesFile)
	}
	var sc opabundle.SignaturesConfig
	if err := util.UnmarshalJSON(b.Signatures, &sc); err != nil {
		return fmt.Errorf("safety: %w: %s: %w", ErrBundleSignature, SignaturesFile, err)
	}
	if sc.Plugin != "" {
		// A verifier registered with OPA under that name would decide.
		return fmt.Errorf("safety: %w: %s names the signature plugin %q; only OPA's default signature is accepted",
			ErrBundleSignature, SignaturesFile, sc.Plugin)
	}
	vc := opabundle.NewVerificationConfig(map[string]*opabundle.KeyConfig{
		key.id: {Key: key.pem, Algorithm: key.alg},
	}, key.id, "", nil)
	signed, err := opabundle.VerifyBundleSignature(sc, vc)
	if err != nil {
		if kid := signingKeyID(sc); kid != "" && kid != key.id {
			return fmt.Errorf("safety: %w: signed with key %s, this kernel trusts key %s: %w", ErrBundleSignature, kid, key.id, err)
		}
		return fmt.Errorf("safety: %w: %w", ErrBundleSignature, err)
	}
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		// VerifyBundleFile deletes each file it verified from signed.
		if err := opabundle.VerifyBundleFile(name, *bytes.NewBuffer(b.Files[name]), signed); err != nil {
			return fmt.Errorf("safety: %w: %w", ErrBundleSignature, err)
		}
	}
	if len(signed) > 0 {
		return fmt.Errorf("safety: %w: signed files missing from the bundle: %s", ErrBundleSignature,
			strings.Join(slices.Sorted(maps.Keys(signed)), ", "))
	}
	return nil
}

// signingKeyID is the key id the JWT in sc claims to be signed with (its
// header's kid), for an error message; "" when there is none. It is not
// trusted for anything else.
func signingKeyID(sc opabundle.SignaturesConfig) string {
	if len(sc.Signatures) != 1 {
		return ""
	}
	hdr, _, _ := strings.Cut(sc.Signatures[0], ".")
	bs, err := base64.RawURLEncoding.DecodeString(hdr)
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if json.Unmarshal(bs, &h) != nil || len(h.Kid) > 64 || strings.ContainsFunc(h.Kid, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '_')
	}) {
		return "" // not a key id Ward wrote: not worth showing
	}
	return h.Kid
}
