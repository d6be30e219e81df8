package code

// Cases modelled on the patterns of gosec's rule tests G201/G202 (SQL
// built by formatting or concatenation), G204 (subprocesses with variable
// programs or arguments), G401 (weak hashes) and G402 (TLS checks off);
// Ward's own code, see PROVENANCE.

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

const (
	usersTable = "users"
	limitRows  = 10
	listCmd    = "ls -la /srv"
)

var db *sql.DB

// G201: fmt.Sprintf of request data, through local variables.
func g201(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	where := "WHERE name = '" + name + "'" // ward:expect sql-injection
	q := fmt.Sprintf("SELECT * FROM foo %s", where)
	rows, _ := db.Query(q) // reported where the request value joins the SQL (where, line 35)
	_ = rows
	sortBy := r.Header.Get("X-Sort")
	order := strings.ToLower(sortBy)
	db.QueryRow(fmt.Sprintf("SELECT id FROM foo ORDER BY %s", order))           // ward:expect sql-injection
	db.Exec(fmt.Sprintf("DELETE FROM foo WHERE id = %s", r.PostForm.Get("id"))) // ward:expect sql-injection
}

// G201 safe: constants, numbers and parameters.
func g201Safe(ctx context.Context, r *http.Request, id int) {
	db.Query(fmt.Sprintf("SELECT * FROM %s LIMIT %d", usersTable, limitRows))      // ward:ok
	db.Query(fmt.Sprintf("SELECT * FROM foo WHERE id = %d", id))                   // ward:ok
	db.QueryContext(ctx, "SELECT * FROM foo WHERE name = $1", r.FormValue("name")) // ward:ok
	n := strconv.Itoa(limitRows)
	db.Query("SELECT * FROM foo LIMIT " + n) // ward:ok
	table := "orders"
	db.Exec("DELETE FROM "+table+" WHERE id = ?", r.FormValue("id")) // ward:ok
	db.Query("SELECT * FROM foo LIMIT " + strconv.Itoa(id))          // ward:ok
}

// G202: concatenation, in one expression or over several statements.
func g202(ctx context.Context, conn *pgx.Conn, r *http.Request, status string) {
	q := "SELECT id FROM orders WHERE 1 = 1"
	if status != "" {
		q += " AND status = '" + status + "'" // ward:expect sql-injection
	}
	conn.Query(ctx, q)                                                                         // reported where status joins the query (line 61)
	stmt, _ := db.PrepareContext(ctx, "UPDATE foo SET seen = 1 WHERE id = "+r.FormValue("id")) // ward:expect sql-injection
	_ = stmt
	user := os.Args[1]
	db.Exec("INSERT INTO log (who) VALUES ('" + user + "')") // ward:expect sql-injection
}

// G202 safe: a condition added with placeholders.
func g202Safe(ctx context.Context, conn *pgx.Conn, status string) {
	q := "SELECT id FROM orders WHERE 1 = 1"
	args := []any{}
	if status != "" {
		q += " AND status = $1"
		args = append(args, status)
	}
	conn.Query(ctx, q, args...) // ward:ok
}

// G204: programs and arguments from outside.
func g204(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	exec.CommandContext(ctx, os.Args[0], "5").Run() // ward:expect shell-injection
	run := "sleep" + os.Getenv("SOMETHING")
	exec.Command(run, "5").Run() // ward:expect shell-injection
	file := r.FormValue("file")
	exec.Command("convert", file, "out.png").Run() // ward:expect shell-injection
	host := r.URL.Query().Get("host")
	cmd := "ping -c 1 " + host
	exec.Command("/bin/sh", "-c", cmd).Run() // ward:expect shell-injection
	http.HandleFunc("/run", func(w http.ResponseWriter, req *http.Request) {
		exec.Command("bash", "-c", req.FormValue("cmd")).Run() // ward:expect shell-injection
	})
}

// G204 safe: fixed programs, constant commands.
func g204Safe(ctx context.Context, dir string) {
	exec.Command("sleep", "5").Run()              // ward:ok
	exec.CommandContext(ctx, "sh", "-c", listCmd) // ward:ok
	script := "make build"
	exec.Command("sh", "-c", script).Run()         // ward:ok
	exec.Command("git", "-C", dir, "status").Run() // ward:ok
	exec.Command("ls", "-l", os.Args[1]).Run()     // ward:ok
}

// G401: MD5 and SHA-1 of passwords.
func g401(password string) string {
	h := sha1.New() // ward:expect weak-hash
	h.Write([]byte(password))
	sum := md5.Sum([]byte("salt" + password)) // ward:expect weak-hash
	return fmt.Sprintf("%x%x", h.Sum(nil), sum)
}

// G401 safe: checksums of data.
func g401Safe(data []byte) [16]byte {
	return md5.Sum(data) // ward:ok
}

// G402: certificate checks off.
func g402(insecure bool) *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	cfg.InsecureSkipVerify = true // ward:expect tls-verify-disabled
	tr := &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // ward:expect tls-verify-disabled
	}}
	_ = tr
	return &tls.Config{InsecureSkipVerify: false} // ward:ok
}
