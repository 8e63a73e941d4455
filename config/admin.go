package config

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// The admin API's settings that the file spells (CO-9). They are config
// facts, so config owns them and the admin package reads them from here.
const (
	// AdminDefaultListen is gateway.admin.listen's default.
	AdminDefaultListen = "127.0.0.1:7332"
	// AdminUnixPrefix marks a unix socket path, in gateway.admin.listen and
	// in --attach ("unix:/run/toolgate/admin.sock").
	AdminUnixPrefix = "unix:"
	// AdminMinKeyLength is the shortest admin key accepted.
	AdminMinKeyLength = 16
)

// Admin is the admin API (CO-9): its own listener, for `toolgate console
// --attach` and the headless operator commands. Absent means no admin
// listener.
type Admin struct {
	// Listen is host:port or unix:/path; AdminDefaultListen when empty.
	Listen string     `koanf:"listen" json:"listen" yaml:"listen"`
	Keys   []AdminKey `koanf:"keys" json:"keys" yaml:"keys"`
}

// AdminKey is one admin key and the operator the audit and the other
// consoles name for it.
type AdminKey struct {
	Key      Secret `koanf:"key" json:"key" yaml:"key"`
	Operator string `koanf:"operator" json:"operator" yaml:"operator"`
}

// UnixSocket is the socket path of a unix:/path listen address, or "".
func (a Admin) UnixSocket() string {
	if p, ok := strings.CutPrefix(a.Listen, AdminUnixPrefix); ok {
		return p
	}
	return ""
}

// IsLoopback reports whether the admin API is reachable from this machine
// only: a unix socket or a loopback TCP address.
func (a Admin) IsLoopback() bool {
	if a.UnixSocket() != "" {
		return true
	}
	host, _, err := net.SplitHostPort(a.Listen)
	return err == nil && IsLoopbackHost(host)
}

func (a *Admin) setDefaults() {
	setIfZero(&a.Listen, AdminDefaultListen)
}

// admin validates gateway.admin; it runs after the endpoints, whose API
// keys the admin keys must differ from.
func (v *validator) admin() {
	a := v.c.Gateway.Admin
	if a == nil {
		return
	}
	const p = "gateway.admin"
	if sock := a.UnixSocket(); sock != "" || strings.HasPrefix(a.Listen, AdminUnixPrefix) {
		if sock == "" || !filepath.IsAbs(sock) {
			v.fail(p+".listen", "a unix socket needs an absolute path, such as unix:/run/toolgate/admin.sock")
		}
	} else if host, port, err := net.SplitHostPort(a.Listen); err != nil || strings.ContainsAny(host, " /") {
		v.fail(p+".listen", "must be host:port, such as %s, or unix:/path", AdminDefaultListen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.fail(p+".listen", "port must be a number from 0 to 65535")
	} else {
		if a.Listen == v.c.Gateway.Listen && n != 0 {
			v.fail(p+".listen", "is the MCP listen address (gateway.listen); the admin API needs a listener of its own")
		}
		if !IsLoopbackHost(host) {
			v.warn(p+".listen", "%q is reachable from other machines: anyone with an admin key can approve calls and end sessions; prefer 127.0.0.1 or a unix socket behind an authenticated proxy", a.Listen)
		}
	}
	if len(a.Keys) == 0 {
		v.fail(p+".keys", "must list at least one key (key and operator)")
	}
	seen := map[string]string{}
	for i, k := range a.Keys {
		kp := fmt.Sprintf("%s.keys[%d]", p, i)
		key := k.Key.Reveal()
		switch {
		case key == "":
			v.fail(kp+".key", "required, e.g. key: ${TOOLGATE_ADMIN_KEY}")
		case len(key) < AdminMinKeyLength:
			v.fail(kp+".key", "must be at least %d characters long: use a long random key", AdminMinKeyLength)
		case strings.ContainsAny(key, "\r\n\t "):
			v.fail(kp+".key", "contains white space or a line break")
		case seen[key] != "":
			v.fail(kp+".key", "same key as %s: each key names one operator", seen[key])
		case v.keys[key] != "":
			v.fail(kp+".key", "same key as %s: admin keys must differ from the endpoints' client keys", v.keys[key])
		default:
			seen[key] = kp + ".key"
		}
		if strings.TrimSpace(k.Operator) == "" {
			v.fail(kp+".operator", "required: the name the audit and the other consoles show")
		}
	}
}
