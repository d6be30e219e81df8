package api

import (
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

var ErrInvalidToken = errors.New("invalid token")

const updatePassword = "UPDATE users SET password_hash = $1 WHERE id = $2"

func tokenFrom(r *http.Request) (string, error) {
	token := r.Header.Get("Authorization")
	token = strings.TrimPrefix(token, "Bearer ")
	if token == "" {
		return "", ErrInvalidToken
	}
	return token, nil
}

func setPassword(db *sql.DB, id int64, hash string) error {
	_, err := db.Exec(updatePassword, hash, id)
	return err
}

func tokenURL(base string) string {
	return fmt.Sprintf("%s/oauth/token", base)
}

func gravatar(email string) string {
	sum := md5.Sum([]byte(strings.ToLower(email)))
	return "https://www.gravatar.com/avatar/" + hex.EncodeToString(sum[:])
}

func passwordField(r *http.Request) string {
	return r.FormValue("password")
}
