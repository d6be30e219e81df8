package tools

import (
	"context"
	"fmt"
	"os/exec"
)

func extract(name string) error {
	return exec.Command("sh", "-c", "tar xzf "+name).Run() // ward:expect shell-injection
}

func archive(ctx context.Context, dir, out string) error {
	cmd := exec.CommandContext(ctx, "bash", "-c", // ward:expect shell-injection
		fmt.Sprintf("tar czf %s -C %s .", out, dir))
	return cmd.Run()
}

func gitLog(ref string) ([]byte, error) {
	return exec.Command("git", "log", "--oneline", ref).Output()
}

func build() error {
	return exec.Command("sh", "-c", "make build").Run()
}
