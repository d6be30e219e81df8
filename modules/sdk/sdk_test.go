package sdk_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/sdk"
)

func TestRunLocal(t *testing.T) {
	upper := func(j *sdk.Job) error {
		in, err := io.ReadAll(j.Reader())
		if err != nil {
			return err
		}
		if len(in) == 0 {
			return errors.New("nothing to shout")
		}
		j.Logf("shouting %d bytes", len(in))
		return j.WriteJSON(map[string]string{"out": strings.ToUpper(string(in)), "job": j.Info().ID})
	}
	var log strings.Builder
	out, err := sdk.RunLocal(upper, []byte("hey"), sdk.WithInfo(sdk.Info{ID: "j1"}), sdk.WithLog(&log))
	if err != nil || string(out) != `{"job":"j1","out":"HEY"}`+"\n" || log.String() != "info: shouting 3 bytes\n" {
		t.Fatalf("%q, %v, log %q", out, err, log.String())
	}
	if _, err := sdk.RunLocal(upper, nil); err == nil || err.Error() != "nothing to shout" || sdk.IsRefused(err) {
		t.Fatalf("failure: %v (refused: %v)", err, sdk.IsRefused(err))
	}
}

// TestRefuse: an error made with Refuse, or a payload DecodeJSON cannot
// read, is a refusal (input_refused: the job is not tried again), and the
// message is the handler's.
func TestRefuse(t *testing.T) {
	wantObject := func(j *sdk.Job) error {
		var v struct{ Dir string }
		if err := j.DecodeJSON(&v); err != nil {
			return err
		}
		if v.Dir == "" {
			return sdk.Refuse(fmt.Errorf("no dir: send {\"dir\": ...}"))
		}
		return errors.New("the disk is busy")
	}
	for in, want := range map[string]struct {
		msg     string
		refused bool
	}{
		"[1]":           {"input is not the JSON expected", true},
		"{}":            {"no dir: send", true},
		`{"dir": "/x"}`: {"the disk is busy", false},
	} {
		_, err := sdk.RunLocal(wantObject, []byte(in))
		if err == nil || !strings.Contains(err.Error(), want.msg) || sdk.IsRefused(err) != want.refused {
			t.Errorf("%s: %v (refused: %v), want %q refused %v", in, err, sdk.IsRefused(err), want.msg, want.refused)
		}
	}
	if sdk.Refuse(nil) != nil {
		t.Error("Refuse(nil) is not nil")
	}
}

func TestParseChatRequest(t *testing.T) {
	for in, want := range map[string]string{`{"message": "hi"}`: "hi", "  plain text \n": "plain text"} {
		if got, err := sdk.ParseChatRequest([]byte(in)); err != nil || got.Message != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "{}", `{"message": 1}`} {
		if _, err := sdk.ParseChatRequest([]byte(in)); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

func TestHostError(t *testing.T) {
	for errno, want := range map[int32]error{-1: sdk.ErrInvalid, -2: sdk.ErrNotGranted, -3: sdk.ErrLimit, -4: sdk.ErrFailed, -5: sdk.ErrNoJob} {
		err := error(&sdk.HostError{Op: "http_request", Errno: errno, Message: "m"})
		if !errors.Is(err, want) {
			t.Errorf("errno %d is not %v", errno, want)
		}
	}
}
