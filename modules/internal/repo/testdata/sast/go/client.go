package client

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/tls"
	"encoding/hex"
	"io"
	"net/http"
)

func insecureClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{
			InsecureSkipVerify: true, // ward:expect tls-verify-disabled
		},
	}}
}

func strictClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: false, MinVersion: tls.VersionTLS12},
	}}
}

func hashPassword(password string) string {
	h := md5.New() // ward:expect weak-hash
	io.WriteString(h, password)
	return hex.EncodeToString(h.Sum(nil))
}

func legacyToken(user, pw string) [20]byte {
	return sha1.Sum([]byte(user + ":" + pw)) // ward:expect weak-hash
}

func etag(body []byte) string {
	sum := md5.Sum(body)
	return hex.EncodeToString(sum[:])
}

func fileID(r io.Reader) ([]byte, error) {
	h := sha1.New()
	if _, err := io.Copy(h, r); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
