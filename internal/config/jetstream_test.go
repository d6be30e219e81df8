package config

import "testing"

func TestJetStreamReplicas(t *testing.T) {
	t.Setenv("WARD_JS_REPLICAS", "")
	if n := JetStreamReplicas(); n != 1 {
		t.Errorf("default: %d, want 1", n)
	}
	t.Setenv("WARD_JS_REPLICAS", "3")
	if n := JetStreamReplicas(); n != 3 {
		t.Errorf("WARD_JS_REPLICAS=3: %d", n)
	}
	t.Setenv("WARD_JS_REPLICAS", "9")
	if n := JetStreamReplicas(); n != 1 {
		t.Errorf("WARD_JS_REPLICAS=9 (out of range): %d, want 1", n)
	}
	if err := SetJetStreamReplicas(0); err == nil {
		t.Error("0 replicas accepted")
	}
}
