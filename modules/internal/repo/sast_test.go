package repo_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/testing/repotest"
	"github.com/ward-run/ward/modules/internal/repo"
)

// sastOf scans one file and returns its findings as "file:line rule".
func sastOf(path, text string) []string {
	f := &repo.File{Path: path, Size: int64(len(text)), Language: repo.Language(path), Data: []byte(text)}
	return repotest.Keys(repo.SAST(f))
}

// TestSASTCases: the cases of the issue, and what must stay quiet. The
// tokens are joined at run time, so that secret scanners leave the source
// alone.
func TestSASTCases(t *testing.T) {
	awsSecret := "Ht4Lq9" + "ZbXw2Rk7Vn3Pd8Jm5Cs1Fg6Ty0Ue/Ao+Wi"
	for _, tc := range []struct {
		name, path, text string
		want             []string
	}{
		{"unquoted AWS secret in an env file", "config.env",
			"AWS_SECRET_ACCESS_KEY=" + awsSecret + "\n", []string{"config.env:1 aws-secret-access-key"}},
		{"AWS's documented example keys", "config.env",
			"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n", nil},
		{"an example file", ".env.example", "AWS_SECRET_ACCESS_KEY=" + awsSecret + "\n", nil},
		{"vendor", "vendor/x/y.go", `var token = "` + "ghp_" + strings.Repeat("aB3", 12) + `"` + "\n", nil},
		{"a lock file", "package-lock.json", `{"token": "` + awsSecret + `"}` + "\n", nil},
		{"an environment lookup", "app.py", `PASSWORD = os.environ["PASSWORD"]` + "\n", nil},
		{"a placeholder", "app.yaml", "password: changeme\napi_key: <your-api-key>\ntoken: ${TOKEN}\n", nil},
		{"a masked value", "app.yaml", "password: \"********\"\n", nil},
		{"a translation", "locales/de.json", `{"password": "Passwort", "token": "Zugangstoken"}` + "\n", nil},
		{"a password", "app.yaml", "db:\n  password: Vq7#tR2pL9xZ\n", []string{"app.yaml:2 hardcoded-secret"}},
		{"SQL over three lines", "db.py",
			"def f(cur, name):\n    cur.execute(\n        \"SELECT * FROM t WHERE name = '%s'\"\n        % name)\n",
			[]string{"db.py:2 sql-injection"}},
		{"parameterised SQL over three lines", "db.py",
			"def f(cur, name):\n    cur.execute(\n        \"SELECT * FROM t WHERE name = %s\",\n        (name,))\n", nil},
		{"Go that does not parse: the regular expressions", "bad.go",
			"package p\n\nfunc f(db *sql.DB, id string) {\n\tdb.Query(\"SELECT * FROM t WHERE id = \" + id)\n",
			[]string{"bad.go:4 sql-injection"}},
		{"Go: a query built in another function's variable of the same name", "two.go",
			"package p\n\nfunc f(id string) string {\n\tq := \"SELECT * FROM t WHERE id = \" + id\n\treturn q\n}\n\n" +
				"func g(db *sql.DB) {\n\tq := \"SELECT * FROM t\"\n\tdb.Query(q)\n}\n", nil},
		{"Go: a request's value passed to a fixed program's flag", "cmd.go",
			"package p\n\nimport (\n\t\"net/http\"\n\t\"os/exec\"\n)\n\nfunc h(w http.ResponseWriter, r *http.Request) {\n\texec.Command(\"git\", \"log\", r.FormValue(\"ref\")).Run()\n}\n",
			[]string{"cmd.go:9 shell-injection"}},
		{"a PEM header without a key", "pem.go", "package pem\n\nconst h = \"-----BEGIN RSA PRIVATE KEY-----\"\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sastOf(tc.path, tc.text); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSASTMasks: a finding shows no more of a secret than its first
// characters.
func TestSASTMasks(t *testing.T) {
	secret := "Ht4Lq9" + "ZbXw2Rk7Vn3Pd8Jm5Cs1Fg6Ty0Ue/Ao+Wi"
	f := &repo.File{Path: "a.env", Language: "Dotenv", Data: []byte("AWS_SECRET_ACCESS_KEY=" + secret + "\n")}
	fs := repo.SAST(f)
	if len(fs) != 1 {
		t.Fatalf("%+v", fs)
	}
	if m := fs[0].Message; strings.Contains(m, secret[:5]) || !strings.HasSuffix(m, ": Ht4L…") {
		t.Fatalf("message %q", m)
	}
	if fs[0].Excerpt != "AWS_SECRET_ACCESS_KEY=Ht4L…" || fs[0].Fix == "" {
		t.Fatalf("excerpt %q, fix %q", fs[0].Excerpt, fs[0].Fix)
	}
}

// TestSASTGoExcerpt: a finding from Go's syntax tree shows its line, a
// literal that may be a secret masked, with a fix.
func TestSASTGoExcerpt(t *testing.T) {
	lit := "Ab3dEf9h" + "Ij2kLm4nOp7q"
	text := "package p\n\nfunc f(db *sql.DB, id string) {\n\tdb.Exec(\"UPDATE t SET k = \" + id + \" WHERE s = \", \"" + lit + "\")\n}\n"
	f := &repo.File{Path: "k.go", Language: "Go", Data: []byte(text)}
	fs := repo.SAST(f)
	if len(fs) != 1 || fs[0].Rule != "sql-injection" || fs[0].Line != 4 {
		t.Fatalf("%+v", fs)
	}
	if strings.Contains(fs[0].Excerpt, lit[5:]) || !strings.Contains(fs[0].Excerpt, "db.Exec(") || fs[0].Fix == "" {
		t.Fatalf("excerpt %q, fix %q", fs[0].Excerpt, fs[0].Fix)
	}
}
