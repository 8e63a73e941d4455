package postgres

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultSchema holds toolgate's tables unless the DSN names another with
// ?schema=NAME, so one database can be shared with other applications (or
// with several toolgate deployments, one schema each).
const DefaultSchema = "toolgate"

// connectTimeout bounds a connection attempt unless the DSN sets
// connect_timeout: a server that does not answer must not hold an action
// call for long, the call is refused within seconds (CF-3).
const connectTimeout = 5 * time.Second

// defaultMaxConns is the pool size unless the DSN sets pool_max_conns:
// enough for concurrent ledger writes beside the audit flusher.
const defaultMaxConns = 8

var schemaName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`) })

// IsDSN reports whether spec names a PostgreSQL store.
func IsDSN(spec string) bool {
	return strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://")
}

// dsn is a parsed store URL.
type dsn struct {
	pool   *pgxpool.Config
	schema string
	// label names the store in messages: the URL without its password or
	// query, with the schema.
	label string
	// secrets are the password spellings that must never reach a message.
	secrets []string
}

// parseDSN reads spec. Its errors never carry the password, nor the URL.
func parseDSN(spec string) (*dsn, error) {
	if !IsDSN(spec) {
		return nil, errors.New("store: not a postgres:// or postgresql:// URL")
	}
	u, err := url.Parse(spec)
	if err != nil {
		// url's errors quote the whole URL, password included.
		return nil, errors.New("store: the PostgreSQL URL does not parse as a URL (check its quoting: a password with @ : / ? # % must be percent-encoded)")
	}
	d := &dsn{schema: DefaultSchema}
	if u.User != nil {
		if pw, has := u.User.Password(); has && pw != "" {
			d.secrets = append(d.secrets, pw, url.QueryEscape(pw), url.PathEscape(pw))
		}
	}
	q := u.Query()
	if pw := q.Get("password"); pw != "" {
		d.secrets = append(d.secrets, pw, url.QueryEscape(pw))
	}
	// schema is ours, not a server setting: taken off before pgx, which
	// would send it to the server as one.
	if q.Has("schema") {
		d.schema = q.Get("schema")
		q.Del("schema")
		u.RawQuery = q.Encode()
	}
	if !schemaName().MatchString(d.schema) {
		return nil, fmt.Errorf("store: schema %q: must be 1 to 63 of a-z, 0-9 and _, not starting with a digit", d.schema)
	}
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		return nil, fmt.Errorf("store: invalid PostgreSQL URL: %s", d.redact(err.Error()))
	}
	if !q.Has("connect_timeout") {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	if !q.Has("pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	d.pool = cfg
	host := cfg.ConnConfig.Host
	if !strings.HasPrefix(host, "/") {
		host = net.JoinHostPort(host, strconv.Itoa(int(cfg.ConnConfig.Port)))
	}
	user := ""
	if cfg.ConnConfig.User != "" {
		user = cfg.ConnConfig.User + "@"
	}
	d.label = fmt.Sprintf("postgres://%s%s/%s (schema %s)", user, host, cfg.ConnConfig.Database, d.schema)
	return d, nil
}

// redact replaces every spelling of the password in s.
func (d *dsn) redact(s string) string {
	for _, pw := range d.secrets {
		if pw != "" {
			s = strings.ReplaceAll(s, pw, "•••")
		}
	}
	return s
}
