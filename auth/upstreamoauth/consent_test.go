package upstreamoauth_test

import (
	"context"
	"encoding/base64"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolgate/toolgate/auth/upstreamoauth"
	"github.com/toolgate/toolgate/core"
)

var (
	pageForm   = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	pageHidden = regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`)
)

// showPage GETs a connect URL in b, wants the connect page, and returns
// the URL its form posts to and the form's fields.
func showPage(t *testing.T, b *http.Client, connectURL string) (string, url.Values) {
	t.Helper()
	code, page := open(t, b, connectURL)
	m := pageForm.FindStringSubmatch(page)
	if code != http.StatusOK || m == nil {
		t.Fatalf("connect URL answered %d without the connect form: %s", code, page)
	}
	base, _ := url.Parse(connectURL)
	action, _ := base.Parse(html.UnescapeString(m[1]))
	form := url.Values{}
	for _, h := range pageHidden.FindAllStringSubmatch(page, -1) {
		form.Set(h[1], html.UnescapeString(h[2]))
	}
	if form.Get("t") == "" || form.Get("n") == "" {
		t.Fatalf("the connect form lacks the link or the nonce: %s", page)
	}
	return action.String(), form
}

// post sends the connect form as b, with extra headers, and returns the
// answer; a redirect is not followed.
func post(t *testing.T, b *http.Client, action string, form url.Values, hdr map[string]string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, action, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	nb := *b
	nb.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := nb.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// UI-2: a link previewer (a mail scanner, a chat unfurler) that fetches a
// connect URL, however often, gets the page and spends nothing: the person
// who opens the link afterwards still connects with it.
func TestPreviewDoesNotSpendLink(t *testing.T) {
	iss := startAS(t)
	res := startResource(t, iss)
	g := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{})
	u := g.M.ConnectURL("crm", "alice")

	for range 3 {
		code, page := open(t, http.DefaultClient, u)
		if code != http.StatusOK || !strings.Contains(page, "Connect your account on crm to toolgate for alice.") {
			t.Fatalf("preview answered %d: %s", code, page)
		}
	}
	resp, err := http.Head(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HEAD answered %d", resp.StatusCode)
	}
	if list, _ := g.M.Connections(context.Background()); len(list) != 0 {
		t.Fatalf("a preview stored a connection: %+v", list)
	}

	b := browser(t)
	cb := signIn(t, b, u, "alice")
	if code, page := open(t, b, cb); code != http.StatusOK || !strings.Contains(page, "Connected") {
		t.Fatalf("callback after previews answered %d: %s", code, page)
	}
	list, _ := g.M.Connections(context.Background())
	if len(list) != 1 || list[0].ActorID != "alice" {
		t.Fatalf("connections = %+v, want alice's", list)
	}
	// Spent by the sign-in, the link's page now says so.
	if code, page := open(t, http.DefaultClient, u); code != http.StatusBadRequest || !strings.Contains(page, "already used") {
		t.Fatalf("used link answered %d: %s", code, page)
	}
}

// UI-2: the connect page names the upstream and the actor the account will
// act for, tells a person who did not ask to close it, and escapes what it
// names: an actor id with markup in it shows as text.
func TestConnectPageNamesActorEscaped(t *testing.T) {
	g := startGateway(t, []upstreamoauth.Upstream{{Name: "crm", URL: "http://127.0.0.1:1/mcp?a=1&b=<i>", Credentials: upstreamoauth.PerActor}}, gatewayOptions{})

	t.Run("actor", func(t *testing.T) {
		code, page := open(t, http.DefaultClient, g.M.ConnectURL("crm", "alice"))
		for _, want := range []string{
			"Connect your account on crm to toolgate for alice.",
			"Continue only if you are alice and you asked for this; if someone sent you this link, close this page.",
			"http://127.0.0.1:1/mcp?a=1&amp;b=&lt;i&gt;",
		} {
			if code != http.StatusOK || !strings.Contains(page, want) {
				t.Fatalf("page (%d) lacks %q:\n%s", code, want, page)
			}
		}
	})
	t.Run("markup in the actor id", func(t *testing.T) {
		evil := `<script>alert(1)</script>"x`
		code, page := open(t, http.DefaultClient, g.M.ConnectURL("crm", evil))
		if code != http.StatusOK || strings.Contains(page, "<script>") || strings.Contains(page, `</script>"x`) {
			t.Fatalf("page (%d) carries the actor id unescaped:\n%s", code, page)
		}
		if !strings.Contains(page, "for &lt;script&gt;alert(1)&lt;/script&gt;&#34;x.") {
			t.Fatalf("page does not name the actor, escaped:\n%s", page)
		}
	})
	t.Run("shared", func(t *testing.T) {
		code, page := open(t, http.DefaultClient, g.M.ConnectURL("crm", core.SharedActor))
		if code != http.StatusOK || !strings.Contains(page, "the account on crm that toolgate shares") ||
			!strings.Contains(page, "Continue only if you are the operator of this gateway") {
			t.Fatalf("shared page (%d):\n%s", code, page)
		}
	})
}

// UI-2: the connect page, and every refusal of the routes, cannot be
// framed (no clickjacking of the Continue button), cached, scripted or
// leak the link through a referrer.
func TestConnectPageCannotBeFramed(t *testing.T) {
	g := startGateway(t, []upstreamoauth.Upstream{{Name: "crm", URL: "http://127.0.0.1:1/mcp", Credentials: upstreamoauth.PerActor}}, gatewayOptions{})
	for name, u := range map[string]string{
		"page":    g.M.ConnectURL("crm", "alice"),
		"refusal": g.URL + upstreamoauth.Path + "/connect?t=forged.link",
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := http.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			h := resp.Header
			csp := h.Get("Content-Security-Policy")
			for _, want := range []string{"frame-ancestors 'none'", "default-src 'none'", "base-uri 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			for k, want := range map[string]string{"X-Frame-Options": "DENY", "Cache-Control": "no-store",
				"Referrer-Policy": "no-referrer", "X-Content-Type-Options": "nosniff", "Content-Type": "text/html; charset=utf-8"} {
				if got := h.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// UI-2: the connect POST refuses a forged, moved, expired, used or missing
// link, and one not sent by the gateway's own page (another site's form in
// the person's browser, which would skip the page), each with a page that
// names it; nothing is stored, nothing is redirected, and a refusal that is
// not the link's fault leaves the link working.
func TestConnectPostRefused(t *testing.T) {
	iss := startAS(t)
	res := startResource(t, iss)
	g := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{})
	other := startGateway(t, []upstreamoauth.Upstream{crm(res)}, gatewayOptions{key: []byte(strings.Repeat("o", 32))})
	esc := func(err error) string { return html.EscapeString(err.Error()) }

	refused := func(t *testing.T, code int, loc, page string, want error) {
		t.Helper()
		if code != http.StatusBadRequest || loc != "" || !strings.Contains(page, esc(want)) {
			t.Fatalf("answered %d (Location %q) %q, want 400 with %q", code, loc, page, want)
		}
		if list, _ := g.M.Connections(context.Background()); len(list) != 0 {
			t.Fatalf("stored after a refusal: %+v", list)
		}
	}
	// stillWorks: the refused POST did not spend the link.
	stillWorks := func(t *testing.T, u string) {
		t.Helper()
		b := browser(t)
		if code, page := open(t, b, signIn(t, b, u, "alice")); code != http.StatusOK || !strings.Contains(page, "Connected") {
			t.Fatalf("the link no longer works: %d %s", code, page)
		}
		for _, c := range func() []core.Connection { l, _ := g.M.Connections(context.Background()); return l }() {
			if _, err := g.M.Disconnect(context.Background(), "crm", c.ActorID); err != nil {
				t.Fatal(err)
			}
		}
	}

	t.Run("forged link", func(t *testing.T) {
		b := browser(t)
		action, form := showPage(t, b, g.M.ConnectURL("crm", "alice"))
		forged, _ := url.ParseQuery(strings.SplitN(other.M.ConnectURL("crm", "alice"), "?", 2)[1])
		form.Set("t", forged.Get("t"))
		code, loc, page := post(t, b, action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrConnectLink)
	})
	t.Run("link moved to another actor", func(t *testing.T) {
		b := browser(t)
		action, form := showPage(t, b, g.M.ConnectURL("crm", "alice"))
		body, sig, _ := strings.Cut(form.Get("t"), ".")
		p, _ := base64.RawURLEncoding.DecodeString(body)
		form.Set("t", base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(p), `"a":"alice"`, `"a":"mallory"`, 1)))+"."+sig)
		code, loc, page := post(t, b, action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrConnectLink)
	})
	t.Run("missing link", func(t *testing.T) {
		b := browser(t)
		action, form := showPage(t, b, g.M.ConnectURL("crm", "alice"))
		form.Del("t")
		code, loc, page := post(t, b, action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrConnectLink)
	})
	t.Run("link expired on the page", func(t *testing.T) {
		b := browser(t)
		action, form := showPage(t, b, g.M.ConnectURL("crm", "alice"))
		g.clock.advance(11 * time.Minute)
		defer g.clock.advance(-11 * time.Minute)
		code, loc, page := post(t, b, action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrConnectExpired)
	})
	t.Run("link used in another tab", func(t *testing.T) {
		u := g.M.ConnectURL("crm", "alice")
		b := browser(t)
		action, form := showPage(t, b, u)
		_ = signIn(t, browser(t), u, "alice")
		code, loc, page := post(t, b, action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrConnectUsed)
		// A form posted twice: the second is refused too.
		_, form2 := showPage(t, b, g.M.ConnectURL("crm", "alice"))
		code, loc, _ = post(t, b, action, form2, nil)
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, iss) {
			t.Fatalf("a fresh link answered %d %q, want 303 to the provider", code, loc)
		}
		code, loc, page = post(t, b, action, form2, nil)
		refused(t, code, loc, page, upstreamoauth.ErrConnectUsed)
	})
	t.Run("another site's form, no page cookie", func(t *testing.T) {
		u := g.M.ConnectURL("crm", "alice")
		action, form := showPage(t, browser(t), u)
		code, loc, page := post(t, browser(t), action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrCrossSite)
		stillWorks(t, u)
	})
	t.Run("another site's form, wrong nonce", func(t *testing.T) {
		u := g.M.ConnectURL("crm", "alice")
		b := browser(t)
		action, form := showPage(t, b, u)
		form.Set("n", strings.Repeat("0", len(form.Get("n"))))
		code, loc, page := post(t, b, action, form, nil)
		refused(t, code, loc, page, upstreamoauth.ErrCrossSite)
		stillWorks(t, u)
	})
	for name, hdr := range map[string]map[string]string{
		"browser says cross-site": {"Sec-Fetch-Site": "cross-site"},
		"browser says same-site":  {"Sec-Fetch-Site": "same-site"},
		"origin of another site":  {"Origin": "https://evil.example.com"},
	} {
		t.Run(name, func(t *testing.T) {
			u := g.M.ConnectURL("crm", "alice")
			b := browser(t)
			action, form := showPage(t, b, u)
			code, loc, page := post(t, b, action, form, hdr)
			refused(t, code, loc, page, upstreamoauth.ErrCrossSite)
			stillWorks(t, u)
		})
	}
	t.Run("the page's own form", func(t *testing.T) {
		b := browser(t)
		action, form := showPage(t, b, g.M.ConnectURL("crm", "alice"))
		code, loc, _ := post(t, b, action, form, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": g.URL})
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, iss) {
			t.Fatalf("answered %d %q, want 303 to the provider", code, loc)
		}
	})
	t.Run("GET never starts the flow", func(t *testing.T) {
		code, page := open(t, browser(t), g.M.ConnectURL("crm", "alice"))
		if code != http.StatusOK || strings.Contains(page, iss) {
			t.Fatalf("GET answered %d and names the provider: %s", code, page)
		}
	})
	assertNoLeak(t, g)
}
