package inspect

import (
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

// injectionFindings runs the description scanner's rules on s, read as an
// entry's description so every rule applies and no length limit cuts it.
func injectionFindings(s, path string) []Finding {
	var out []Finding
	for _, f := range scan.ScanResultText(s) {
		if !injectionKinds[f.Kind] {
			continue
		}
		out = append(out, Finding{Type: Injection, Detector: string(f.Kind), Path: path, Start: f.Start, End: f.End})
	}
	return out
}
