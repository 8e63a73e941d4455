package auditchain

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/canonjson"
)

// appendRecord appends the canonical JSON of r, the bytes its chain hash
// covers (OP-10): canonjson.CanonicalJSON of json.Marshal(r), written
// directly for the record's known fields rather than encoded and then
// parsed, sorted and encoded again. The flusher hashes every record; this
// is most of the chain's cost per record. A test holds it to the generic
// encoding over generated records (hostile strings, every field), and
// recordFields to core.AuditRecord's fields, so a field added there fails
// the test until it is added here.
func appendRecord(b []byte, r *core.AuditRecord) ([]byte, error) {
	if !plainTime(r.Time) {
		return appendRecordGeneric(b, r)
	}
	// Members in the order of their keys' bytes; omitempty ones only when
	// not empty, as json.Marshal writes them.
	b = append(b, '{')
	b = appendMember(b, `"actorId":`, r.ActorID, false)
	b = appendMember(b, `,"argsHash":`, r.ArgsHash, true)
	b = appendMember(b, `,"callId":`, r.CallID, true)
	b = appendMember(b, `,"confirmTokenId":`, r.ConfirmTokenID, true)
	b = appendMember(b, `,"connection":`, r.Connection, true)
	b = appendMember(b, `,"endpoint":`, r.Endpoint, false)
	b = appendMember(b, `,"findings":`, r.Findings, true)
	b = append(b, `,"latency":`...)
	b = strconv.AppendInt(b, int64(r.Latency), 10)
	b = appendMember(b, `,"outcome":`, r.Outcome, false)
	b = appendMember(b, `,"remoteName":`, r.RemoteName, true)
	b = appendMember(b, `,"rule":`, r.Rule, true)
	b = appendMember(b, `,"session":`, r.Session, true)
	b = appendMember(b, `,"source":`, r.Source, true)
	b = appendMember(b, `,"tenant":`, r.Tenant, true)
	b = append(b, `,"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendMember(b, `,"tool":`, r.Tool, false)
	b = appendMember(b, `,"via":`, r.Via, true)
	return append(b, '}'), nil
}

// recordFields is the JSON keys appendRecord writes, for the test that
// compares them with core.AuditRecord's.
var recordFields = []string{"actorId", "argsHash", "callId", "confirmTokenId", "connection", "endpoint", "findings",
	"latency", "outcome", "remoteName", "rule", "session", "source", "tenant", "time", "tool", "via"}

// plainTime reports whether t's JSON is its RFC 3339 form as AppendFormat
// writes it: a year json.Marshal accepts and a zone offset of whole
// minutes (a stored record's time is UTC).
func plainTime(t time.Time) bool {
	_, off := t.Zone()
	y := t.Year()
	return y >= 0 && y <= 9999 && off%60 == 0
}

// appendRecordGeneric is appendRecord by encoding/json and canonjson, for
// what the direct path leaves to them.
func appendRecordGeneric(b []byte, r *core.AuditRecord) ([]byte, error) {
	raw, err := json.Marshal(r)
	if err != nil {
		return b, err
	}
	canon, err := canonjson.CanonicalJSON(raw)
	if err != nil {
		return b, err
	}
	return append(b, canon...), nil
}

func appendMember(b []byte, key, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return b
	}
	return appendString(append(b, key...), v, false)
}

// appendExportLine appends the JSON line audit.export writes for r and its
// link, without the newline: json.Marshal(ExportLine{r, l}) byte for byte
// (members in the struct's order, encoding/json's HTML escapes), written
// directly. A test holds it to json.Marshal over generated records.
func appendExportLine(b []byte, r *core.AuditRecord, l *Link) ([]byte, error) {
	if !plainTime(r.Time) {
		line, err := json.Marshal(ExportLine{AuditRecord: *r, Link: *l})
		return append(b, line...), err
	}
	m := func(b []byte, key, v string, omitEmpty bool) []byte {
		if omitEmpty && v == "" {
			return b
		}
		return appendString(append(b, key...), v, true)
	}
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = m(b, `,"endpoint":`, r.Endpoint, false)
	b = m(b, `,"actorId":`, r.ActorID, false)
	b = m(b, `,"tenant":`, r.Tenant, true)
	b = m(b, `,"session":`, r.Session, true)
	b = m(b, `,"tool":`, r.Tool, false)
	b = m(b, `,"source":`, r.Source, true)
	b = m(b, `,"remoteName":`, r.RemoteName, true)
	b = m(b, `,"argsHash":`, r.ArgsHash, true)
	b = m(b, `,"outcome":`, r.Outcome, false)
	b = append(b, `,"latency":`...)
	b = strconv.AppendInt(b, int64(r.Latency), 10)
	b = m(b, `,"confirmTokenId":`, r.ConfirmTokenID, true)
	b = m(b, `,"callId":`, r.CallID, true)
	b = m(b, `,"rule":`, r.Rule, true)
	b = m(b, `,"connection":`, r.Connection, true)
	b = m(b, `,"via":`, r.Via, true)
	b = m(b, `,"findings":`, r.Findings, true)
	b = m(b, `,"chain":`, l.Chain, false)
	b = append(b, `,"chainSeq":`...)
	b = strconv.AppendInt(b, l.Seq, 10)
	b = m(b, `,"hash":`, l.Hash, false)
	return append(b, '}'), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as canonjson writes a string json.Marshal wrote:
// encoding/json's escapes without the HTML ones, and each byte that is
// not UTF-8 as U+FFFD (json.Marshal's \ufffd, decoded and written again).
// With html, as json.Marshal writes it: <, > and & escaped too, and a
// byte that is not UTF-8 as the escape \ufffd.
func appendString(b []byte, s string, html bool) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&') {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			if html {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, "\uFFFD"...)
			}
		case r == '\u2028' || r == '\u2029':
			// encoding/json escapes these always: JavaScript reads them
			// as line ends.
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
