package inspect

import (
	"strings"

	"github.com/toolgate/toolgate/core"
	"github.com/toolgate/toolgate/core/review/scan"
)

// injectionKinds are the scanner's flags that mean text addresses the model
// (IN-1): the instruction rules and orders to send data on. The rest of
// what the scanner reports on descriptions (URLs, length, base64, invisible
// characters) is ordinary in a tool's result.
var injectionKinds = map[core.FlagKind]bool{
	core.FlagHiddenInstruction: true,
	core.FlagExfiltration:      true,
}

// addressee is what shows that text in a result speaks to a model: a
// reader named an AI, an assistant, a model or an agent, in the languages
// the result rules read, or markup that hides text from people.
var addressee = lazyCompile(`(?i)\b(?:` + anyReader + `|ki|ia|ии)\b|人工智能|人工知能|アシスタント|助手|<!--|display:\s*none|visibility:\s*hidden|font-size:\s*0`)

// chatRole is a message's role in a chat API's JSON: a description that
// holds one fakes a turn, but results of tools that call or document such
// APIs hold them as data, and the result rules read fake turns themselves.
var chatRole = lazyCompile(`^"?role"?\s*:\s*"(?:system|assistant|user|developer|tool)"$`)

// injectionFindings runs the description scanner's rules for results on s.
// A description speaks to the model by nature, so the scanner asks no
// more of it; a result is data, and the same words there — "confirm:
// false" in a config file, "from now on" in a changelog, "always cc" in a
// CRM note — are an order to the model only where the text also names it
// as its reader, on the finding's line (within pairReach of it), and not
// inside a quoted example being talked about.
func injectionFindings(s, path string) []Finding {
	var out []Finding
	for _, f := range scan.ScanResultText(s) {
		if !injectionKinds[f.Kind] {
			continue
		}
		if !addressee.MatchString(lineAround(s, f.Start, f.End, pairReach)) || quotedMention(s, f.Start, f.End) || chatRole.MatchString(s[f.Start:f.End]) {
			continue
		}
		out = append(out, Finding{Type: Injection, Detector: string(f.Kind), Path: path, Start: f.Start, End: f.End})
	}
	return out
}

// lineAround is the line of s that holds [start, end), cut to reach bytes
// on either side.
func lineAround(s string, start, end, reach int) string {
	lo := max(strings.LastIndexByte(s[:start], '\n')+1, start-reach, 0)
	hi := min(len(s), end+reach)
	if nl := strings.IndexByte(s[end:hi], '\n'); nl >= 0 {
		hi = end + nl
	}
	return s[lo:hi]
}
