package modreg

import (
	"context"
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

// TestVersionsLifecycle: a rollback of a module never deployed says so; a
// kept version can be activated again after a rollback, and deleted when
// it is not the active one (its blob too, unless another version shares
// it); an activation with trusted keys refuses an unsigned version.
func TestVersionsLifecycle(t *testing.T) {
	r := open(t)
	ctx := context.Background()
	if _, err := r.Rollback(ctx, "ghost"); !errors.Is(err, ErrNotDeployed) || !errors.Is(err, ErrNotFound) ||
		err.Error() != "module ghost is not deployed" {
		t.Fatalf("rollback of an unknown module: %v", err)
	}
	if _, err := r.Remove(ctx, "ghost"); !errors.Is(err, ErrNotDeployed) {
		t.Fatalf("rm of an unknown module: %v", err)
	}
	if _, err := r.ActivateVersion(ctx, "ghost", "1", nil); !errors.Is(err, ErrNotDeployed) {
		t.Fatalf("activate of an unknown module: %v", err)
	}
	if err := r.RemoveVersion(ctx, "ghost", "1"); !errors.Is(err, ErrNotDeployed) {
		t.Fatalf("rm-version of an unknown module: %v", err)
	}

	priv, pub, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ParsePrivateKey(priv)
	trusted, _ := ParsePublicKey(pub)
	v1, v2, v3 := []byte("\x00asm\x01\x00\x00\x00 one"), []byte("\x00asm\x01\x00\x00\x00 two"), []byte("\x00asm\x01\x00\x00\x00 three")
	for _, d := range []struct {
		version string
		wasm    []byte
		signed  bool
	}{{"1", v1, true}, {"2", v2, true}, {"3", v3, false}, {"3b", v3, false}} {
		v := Version{Name: "m", Version: d.version}
		if d.signed {
			v.Signature = Sign(key, Digest(d.wasm))
		}
		if _, err := r.Deploy(ctx, v, d.wasm); err != nil {
			t.Fatal(err)
		}
	}
	// Active: 3b; history 1, 2, 3.
	if _, err := r.ActivateVersion(ctx, "m", "9", nil); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDeployed) {
		t.Fatalf("activate of a version never deployed: %v", err)
	}
	// With a trusted key, an unsigned version is refused, a signed one
	// activated (after a rollback: the version rolled back from).
	if _, err := r.ActivateVersion(ctx, "m", "3", []ed25519.PublicKey{trusted}); !errors.Is(err, ErrSignature) {
		t.Fatalf("activate of an unsigned version with a trusted key: %v", err)
	}
	if a, err := r.Rollback(ctx, "m"); err != nil || a.Version != "3" {
		t.Fatalf("rollback: %+v %v", a, err)
	}
	if a, err := r.Rollback(ctx, "m"); err != nil || a.Version != "2" {
		t.Fatalf("rollback: %+v %v", a, err)
	}
	a, err := r.ActivateVersion(ctx, "m", "1", []ed25519.PublicKey{trusted})
	if err != nil || a.Version != "1" || a.Digest != Digest(v1) || !a.Signed || strings.Join(a.History, ",") != "1,2" {
		t.Fatalf("activate 1 after the rollbacks: %+v %v", a, err)
	}
	// The active version stays; another goes, from the history too.
	if err := r.RemoveVersion(ctx, "m", "1"); !errors.Is(err, ErrActiveVersion) {
		t.Fatalf("rm-version of the active version: %v", err)
	}
	if err := r.RemoveVersion(ctx, "m", "2"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Version(ctx, "m", "2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("version 2 after its removal: %v", err)
	}
	if _, err := r.Blob(ctx, Digest(v2)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("blob of version 2 after its removal: %v", err)
	}
	// The history a rollback reaches no longer holds 2.
	if mods, err := r.List(ctx); err != nil || len(mods) != 1 || strings.Join(mods[0].Active.History, ",") != "1" {
		t.Fatalf("history after 2's removal: %+v %v", mods, err)
	}
	// 3 and 3b share their bytes: removing 3 keeps the blob 3b needs.
	if err := r.RemoveVersion(ctx, "m", "3"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Blob(ctx, Digest(v3)); err != nil {
		t.Fatalf("blob shared with 3b after 3's removal: %v", err)
	}
	if err := r.RemoveVersion(ctx, "m", "3"); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrNotDeployed) {
		t.Fatalf("rm-version twice: %v", err)
	}
	mods, err := r.List(ctx)
	if err != nil || len(mods) != 1 || len(mods[0].Versions) != 2 {
		t.Fatalf("list after the removals: %+v %v", mods, err)
	}
}

func TestCheckWasm(t *testing.T) {
	for in, want := range map[string]string{
		"\x00asm\x01\x00\x00\x00rest": "",
		"":                            "not a WebAssembly module",
		"#!/bin/sh\necho hi\n":        "not a WebAssembly module",
		"\x00asm\x02\x00\x00\x00":     "version 2",
	} {
		err := CheckWasm([]byte(in))
		if (want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("CheckWasm(%q) = %v, want %q", in, err, want)
		}
	}
}
