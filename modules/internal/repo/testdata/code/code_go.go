package code

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net/http"
	"os/exec"
)

const table = "users"

func handler(db *sql.DB, w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	db.Query("SELECT * FROM users WHERE id = " + id)                             // ward:expect sql-injection
	q := fmt.Sprintf("DELETE FROM users WHERE name = '%s'", r.FormValue("name")) // ward:expect sql-injection
	db.Exec(q)                                                                   // reported on the line above, where q is built
	exec.Command("sh", "-c", "ls "+id).Run()                                     // ward:expect shell-injection
	_ = &tls.Config{InsecureSkipVerify: true}                                    // ward:expect tls-verify-disabled
}

func hashPassword(password string) []byte {
	sum := md5.Sum([]byte(password)) // ward:expect weak-hash
	return sum[:]
}

func storePw(u *User, pw string) {
	h := sha1.Sum([]byte(pw))           // ward:expect weak-hash
	u.SetPassword(fmt.Sprintf("%x", h)) // reported on the line above
}

func ok(db *sql.DB, r *http.Request, data []byte) {
	db.Query("SELECT * FROM users WHERE id = $1", r.URL.Query().Get("id")) // ward:ok
	db.Query(fmt.Sprintf("SELECT * FROM %s WHERE id = $1", table), 1)      // ward:ok
	exec.Command("sh", "-c", "ls -l").Run()                                // ward:ok
	_ = md5.Sum(data)                                                      // ward:ok
	_ = &tls.Config{InsecureSkipVerify: false}                             // ward:ok
}

type User struct{}

func (u *User) SetPassword(string) {}
