// Package repo is what the repo-* modules share: reading a repository from
// a job (a tar archive in its input, or a mounted directory), and the scan,
// lint, sast and report analyses.
package repo

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/ward-run/ward/modules/sdk"
)

// Limits on what a repository may hold.
const (
	// MaxFileBytes is the largest file whose content is analysed; larger
	// ones are listed but not read.
	MaxFileBytes = 1 << 20
	// MaxFiles caps the files of one repository.
	MaxFiles = 100_000
)

// File is one regular file of a repository.
type File struct {
	Path     string // slash-separated, relative to the repository's root
	Size     int64
	Language string
	// Data is the content, nil when the file is binary or over
	// MaxFileBytes.
	Data   []byte
	Binary bool
}

// Source is a repository that can be walked once.
type Source interface {
	// Walk calls fn for each regular file. Entries it cannot or will not
	// read (symbolic links, unreadable files, names that leave the
	// repository) are reported by Skipped.
	Walk(fn func(*File) error) error
	// Skipped lists what Walk passed over, and why.
	Skipped() []string
}

// Open reads a repo module's input: a tar archive (gzipped or not), or a
// RepoRequest as JSON optionally followed by one. Without an archive, the
// repository is the request's Dir, which must lie in one of the job's
// mounts. A request with neither has no Source (for repo-report, which may
// merge results alone). An input it cannot read, or a Dir the job was not
// granted, is refused (sdk.Refuse): no attempt would do better.
func Open(j *sdk.Job) (*sdk.RepoRequest, Source, error) {
	req := &sdk.RepoRequest{}
	r := bufio.NewReaderSize(j.Reader(), 64<<10)
	first, err := peekNonSpace(r)
	if err == io.EOF {
		return nil, nil, sdk.Refuse(errors.New("empty input: send a tar archive of the repository, or {\"dir\": ...}"))
	}
	if err != nil {
		return nil, nil, err
	}
	var rest io.Reader = r
	if first == '{' {
		dec := json.NewDecoder(r)
		if err := dec.Decode(req); err != nil {
			return nil, nil, sdk.Refuse(fmt.Errorf("repo request: %w", err))
		}
		br := bufio.NewReaderSize(io.MultiReader(dec.Buffered(), r), 64<<10)
		if _, err := peekNonSpace(br); err == io.EOF {
			rest = nil
		} else {
			rest = br
		}
	}
	if rest != nil {
		src, err := newArchive(rest)
		return req, src, err
	}
	if req.Dir == "" {
		return req, nil, nil
	}
	src, err := newDir(req.Dir, j.Info().Mounts)
	return req, src, err
}

// peekNonSpace skips white space and returns the next byte, unread.
func peekNonSpace(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.Peek(1)
		if err != nil {
			return 0, err
		}
		if !strings.ContainsRune(" \t\r\n", rune(b[0])) {
			return b[0], nil
		}
		_, _ = r.Discard(1)
	}
}

// archive is a tar stream.
type archive struct {
	tr      *tar.Reader
	skipped []string
}

func newArchive(r io.Reader) (*archive, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, sdk.Refuse(fmt.Errorf("repository archive: %w", err))
		}
		return &archive{tr: tar.NewReader(zr)}, nil
	}
	return &archive{tr: tar.NewReader(br)}, nil
}

func (a *archive) Skipped() []string { return a.skipped }

func (a *archive) Walk(fn func(*File) error) error {
	files := 0
	for {
		h, err := a.tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return sdk.Refuse(fmt.Errorf("repository archive: %w", err))
		}
		name, ok := cleanName(h.Name)
		switch {
		case !ok:
			a.skipped = append(a.skipped, h.Name+": name leaves the repository")
			continue
		case h.Typeflag == tar.TypeDir || skipPath(name):
			continue
		case h.Typeflag != tar.TypeReg:
			a.skipped = append(a.skipped, name+": not a regular file")
			continue
		}
		if files++; files > MaxFiles {
			a.skipped = append(a.skipped, fmt.Sprintf("files past the first %d", MaxFiles))
			return nil
		}
		f := &File{Path: name, Size: h.Size, Language: Language(name)}
		if h.Size <= MaxFileBytes {
			data, err := io.ReadAll(a.tr)
			if err != nil {
				return sdk.Refuse(fmt.Errorf("repository archive: %s: %w", name, err))
			}
			f.Data = data
		}
		classify(f)
		if err := fn(f); err != nil {
			return err
		}
	}
}

// cleanName makes an archive name relative and slash-separated, and
// refuses one that leaves the repository.
func cleanName(name string) (string, bool) {
	name = strings.ReplaceAll(name, "\\", "/")
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", false
		}
	}
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	return name, name != ""
}

// skipPath passes over version-control metadata.
func skipPath(name string) bool {
	for _, part := range strings.Split(name, "/") {
		if part == ".git" || part == ".hg" || part == ".svn" {
			return true
		}
	}
	return false
}

// dir is a mounted directory.
type dir struct {
	root    string
	skipped []string
}

func newDir(root string, mounts []string) (*dir, error) {
	root = path.Clean(root)
	for _, m := range mounts {
		if root == m || strings.HasPrefix(root, strings.TrimSuffix(m, "/")+"/") {
			return &dir{root: root}, nil
		}
	}
	return nil, sdk.Refuse(fmt.Errorf("dir %s is not mounted: the job was granted no read-only directory that holds it (mounts: %v). "+
		"To read it in place, the policy must grant the repo modules a root that holds it (policies/data.yaml: modules, read_only_roots; "+
		"/srv/ward/repos by default) and the host must serve that root (ward host or ward dev --mount-root /srv/ward/repos). "+
		"Or send the repository itself: ward submit --repo %s", root, mounts, root))
}

func (d *dir) Skipped() []string { return d.skipped }

func (d *dir) Walk(fn func(*File) error) error {
	fsys := os.DirFS(d.root)
	files := 0
	err := fs.WalkDir(fsys, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil {
			if name == "." {
				return err
			}
			d.skipped = append(d.skipped, fmt.Sprintf("%s: %v", name, err))
			return nil
		}
		switch {
		case e.IsDir() && skipPath(name):
			return fs.SkipDir
		case e.IsDir():
			return nil
		case !e.Type().IsRegular():
			d.skipped = append(d.skipped, name+": not a regular file")
			return nil
		}
		if files++; files > MaxFiles {
			d.skipped = append(d.skipped, fmt.Sprintf("files past the first %d", MaxFiles))
			return fs.SkipAll
		}
		info, err := e.Info()
		if err != nil {
			d.skipped = append(d.skipped, fmt.Sprintf("%s: %v", name, err))
			return nil
		}
		f := &File{Path: name, Size: info.Size(), Language: Language(name)}
		if f.Size <= MaxFileBytes {
			if f.Data, err = fs.ReadFile(fsys, name); err != nil {
				d.skipped = append(d.skipped, fmt.Sprintf("%s: %v", name, err))
				return nil
			}
		}
		classify(f)
		return fn(f)
	})
	if err != nil {
		return fmt.Errorf("dir %s: %w", d.root, err)
	}
	return nil
}

// WalkFiles calls fn for each of names that is a regular file of the
// directory, in the order given, reading only those: a batch of a large
// repository is read without walking the rest of it. A name that leaves
// the repository, lies under version-control metadata or under a
// symbolic link, or is not a regular file is passed over, as Walk passes
// it over (Walk never reaches what lies under a symbolic link); one that
// does not exist is passed over in silence, as Walk never meets it; other
// errors are reported by Skipped.
func (d *dir) WalkFiles(names []string, fn func(*File) error) error {
	fsys := os.DirFS(d.root)
	dirOK := map[string]bool{".": true} // directories known to be real ones (not links)
	realDir := func(p string) (bool, error) {
		if ok, seen := dirOK[p]; seen {
			return ok, nil
		}
		info, err := fs.Lstat(fsys, p)
		if err != nil {
			return false, err
		}
		ok := info.IsDir() && info.Mode()&fs.ModeSymlink == 0
		dirOK[p] = ok
		return ok, nil
	}
	seen := make(map[string]bool, len(names))
	for _, raw := range names {
		name, ok := cleanName(raw)
		if !ok || name != raw || skipPath(name) || seen[name] {
			continue
		}
		seen[name] = true
		under := true
		for i := 0; i < len(name); i++ {
			if name[i] != '/' {
				continue
			}
			ok, err := realDir(name[:i])
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.skipped = append(d.skipped, fmt.Sprintf("%s: %v", name[:i], err))
			}
			if !ok {
				under = false
				break
			}
		}
		if !under {
			continue
		}
		info, err := fs.Lstat(fsys, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			d.skipped = append(d.skipped, fmt.Sprintf("%s: %v", name, err))
			continue
		case info.IsDir():
			continue
		case !info.Mode().IsRegular():
			d.skipped = append(d.skipped, name+": not a regular file")
			continue
		}
		f := &File{Path: name, Size: info.Size(), Language: Language(name)}
		if f.Size <= MaxFileBytes {
			if f.Data, err = fs.ReadFile(fsys, name); err != nil {
				d.skipped = append(d.skipped, fmt.Sprintf("%s: %v", name, err))
				continue
			}
		}
		classify(f)
		if err := fn(f); err != nil {
			return fmt.Errorf("dir %s: %w", d.root, err)
		}
	}
	return nil
}

// classify marks binary files (a NUL byte in the first 8000 bytes, as git
// does) and drops their content.
func classify(f *File) {
	head := f.Data[:min(len(f.Data), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		f.Binary, f.Data = true, nil
	}
}

// languages maps file extensions (and a few names) to languages.
var languages = map[string]string{
	".go": "Go", ".py": "Python", ".js": "JavaScript", ".mjs": "JavaScript", ".jsx": "JavaScript",
	".ts": "TypeScript", ".tsx": "TypeScript", ".rs": "Rust", ".java": "Java", ".kt": "Kotlin",
	".c": "C", ".h": "C", ".cc": "C++", ".cpp": "C++", ".hpp": "C++", ".cs": "C#", ".rb": "Ruby",
	".php": "PHP", ".swift": "Swift", ".scala": "Scala", ".sh": "Shell", ".bash": "Shell",
	".sql": "SQL", ".lua": "Lua", ".rego": "Rego", ".proto": "Protocol Buffers",
	".md": "Markdown", ".rst": "reStructuredText", ".txt": "Text", ".json": "JSON",
	".yaml": "YAML", ".yml": "YAML", ".toml": "TOML", ".xml": "XML", ".html": "HTML",
	".css": "CSS", ".env": "Dotenv", ".ini": "INI", ".mod": "Go Module", ".sum": "Go Checksums",
	"Makefile": "Makefile", "Dockerfile": "Dockerfile",
}

// Language names the language of a file, or "" when unknown.
func Language(name string) string {
	base := path.Base(name)
	if l, ok := languages[base]; ok {
		return l
	}
	return languages[strings.ToLower(path.Ext(base))]
}
