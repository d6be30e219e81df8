package safety

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// Bundle is a policy bundle: the files of a policy directory that the
// kernel reads, by slash-separated path. They are every *.rego file in any
// directory, the *_test.rego unit tests included, and data.json or
// data.yaml at the root, the policy's data document. Files and directories
// whose names start with a dot are skipped (editors' swap files, .git).
//
// A Bundle is a value: nothing in this package modifies one after it was
// read.
type Bundle struct {
	// Files holds each file's contents, by slash-separated path.
	Files map[string][]byte
	// Signatures is the bundle's OPA signature, the contents of its
	// .signatures.json (see Sign and VerifyBundle); nil when the bundle is
	// not signed. It is not one of Files and does not count in Revision.
	// A bundle read from a directory is not signed: its .signatures.json,
	// a dot file, is skipped.
	Signatures []byte
}

// ReadBundle reads the bundle in fsys.
func ReadBundle(fsys fs.FS) (*Bundle, error) {
	b := &Bundle{Files: map[string][]byte{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() || !bundleFile(p) {
			return nil
		}
		bs, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		b.Files[p] = bs
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("safety: read bundle: %w", err)
	}
	return b, nil
}

// ReadBundleDir reads the bundle in the directory dir.
func ReadBundleDir(dir string) (*Bundle, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("safety: read bundle: %w", err)
	}
	return ReadBundle(os.DirFS(dir))
}

// bundleFile reports whether the slash-separated path p belongs in a bundle.
func bundleFile(p string) bool {
	return strings.HasSuffix(p, ".rego") || p == "data.json" || p == "data.yaml"
}

// isTest reports whether the bundle file p holds unit tests.
func isTest(p string) bool { return strings.HasSuffix(p, "_test.rego") }

// Revision is the bundle's revision: the first 12 hex digits of a SHA-256
// over the names and contents of its policy and data files. Tests do not
// count, since they do not change what the kernel evaluates.
func (b *Bundle) Revision() string {
	h := sha256.New()
	for _, name := range slices.Sorted(maps.Keys(b.Files)) {
		if isTest(name) {
			continue
		}
		bs := b.Files[name]
		// The length prefixes keep the encoding unambiguous; names count,
		// so that renaming a file is a new revision.
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(bs))
		h.Write(bs)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// Proto returns the bundle as `ward policy push` stores it: its
// Signatures, when it has them, are the file .signatures.json, as in an
// OPA bundle.
func (b *Bundle) Proto() *safetyv1.PolicyBundle {
	files := maps.Clone(b.Files)
	if b.Signatures != nil {
		if files == nil {
			files = map[string][]byte{}
		}
		files[SignaturesFile] = b.Signatures
	}
	return &safetyv1.PolicyBundle{Files: files, Revision: b.Revision()}
}

// errBundleFile is wrapped by errors about a file a bundle may not hold.
var errBundleFile = errors.New("not a bundle file")

// BundleFromProto returns the bundle in pb, checking its paths and
// revision. Its file .signatures.json is the bundle's Signatures (which
// BundleFromProto does not verify: VerifyBundle does).
func BundleFromProto(pb *safetyv1.PolicyBundle) (*Bundle, error) {
	b := &Bundle{Files: make(map[string][]byte, len(pb.GetFiles()))}
	for name, data := range pb.GetFiles() {
		if name == SignaturesFile {
			b.Signatures = data
			continue
		}
		if !fs.ValidPath(name) || name == "." || !bundleFile(name) || path.Clean(name) != name {
			return nil, fmt.Errorf("safety: bundle file %q: %w", name, errBundleFile)
		}
		b.Files[name] = data
	}
	if rev := pb.GetRevision(); rev != "" && rev != b.Revision() {
		return nil, fmt.Errorf("safety: bundle claims revision %s, its files are %s", rev, b.Revision())
	}
	return b, nil
}
