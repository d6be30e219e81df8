package main

import (
	"crypto/md5"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
)

func main() {
	dir := os.Args[1]
	out, _ := exec.Command("sh", "-c", "ls "+dir).Output()
	fmt.Printf("%x\n", md5.Sum(out))
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	_ = tr
	_ = exec.Command("ls", "-l", dir)
}
