package code

import (
	"crypto/md5"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"os/exec"
)

func run(name string, args []string) error {
	return exec.Command("bash", "-c", name).Run() // ward:expect shell-injection
}

func runFixed() error {
	return exec.Command("git", "status").Run() // ward:ok
}

func search(db *sql.DB, r *http.Request) {
	name := r.FormValue("name")
	db.QueryRow(fmt.Sprintf("SELECT id FROM users WHERE name = '%s'", name)) // ward:expect sql-injection
	db.Exec("UPDATE users SET name = '" + os.Getenv("NAME") + "'")           // ward:expect sql-injection
	db.QueryRow("SELECT id FROM users WHERE name = ?", name)                 // ward:ok
	col := "name"
	db.Query("SELECT " + col + " FROM users") // ward:ok
}

func passwordHash(pass string) string {
	h := md5.New() // ward:expect weak-hash
	h.Write([]byte(pass))
	return fmt.Sprintf("%x", h.Sum(nil))
}

func fileHash(data []byte) string {
	h := md5.New() // ward:ok
	h.Write(data)
	return fmt.Sprintf("%x", h.Sum(nil))
}
