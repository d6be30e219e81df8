package safety

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"maps"
	"reflect"
	"strings"
	"testing"
)

// FuzzPolicyKeys feeds the policy key readers (ward policy push
// --signing-key, the gateway's --policy-key; kernels' --policy-pubkey)
// arbitrary files. A file they accept holds one PEM block and nothing
// else; a signing key read is an ed25519 or P-256 key whose id is its
// public half's, which writes back as the same key and signs bundles its
// public half, read back from its PEM, verifies; a public key read writes
// back as the same key.
func FuzzPolicyKeys(f *testing.F) {
	priv, pub, err := GeneratePolicyKey()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(priv)
	f.Add(pub)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p8, _ := x509.MarshalPKCS8PrivateKey(ec)
	sec1, _ := x509.MarshalECPrivateKey(ec)
	pkix, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}))
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix}))
	f.Add(append(append([]byte{}, priv...), priv...))
	f.Add(append([]byte(" \n"), append(priv, " \t\n"...)...))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nAAAA\n-----END PRIVATE KEY-----\n"))
	tiny := &Bundle{Files: map[string][]byte{"fuzz/policy.rego": []byte("package fuzz\n\nallow := true\n")}}
	f.Fuzz(func(t *testing.T, data []byte) {
		onlyOneBlock := func() {
			t.Helper()
			if b, rest := pem.Decode(data); b == nil || len(bytes.TrimSpace(rest)) > 0 {
				t.Fatalf("accepted a file that is not one PEM block: %q", data)
			}
		}
		if sk, err := ParsePolicySigningKey(data); err == nil {
			onlyOneBlock()
			p := sk.Public()
			if sk.ID() != p.ID() || (p.Algorithm() != algEdDSA && p.Algorithm() != algES256) || len(p.ID()) != 16 {
				t.Fatalf("a key of id %s, public id %s, algorithm %s", sk.ID(), p.ID(), p.Algorithm())
			}
			again, err := ParsePolicySigningKey([]byte(sk.pem))
			if err != nil || again.ID() != sk.ID() || again.pem != sk.pem {
				t.Fatalf("a key read writes back as another: %v", err)
			}
			pk, err := ParsePolicyPublicKey(p.PEM())
			if err != nil || pk.ID() != p.ID() || pk.Algorithm() != p.Algorithm() {
				t.Fatalf("its public half does not read back: %v", err)
			}
			signed, err := tiny.Sign(sk)
			if err != nil {
				t.Fatalf("a key read does not sign: %v", err)
			}
			if err := VerifyBundle(signed, pk); err != nil {
				t.Fatalf("its own signature does not verify: %v", err)
			}
		} else if sk != nil {
			t.Fatal("a key and an error")
		}
		if pk, err := ParsePolicyPublicKey(data); err == nil {
			onlyOneBlock()
			again, err := ParsePolicyPublicKey(pk.PEM())
			if err != nil || again.ID() != pk.ID() || again.Algorithm() != pk.Algorithm() || !bytes.Equal(again.PEM(), pk.PEM()) {
				t.Fatalf("a public key read writes back as another: %v", err)
			}
		} else if pk != nil {
			t.Fatal("a public key and an error")
		}
	})
}

// FuzzVerifyBundle feeds VerifyBundle a signed bundle with one file
// replaced or added (name, data) and, when sigs is not empty, another
// .signatures.json: what someone who can write the policy bucket could
// push. It accepts only the files signed (a structured data file may be
// written differently, as long as it holds the same document), and
// refuses with ErrBundleSignature.
func FuzzVerifyBundle(f *testing.F) {
	sk, pk := newPolicyKey(f)
	other, _ := newPolicyKey(f)
	orig := &Bundle{Files: map[string][]byte{
		"fuzz/policy.rego":      []byte("package fuzz\n\nallow := true\n"),
		"fuzz/policy_test.rego": []byte("package fuzz\n\ntest_allow if allow\n"),
		"data.json":             []byte(`{"tenants": {"acme": {"rate": 5}}}`),
	}}
	signed, err := orig.Sign(sk)
	if err != nil {
		f.Fatal(err)
	}
	byOther, _ := orig.Sign(other)
	f.Add("", []byte(nil), []byte(nil))
	f.Add("data.json", []byte(`{"tenants":{"acme":{"rate":5}}}`), []byte(nil))
	f.Add("data.json", []byte(`{"tenants": {"acme": {"rate": 50}}}`), []byte(nil))
	f.Add("fuzz/policy.rego", []byte("package fuzz\n\nallow := false\n"), []byte(nil))
	f.Add("fuzz/extra.rego", []byte("package fuzz\n"), []byte(nil))
	f.Add("", []byte(nil), byOther.Signatures)
	f.Add("", []byte(nil), []byte(`{"signatures": []}`))
	f.Add("", []byte(nil), []byte(`{"signatures": ["a.b.c"], "plugin": "x"}`))
	f.Add("", []byte(nil), bytes.Replace(signed.Signatures, []byte(`"`), []byte(`"x`), 2))
	f.Fuzz(func(t *testing.T, name string, data, sigs []byte) {
		b := &Bundle{Files: maps.Clone(orig.Files), Signatures: signed.Signatures}
		if name != "" {
			b.Files[name] = data
		}
		if len(sigs) > 0 {
			b.Signatures = sigs
		}
		err := VerifyBundle(b, pk)
		if err != nil {
			if !errors.Is(err, ErrBundleSignature) {
				t.Fatalf("a refusal that is not ErrBundleSignature: %v", err)
			}
			return
		}
		if len(b.Files) != len(orig.Files) {
			t.Fatalf("verified a bundle of %d files, %d signed", len(b.Files), len(orig.Files))
		}
		for n, want := range orig.Files {
			got := b.Files[n]
			if bytes.Equal(got, want) {
				continue
			}
			var g, w any
			if !strings.HasSuffix(n, ".json") || json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
				t.Fatalf("verified %s as %q, signed %q", n, got, want)
			}
		}
	})
}
