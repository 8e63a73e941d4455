package earlysupervise

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// QB-5: only the gateway's own form of the command is run early; every
// other form is left to the command line and its usage messages.
func TestArgsQB5(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"toolgate", "_supervise", "--", "/bin/echo", "hi"}, []string{"/bin/echo", "hi"}},
		{[]string{"toolgate", "_supervise", "--", "cmd"}, []string{"cmd"}},
		{[]string{"toolgate", "_supervise", "--"}, nil},
		{[]string{"toolgate", "_supervise", "--", ""}, nil},
		{[]string{"toolgate", "_supervise", "--help"}, nil},
		{[]string{"toolgate", "_supervise", "cmd", "--"}, nil},
		{[]string{"toolgate", "serve", "--", "cmd"}, nil},
		{[]string{"toolgate"}, nil},
		{nil, nil},
	} {
		got, ok := Args(c.args)
		if ok != (c.want != nil) || !cmp.Equal(got, c.want) {
			t.Errorf("Args(%q) = %q, %v; want %q", c.args, got, ok, c.want)
		}
	}
}
