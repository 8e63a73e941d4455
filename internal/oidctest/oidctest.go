// Package oidctest runs panva's oidc-provider (testdata/peers/oidc-as.mjs)
// as a real authorization server for tests of toolgate as an OAuth client
// of its upstreams, and drives its login form as a person's browser would.
package oidctest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/internal/lab/peers"
)

// CallbackPath is the gateway's redirect URI path, where a Browser stops;
// ConnectPath its connect page's.
const (
	CallbackPath = "/upstream-oauth/callback"
	ConnectPath  = "/upstream-oauth/connect"
)

// Start runs the provider on loopback and returns its issuer; it dies with
// the test. env adds to its environment (ACCESS_TTL=seconds).
func Start(t testing.TB, env ...string) string {
	t.Helper()
	dir := peers.Dir(t)
	cmd := exec.Command(peers.Node(t), filepath.Join(dir, "oidc-as.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	p := peers.Start(t, cmd)
	t.Cleanup(func() { _ = stdin.Close() })
	lines := make(chan string, 1)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "LISTENING ") {
				lines <- strings.TrimPrefix(l, "LISTENING ")
			}
		}
	}()
	select {
	case iss, ok := <-lines:
		if !ok {
			t.Fatalf("oidc-provider ended before listening: %s", stderr.String())
		}
		return iss
	case <-p.Done():
		t.Fatalf("oidc-provider exited: %v\n%s", p.Err(), stderr.String())
	}
	return ""
}

// Browser is one person's browser: its own cookies, redirects followed
// except the one back to the gateway's callback, which tests open
// themselves.
func Browser(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Jar: jar, Transport: tr, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Path == CallbackPath {
			return http.ErrUseLastResponse
		}
		if len(via) > 20 {
			return errors.New("too many redirects")
		}
		return nil
	}}
}

var (
	formAction = regexp.MustCompile(`<form[^>]*action="([^"]+)"`)
	hiddenIn   = regexp.MustCompile(`<input[^>]*type="hidden"[^>]*name="([^"]+)"[^>]*value="([^"]*)"`)
)

// consentForm finds the gateway's connect page form: its action and hidden
// fields.
var consentForm = regexp.MustCompile(`<form method="post" action="([^"]+)">`)

// Connect opens a URL in b; a connect URL as a person does: the gateway's page
// that names the upstream and the actor, then its Continue button. It
// returns the last response and its page: the provider's login page, or
// the gateway's refusal (of the link, at either step, or of discovery).
func Connect(t testing.TB, b *http.Client, connectURL string) (*http.Response, []byte) {
	t.Helper()
	resp, err := b.Get(connectURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != ConnectPath {
		// A refusal, or a URL that was not a connect URL (an
		// authorization request of a test's own).
		return resp, body
	}
	m := consentForm.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no connect form on the gateway's page (%s):\n%s", resp.Request.URL, body)
	}
	action, _ := resp.Request.URL.Parse(string(m[1]))
	form := url.Values{}
	for _, h := range hiddenIn.FindAllSubmatch(body, -1) {
		form.Set(string(h[1]), string(h[2]))
	}
	resp, err = b.PostForm(action.String(), form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

// SignIn opens a connect URL in b, continues on the gateway's page, signs
// in at the provider's login form as user and returns the callback URL the
// provider redirects to, not yet opened.
func SignIn(t testing.TB, b *http.Client, connectURL, user string) string {
	t.Helper()
	resp, body := Connect(t, b, connectURL)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("connect URL answered %d: %s", resp.StatusCode, body)
	}
	var err error
	for range 3 {
		m := formAction.FindSubmatch(body)
		if m == nil {
			t.Fatalf("no form on the provider's page (%s):\n%s", resp.Request.URL, body)
		}
		action, _ := resp.Request.URL.Parse(string(m[1]))
		form := url.Values{"login": {user}, "password": {"any"}}
		for _, h := range hiddenIn.FindAllSubmatch(body, -1) {
			form.Set(string(h[1]), string(h[2]))
		}
		resp, err = b.PostForm(action.String(), form)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusSeeOther || resp.StatusCode == http.StatusFound {
			loc, _ := resp.Request.URL.Parse(resp.Header.Get("Location"))
			if loc.Path != CallbackPath {
				t.Fatalf("provider redirected to %s, not the callback", loc)
			}
			return loc.String()
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("provider answered %d at %s:\n%s", resp.StatusCode, resp.Request.URL, body)
		}
	}
	t.Fatalf("the provider never redirected to the callback")
	return ""
}

// Open GETs u in b and returns the status and page.
func Open(t testing.TB, b *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
