package modreg

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// flakyStore answers reads corrupt the first bad times, then right.
type flakyStore struct {
	data     []byte
	bad      int
	notFound int // the first notFound reads find nothing
	calls    int
}

func (f *flakyStore) read(context.Context, string) ([]byte, error) {
	f.calls++
	if f.calls <= f.notFound {
		return nil, jetstream.ErrObjectNotFound
	}
	if f.calls <= f.bad {
		return nil, jetstream.ErrDigestMismatch
	}
	return f.data, nil
}

// TestBlobReadsACorruptReadAgain: a blob that arrives corrupt or is not
// found (as after a NATS server's restart, while its replica catches up)
// is read again; one corrupt every time is refused.
func TestBlobReadsACorruptReadAgain(t *testing.T) {
	wasm := []byte("\x00asm\x01\x00\x00\x00")
	f := &flakyStore{data: wasm, bad: 2}
	r := &Registry{readBlob: f.read}
	b, err := r.Blob(context.Background(), Digest(wasm))
	if err != nil || string(b) != string(wasm) || f.calls != 3 {
		t.Fatalf("after 2 corrupt reads: %v, %d calls", err, f.calls)
	}
	f = &flakyStore{data: wasm, bad: 100}
	r = &Registry{readBlob: f.read}
	if _, err := r.Blob(context.Background(), Digest(wasm)); !errors.Is(err, jetstream.ErrDigestMismatch) || f.calls != blobTries {
		t.Fatalf("always corrupt: %v, %d calls", err, f.calls)
	}
	// Not there at first (a lagging replica answered), then there.
	f = &flakyStore{data: wasm, notFound: 1}
	r = &Registry{readBlob: f.read}
	if _, err := r.Blob(context.Background(), Digest(wasm)); err != nil || f.calls != 2 {
		t.Fatalf("not found once: %v, %d calls", err, f.calls)
	}
	f = &flakyStore{data: []byte("other bytes")}
	r = &Registry{readBlob: f.read}
	if _, err := r.Blob(context.Background(), Digest(wasm)); !errors.Is(err, ErrDigest) {
		t.Fatalf("the wrong bytes: %v", err)
	}
}
