package config

import (
	"strings"
	"testing"
)

// OP-5, IM-5: gateway.store takes a file path or a postgres:// or
// postgresql:// URL; anything else with a scheme is refused naming the key,
// and no message or dump shows the URL's password.
func TestStoreURLOP5(t *testing.T) {
	const pw = "pg-SECRET-pass"
	for _, ok := range []string{
		"postgres://tg:" + pw + "@db.example.com:5432/toolgate?sslmode=require",
		"postgresql://tg@db.example.com/toolgate?schema=tg_prod",
		"postgres:///toolgate?host=/var/run/postgresql",
	} {
		p := writeConfig(t, "gateway:\n  store: '"+ok+"'\n")
		cfg, _ := mustLoad(t, p, nil)
		if cfg.Gateway.Store != ok {
			t.Errorf("store = %q, want %q kept as written", cfg.Gateway.Store, ok)
		}
		dump, err := Dump(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(dump), pw) || !strings.Contains(string(dump), "db.example.com") && strings.Contains(ok, "db.example.com") {
			t.Errorf("dump of %q:\n%s\nwant the password shown as %s and the host kept", ok, dump, Redacted)
		}
		if strings.Contains(ok, pw) && !strings.Contains(string(dump), "tg:"+Redacted+"@db.example.com") {
			t.Errorf("dump of %q does not show the password as %s:\n%s", ok, Redacted, dump)
		}
	}
	for value, want := range map[string]string{
		"https://tg:" + pw + "@db.example.com/x":                    `unsupported URL scheme "https"`,
		"postgres://tg:" + pw + "@[::1/toolgate":                    "not a valid PostgreSQL URL",
		"postgres://tg:" + pw + "@db.example.com/toolgate?schema=A": `schema "A"`,
	} {
		p := writeConfig(t, "gateway:\n  store: '"+value+"'\n")
		_, _, err := Load(p, optionsFor(nil))
		if err == nil || !strings.Contains(err.Error(), "gateway.store") || !strings.Contains(err.Error(), want) {
			t.Errorf("store %q: %v; want an error at gateway.store saying %s", value, err, want)
		}
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("the password is in the error: %v", err)
		}
	}
	if got := RedactStore("postgres://tg@h/db?password=" + pw); strings.Contains(got, pw) {
		t.Errorf("RedactStore with ?password= = %q", got)
	}
}
