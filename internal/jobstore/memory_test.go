package jobstore_test

import (
	"testing"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) jobstore.Store { return jobstore.NewMemory() })
}
