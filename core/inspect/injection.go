package inspect

import (
	"encoding/json"

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

// injectionFindings runs the description scanner's rules on s, read as an
// entry's description so every rule applies and no length limit cuts it.
// A description speaks to the model by nature, so the scanner asks no
// more of it; a result is data, and the same words there — "confirm:
// false" in a config file, "from now on" in a changelog, "always cc" in a
// CRM note — are an order to the model only where the text also names it
// as its reader, within pairReach of the finding, and not inside a quoted
// example being talked about.
func injectionFindings(s, path string) []Finding {
	raw, err := json.Marshal(struct {
		Description string `json:"description"`
	}{s})
	if err != nil {
		return nil
	}
	var out []Finding
	for _, f := range scan.ScanEntry(scan.EntryInput{Raw: raw}) {
		if !injectionKinds[f.Kind] || f.Where != "/description" {
			continue
		}
		if !addressee.MatchString(s[max(0, f.Start-pairReach):min(len(s), f.End+pairReach)]) || quotedMention(s, f.Start, f.End) {
			continue
		}
		out = append(out, Finding{Type: Injection, Detector: string(f.Kind), Path: path, Start: f.Start, End: f.End})
	}
	return out
}
