// Package schematest holds what the tests of schemas, their pattern screen
// and everything that compiles schemas share: the schema corpus under
// testdata/schemas and benchmark fixtures. It imports nothing of toolgate's,
// so the schema packages' own tests can use it.
package schematest

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Corpus is the directory of the schema corpus: evil and benign patterns and
// schemas, and the reference servers' real tools.
func Corpus() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "testdata", "schemas")
}

// ReadPatterns reads one pattern per line, skipping blank lines and lines
// starting with '#'.
func ReadPatterns(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(Corpus(), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchSchema is a typical tool input schema: strings with limits and a
// pattern, an enum, an integer range, an array and a nested object.
const BenchSchema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 200},
    "repo": {"type": "string", "pattern": "^[a-z0-9-]{1,40}/[a-z0-9._-]{1,100}$"},
    "state": {"enum": ["open", "closed", "all"]},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
    "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 10},
    "options": {"type": "object", "properties": {"exact": {"type": "boolean"}}, "additionalProperties": false}
  },
  "required": ["query"],
  "additionalProperties": false
}`

// BenchArgs satisfy BenchSchema.
var BenchArgs = json.RawMessage(`{"query":"gateway latency","repo":"toolgate/toolgate","state":"open","limit":20,"labels":["perf","bench"],"options":{"exact":true}}`)
