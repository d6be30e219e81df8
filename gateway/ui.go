package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

const sessionCookie = "ward_session"

func csrfToken(key string) string {
	h := sha256.Sum256([]byte(key))
	m := hmac.New(sha256.New, h[:])
	m.Write([]byte("ward dashboard csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) csrfOK(r *http.Request, key string) bool {
	got := r.Header.Get("X-CSRF-Token")
	return got != "" && hmac.Equal([]byte(got), []byte(csrfToken(key)))
}

func (s *Server) routesUI() {}
