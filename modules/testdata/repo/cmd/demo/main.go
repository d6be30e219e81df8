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
	dir, password := os.Args[1], os.Args[2]
	out, _ := exec.Command("sh", "-c", "ls "+dir).Output()
	fmt.Printf("%s %x\n", out, md5.Sum([]byte(password)))
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	_ = tr
	_ = exec.Command("ls", "-l", dir)
}
