package serve_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core/confirm"
)

// CF-7, CF-5: the configured waiting text is the message of the progress
// notifications a waiting call receives, and the configured rejection
// text what it answers, each with {tool}, {upstream}, {operator} and
// {reason} filled and no argument value in it.
func TestOperatorConfiguredMessages(t *testing.T) {
	s := serveOperatorSaying(t, 0, confirm.ConfirmMessages{
		Waiting:  "{tool} auf {upstream} wartet auf Freigabe",
		Rejected: "{operator} hat {tool} auf {upstream} abgelehnt: {reason}",
	})
	c := testClient(s.url, "m", "MEMBER")
	initialize(t, c)
	const id = 48213
	token := s.previewDelete(t, c, id)

	msgs, _ := startConfirm(t, c, id, token, "op-progress-cf7")
	p := s.waitPending(t)
	m, ok := next(t, msgs)
	if !ok {
		t.Fatal("the response ended before the operator decided")
	}
	var method string
	_ = json.Unmarshal(m.msg["method"], &method)
	var progress struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(m.msg["params"], &progress); method != "notifications/progress" || err != nil ||
		progress.Message != "gh_delete auf gh wartet auf Freigabe" {
		t.Fatalf("progress while waiting: %v (message %q, %v)", m.msg, progress.Message, err)
	}
	if err := s.queue.Reject(p.ID, "operator-2", "nicht freitags"); err != nil {
		t.Fatal(err)
	}
	text, isErr := callResult(t, msgs)
	if want := "operator-2 hat gh_delete auf gh abgelehnt: nicht freitags"; !isErr || text != want {
		t.Fatalf("after the rejection: %q (isError %v), want %q", text, isErr, want)
	}
	if strings.Contains(text+progress.Message, "48213") || strings.Contains(text+progress.Message, token) {
		t.Errorf("a message carries the argument or the token: %q / %q", text, progress.Message)
	}
	s.checkNothingRan(t, "after the rejection")
}
