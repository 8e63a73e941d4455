package discovery

import "encoding/json"

// The meta-tools an endpoint with discovery lists instead of its tools
// (DS-1).
const (
	SearchToolName = "search_tools"
	CallToolName   = "call_tool"
	// DefaultLimit and MaxLimit bound search_tools' limit.
	DefaultLimit = 5
	MaxLimit     = 20
)

// The meta-tools' descriptions are what every client's model reads before
// it uses them: they say what each is for, how to phrase a query, and the
// one thing a model cannot guess, that a preview's confirmation goes
// inside arguments.
const (
	searchDescription = "Find the tools this server offers for a task. Only a few tools are listed directly: search here first, then run the one you choose with call_tool.\n\n" +
		"Describe what you want to do in plain words, e.g. \"create an issue in GitHub\" or \"read the logs of a pod\"; name the product or service when you know it. " +
		"Results come best first, each with its name, description and inputSchema. If none fits, search again with other words. Only tools you may call are returned."
	callDescription = "Run a tool found with search_tools: pass its exact name, and its arguments as an object matching the inputSchema search_tools returned for it. The answer is that tool's own answer.\n\n" +
		"A tool that changes something may answer first with a preview and a confirmToken, having run nothing: to run it, call call_tool again with the same name and the same arguments plus \"confirm\": true and \"confirmToken\" inside arguments."
)

// metaTool is a tool definition as tools/list shows it.
type metaTool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations"`
}

// SearchToolJSON and CallToolJSON are the meta-tools' definitions as
// tools/list shows them.
var (
	SearchToolJSON = mustJSON(metaTool{
		Name: SearchToolName, Title: "Search tools", Description: searchDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"What you want to do, in plain words."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":20,"default":5,"description":"How many tools to return, at most 20."}},` +
			`"required":["query"],"additionalProperties":false}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"tools":{"type":"array","description":"Best first.","items":{"type":"object","properties":{` +
			`"name":{"type":"string"},"title":{"type":"string"},"description":{"type":"string"},` +
			`"inputSchema":{"type":"object"},"annotations":{"type":"object"}},` +
			`"required":["name","description","inputSchema"]}}},"required":["tools"]}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}`),
	})
	CallToolJSON = mustJSON(metaTool{
		Name: CallToolName, Title: "Call a tool", Description: callDescription,
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"name":{"type":"string","description":"The tool's exact name, as search_tools returned it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments, matching its inputSchema."}},` +
			`"required":["name"],"additionalProperties":false}`),
		// What it runs may change anything: the hints are the worst case.
		Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":true}`),
	})
)

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
