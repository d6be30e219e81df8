package safety

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	opabundle "github.com/open-policy-agent/opa/v1/bundle"

	"github.com/ward-run/ward/policies"
)

// newPolicyKey makes a key pair for a test.
func newPolicyKey(t testing.TB) (*PolicySigningKey, *PolicyPublicKey) {
	t.Helper()
	priv, pub, err := GeneratePolicyKey()
	if err != nil {
		t.Fatal(err)
	}
	sk, err := ParsePolicySigningKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := ParsePolicyPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	if sk.ID() != pk.ID() || sk.Public().ID() != pk.ID() || string(sk.Public().PEM()) != string(pub) {
		t.Fatalf("the two halves disagree: %s, %s", sk.ID(), pk.ID())
	}
	return sk, pk
}

// defaultBundle is the default bundle, its tests included.
func defaultBundle(t testing.TB) *Bundle {
	t.Helper()
	b, err := ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withFiles is b with its files changed by edit (an empty value deletes the
// file), its signature kept: what someone who can write the bucket could
// make of a signed bundle.
func withFiles(b *Bundle, edit map[string]string) *Bundle {
	files := maps.Clone(b.Files)
	for name, data := range edit {
		if data == "" {
			delete(files, name)
		} else {
			files[name] = []byte(data)
		}
	}
	return &Bundle{Files: files, Signatures: b.Signatures}
}

func TestSignAndVerifyBundle(t *testing.T) {
	sk, pk := newPolicyKey(t)
	_, otherPub := newPolicyKey(t)
	b := defaultBundle(t)
	signed, err := b.Sign(sk)
	if err != nil {
		t.Fatal(err)
	}
	if pk.Algorithm() != "EdDSA" {
		t.Errorf("algorithm %s, want EdDSA", pk.Algorithm())
	}
	// The legitimate path: the same checks pass a bundle signed as it is.
	if err := VerifyBundle(signed, pk); err != nil {
		t.Fatalf("VerifyBundle(signed) = %v", err)
	}
	if b.Signatures != nil || signed.Revision() != b.Revision() {
		t.Errorf("Sign changed b, or the revision: %s, %s", signed.Revision(), b.Revision())
	}
	// The signature lists every file, tests and data included.
	var sc opabundle.SignaturesConfig
	if err := json.Unmarshal(signed.Signatures, &sc); err != nil || len(sc.Signatures) != 1 {
		t.Fatalf("%s: %s, %v", SignaturesFile, signed.Signatures, err)
	}

	ward := string(b.Files["ward.rego"])
	data := string(b.Files["data.yaml"])
	for _, tc := range []struct {
		name string
		b    *Bundle
		key  *PolicyPublicKey
		want string
	}{
		{"unsigned", b, pk, "not signed"},
		{"empty signatures file", &Bundle{Files: b.Files, Signatures: []byte{}}, pk, "not signed"},
		{"another key", signed, otherPub, "signed with key " + pk.ID() + ", this kernel trusts key " + otherPub.ID()},
		{"a rule altered after signing", withFiles(signed, map[string]string{"ward.rego": ward + "\nallow_all := true\n"}), pk,
			"ward.rego: digest mismatch"},
		{"a test altered after signing", withFiles(signed, map[string]string{"ward_test.rego": "package ward.safety_test\n"}), pk,
			"ward_test.rego: digest mismatch"},
		{"the data altered after signing", withFiles(signed, map[string]string{"data.yaml": data + "\nextra: 1\n"}), pk,
			"data.yaml: digest mismatch"},
		{"a file added after signing", withFiles(signed, map[string]string{"allow.rego": "package ward.safety\n"}), pk,
			"file allow.rego not included in bundle signature"},
		{"a file removed after signing", withFiles(signed, map[string]string{"ward_test.rego": ""}), pk,
			"signed files missing from the bundle: ward_test.rego"},
		{"not JSON", &Bundle{Files: b.Files, Signatures: []byte("{")}, pk, SignaturesFile},
		{"no JWT", &Bundle{Files: b.Files, Signatures: []byte(`{"signatures": []}`)}, pk, "missing JWT"},
		{"two JWTs", &Bundle{Files: b.Files, Signatures: []byte(`{"signatures": ["` + sc.Signatures[0] + `", "` + sc.Signatures[0] + `"]}`)}, pk,
			"multiple JWTs"},
		{"a plugin", &Bundle{Files: b.Files, Signatures: []byte(`{"signatures": ["` + sc.Signatures[0] + `"], "plugin": "mine"}`)}, pk,
			`signature plugin "mine"`},
		{"a forged JWT", &Bundle{Files: b.Files, Signatures: []byte(`{"signatures": ["` + forge(t, sc.Signatures[0]) + `"]}`)}, pk,
			"failed to verify JWT signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := VerifyBundle(tc.b, tc.key)
			if !errors.Is(err, ErrBundleSignature) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("VerifyBundle = %v, want ErrBundleSignature saying %q", err, tc.want)
			}
		})
	}

	// data.yaml is hashed by its content, as OPA hashes it: a comment or
	// another layout of the same document still verifies.
	same := withFiles(signed, map[string]string{"data.yaml": "# reformatted\n" + data})
	if err := VerifyBundle(same, pk); err != nil {
		t.Errorf("VerifyBundle(data.yaml with a comment) = %v", err)
	}
}

// forge is the JWT tok with its payload's files claim emptied and the
// signature kept.
func forge(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("JWT %q", tok)
	}
	parts[1] = "eyJmaWxlcyI6W119" // {"files":[]}
	return strings.Join(parts, ".")
}

// TestSignedBundleVerifiesWithOPA: a bundle Ward signs is a signed OPA
// bundle: OPA's own bundle reader, with the public key as its
// verification key, reads it as a directory, and refuses it once a file
// changed.
func TestSignedBundleVerifiesWithOPA(t *testing.T) {
	sk, pk := newPolicyKey(t)
	signed, err := defaultBundle(t).Sign(sk)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range signed.Proto().GetFiles() {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() error {
		vc := opabundle.NewVerificationConfig(map[string]*opabundle.KeyConfig{
			"ward": {Key: string(pk.PEM()), Algorithm: pk.Algorithm()},
		}, "ward", "", nil)
		loader := opabundle.NewDirectoryLoader(dir)
		_, err := opabundle.NewCustomReader(loader).WithBundleVerificationConfig(vc).Read()
		return err
	}
	if err := read(); err != nil {
		t.Fatalf("OPA's reader refused the signed bundle: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ward.rego"), append(signed.Files["ward.rego"], "\nx := 1\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Errorf("OPA's reader on an altered file: %v, want a digest mismatch", err)
	}
}

func TestSignedBundleProto(t *testing.T) {
	sk, pk := newPolicyKey(t)
	signed, err := defaultBundle(t).Sign(sk)
	if err != nil {
		t.Fatal(err)
	}
	pb := signed.Proto()
	if string(pb.GetFiles()[SignaturesFile]) != string(signed.Signatures) || pb.GetRevision() != signed.Revision() {
		t.Fatalf("Proto: %s missing, or revision %s", SignaturesFile, pb.GetRevision())
	}
	back, err := BundleFromProto(pb)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := back.Files[SignaturesFile]; ok || string(back.Signatures) != string(signed.Signatures) {
		t.Errorf("BundleFromProto kept %s among the files, or lost it", SignaturesFile)
	}
	if err := VerifyBundle(back, pk); err != nil {
		t.Errorf("VerifyBundle after the round trip: %v", err)
	}
	// A signatures file elsewhere is not a bundle file.
	pb.Files["lib/"+SignaturesFile] = signed.Signatures
	if _, err := BundleFromProto(pb); !errors.Is(err, errBundleFile) {
		t.Errorf("BundleFromProto(lib/%s) = %v, want errBundleFile", SignaturesFile, err)
	}
}

// TestPolicyKeyForms: ECDSA P-256 keys sign as ES256, in PKCS #8 or SEC 1
// PEM; other keys and files are refused.
func TestPolicyKeyForms(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(ec)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	pkix, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	pub, err := ParsePolicyPublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}))
	if err != nil || pub.Algorithm() != "ES256" {
		t.Fatalf("ParsePolicyPublicKey(P-256) = %v, %v", pub, err)
	}
	for _, block := range []*pem.Block{{Type: "PRIVATE KEY", Bytes: pkcs8}, {Type: "EC PRIVATE KEY", Bytes: sec1}} {
		sk, err := ParsePolicySigningKey(pem.EncodeToMemory(block))
		if err != nil {
			t.Fatalf("%s: %v", block.Type, err)
		}
		signed, err := defaultBundle(t).Sign(sk)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyBundle(signed, pub); err != nil || sk.ID() != pub.ID() {
			t.Errorf("%s: VerifyBundle = %v (ids %s, %s)", block.Type, err, sk.ID(), pub.ID())
		}
	}

	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalPKCS8PrivateKey(p384)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	priv, pubPEM, _ := GeneratePolicyKey()
	for name, data := range map[string][]byte{
		"P-384":          pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p384DER}),
		"RSA":            pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: rsaDER}),
		"a public key":   pubPEM,
		"two blocks":     append(append([]byte{}, priv...), priv...),
		"no PEM":         []byte("not a key"),
		"encrypted PEM":  []byte("-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END PRIVATE KEY-----\n"),
		"a bad PKCS #8":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("junk")}),
		"an RSA PKCS #1": pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}),
	} {
		if _, err := ParsePolicySigningKey(data); err == nil {
			t.Errorf("ParsePolicySigningKey(%s) succeeded", name)
		}
	}
	for name, data := range map[string][]byte{
		"a private key": priv,
		"RSA":           pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&rsaKey.PublicKey))}),
		"P-384":         pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: must(x509.MarshalPKIXPublicKey(&p384.PublicKey))}),
	} {
		if _, err := ParsePolicyPublicKey(data); err == nil {
			t.Errorf("ParsePolicyPublicKey(%s) succeeded", name)
		}
	}

	// The loaders read files, and name them in their errors.
	dir := t.TempDir()
	privFile, pubFile := filepath.Join(dir, "policy.key"), filepath.Join(dir, "policy.pub")
	if err := os.WriteFile(privFile, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	sk, err := LoadPolicySigningKey(privFile)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := LoadPolicyPublicKey(pubFile)
	if err != nil || pk.ID() != sk.ID() {
		t.Fatalf("LoadPolicyPublicKey = %v, %v", pk, err)
	}
	if _, err := LoadPolicyPublicKey(privFile); err == nil || !strings.Contains(err.Error(), privFile) {
		t.Errorf("LoadPolicyPublicKey(private key) = %v, want an error naming the file", err)
	}
	if _, err := LoadPolicySigningKey(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadPolicySigningKey(missing) succeeded")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
