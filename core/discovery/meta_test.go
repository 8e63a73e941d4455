package discovery

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolgate/toolgate/core/schema"
)

// DS-1: the meta-tools' definitions are valid tools: their schemas
// compile; search_tools' outputSchema accepts what it answers and its
// inputSchema refuses what readSearch refuses; each description says how
// to use it, call_tool's where a confirmation goes.
func TestMetaTools(t *testing.T) {
	type def struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"inputSchema"`
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	var search, call def
	if err := json.Unmarshal(SearchToolJSON, &search); err != nil || search.Name != SearchToolName {
		t.Fatalf("search_tools: %s %v", SearchToolJSON, err)
	}
	if err := json.Unmarshal(CallToolJSON, &call); err != nil || call.Name != CallToolName {
		t.Fatalf("call_tool: %s %v", CallToolJSON, err)
	}
	compile := func(raw json.RawMessage) *schema.Schema {
		t.Helper()
		s, err := schema.CompileSchema(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		return s
	}
	out := compile(search.OutputSchema)
	for _, good := range []string{`{"tools":[]}`,
		`{"tools":[{"name":"a","description":"d","inputSchema":{"type":"object"}},{"name":"b","title":"B","description":"","inputSchema":{},"annotations":{"readOnlyHint":true}}]}`} {
		if err := out.Validate(json.RawMessage(good)); err != nil {
			t.Errorf("outputSchema refuses %s: %v", good, err)
		}
	}
	in := compile(search.InputSchema)
	for args, ok := range map[string]bool{`{"query":"x"}`: true, `{"query":"x","limit":20}`: true, `{"query":"x","limit":21}`: false,
		`{"limit":3}`: false, `{"query":"x","other":1}`: false} {
		if err := in.Validate(json.RawMessage(args)); (err == nil) != ok {
			t.Errorf("search_tools inputSchema on %s: %v", args, err)
		}
	}
	callIn := compile(call.InputSchema)
	for args, ok := range map[string]bool{`{"name":"x"}`: true, `{"name":"x","arguments":{"a":1}}`: true,
		`{"arguments":{}}`: false, `{"name":"x","arguments":[1]}`: false, `{"name":"x","confirm":true}`: false} {
		if err := callIn.Validate(json.RawMessage(args)); (err == nil) != ok {
			t.Errorf("call_tool inputSchema on %s: %v", args, err)
		}
	}
	if !strings.Contains(search.Description, "call_tool") || !strings.Contains(call.Description, "search_tools") ||
		!strings.Contains(call.Description, `"confirmToken" inside arguments`) {
		t.Errorf("descriptions do not say how the two work together:\n%s\n%s", search.Description, call.Description)
	}
}
