package repo

import "github.com/ward-run/ward/modules/internal/repo/leaks"

// The tests scan with gitleaks' rules, as repo-sast and repo-report do.
func init() { UseKnownSecrets(leaks.Rules{}) }
