package modreg

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/sandbox"
)

// FuzzNewVersion feeds what `ward module deploy` and POST /v1/modules
// upload (the module's bytes, its manifest, a name and a version) to
// NewVersion. A version it makes is what the registry stores: a
// WebAssembly module, a name and version CheckName accepts (the form's
// over the manifest's), the manifest as given, and, with a manifest, the
// route and the requests it declares.
func FuzzNewVersion(f *testing.F) {
	paths, _ := filepath.Glob("../../modules/*/manifest.yaml")
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(wasmHeader, b, "", "")
			f.Add(wasmHeader, b, "other", "2.0.0-rc.1")
		}
	}
	f.Add(wasmHeader, []byte(nil), "", "")
	f.Add(wasmHeader, []byte(nil), "echo", "")
	f.Add([]byte("\x00asm\x02\x00\x00\x00"), []byte("name: x\n"), "", "")
	f.Add([]byte("\x7fELF"), []byte(nil), "x", "1")
	f.Add(wasmHeader, []byte("name: X\nversion: ../1\n"), "", "")
	f.Add(wasmHeader, []byte("name: r\ntopic: job.r\npool: gpu\nrequires: [gpu]\ncapabilities: {http_hosts: ['*'], services: [ollama]}\nlimits: {memory: 64MiB, time: 90s}\n"), "", "")
	f.Fuzz(func(t *testing.T, wasm, manifest []byte, name, version string) {
		v, err := NewVersion(wasm, manifest, name, version)
		if err != nil {
			if !reflect.DeepEqual(v, Version{}) {
				t.Fatalf("a version and an error: %+v, %v", v, err)
			}
			return
		}
		if CheckWasm(wasm) != nil || CheckName(v.Name, v.Version) != nil {
			t.Fatalf("accepted %q %q of %q", v.Name, v.Version, wasm)
		}
		if (name != "" && v.Name != name) || (version != "" && v.Version != version) || v.Manifest != string(manifest) {
			t.Fatalf("name %q version %q asked, %q %q stored", name, version, v.Name, v.Version)
		}
		if version == "" && !strings.HasPrefix(v.Version, "sha-") {
			m, _ := sandbox.ParseManifest(manifest)
			if m == nil || m.Version != v.Version {
				t.Fatalf("version %q comes from nowhere", v.Version)
			}
		}
		if len(manifest) == 0 {
			if v.Requested != nil || !reflect.DeepEqual(v.Route, Route{}) {
				t.Fatalf("a route or requests without a manifest: %+v", v)
			}
			return
		}
		m, err := sandbox.ParseManifest(manifest)
		if err != nil {
			t.Fatalf("stored a manifest that does not parse: %v", err)
		}
		if v.Route.Topic != m.Topic || v.Route.Pool != m.Pool || !reflect.DeepEqual(v.Route.Requires, m.Requires) {
			t.Fatalf("the manifest declares %q %q %v, the version routes %+v", m.Topic, m.Pool, m.Requires, v.Route)
		}
		r := v.Requested
		if r == nil || r.MemoryLimitBytes != int64(m.Limits.Memory) || r.TimeLimitMS != time.Duration(m.Limits.Time).Milliseconds() ||
			!reflect.DeepEqual(r.HTTPHosts, m.Capabilities.HTTPHosts) || !reflect.DeepEqual(r.Services, m.Capabilities.Services) {
			t.Fatalf("the manifest asks %+v, the version %+v", m, r)
		}
	})
}

// FuzzModuleKeys feeds the module signing key readers (ward module sign
// --key, the gateway's --module-key; hosts' --trusted-key) arbitrary
// files. A private key read is an ed25519 key whose signatures its own
// public half verifies, and which writes back (PKCS #8 PEM) to the same
// key; a public key read is an ed25519 key that writes back the same.
func FuzzModuleKeys(f *testing.F) {
	priv, pub, err := GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(priv)
	f.Add(pub)
	f.Add(append(append([]byte("junk before\n"), priv...), "junk after"...))
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p8, _ := x509.MarshalPKCS8PrivateKey(ec)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8}))
	pk, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pk}))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if k, err := ParsePrivateKey(data); err == nil {
			if len(k) != ed25519.PrivateKeySize {
				t.Fatalf("a private key of %d bytes", len(k))
			}
			digest := Digest(data)
			if Verify([]ed25519.PublicKey{k.Public().(ed25519.PublicKey)}, digest, Sign(k, digest)) != nil {
				t.Fatal("a key read does not verify its own signature")
			}
			der, err := x509.MarshalPKCS8PrivateKey(k)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
			if err != nil || !bytes.Equal(again, k) {
				t.Fatalf("a key read writes back as another: %v", err)
			}
		} else if k != nil {
			t.Fatal("a private key and an error")
		}
		if k, err := ParsePublicKey(data); err == nil {
			if len(k) != ed25519.PublicKeySize {
				t.Fatalf("a public key of %d bytes", len(k))
			}
			der, err := x509.MarshalPKIXPublicKey(k)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
			if err != nil || !bytes.Equal(again, k) {
				t.Fatalf("a key read writes back as another: %v", err)
			}
		} else if k != nil {
			t.Fatal("a public key and an error")
		}
	})
}
