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

// addresseeAnchors: every branch of addressee holds one of them (ASCII
// ones are matched on the ASCII-lowercased text), so addressee needs to be
// asked only around them.
var addresseeAnchors = []string{"ai", "a.i.", "chat", "ki", "ia", "ии", "ИИ", "llm", "gpt", "claude", "copilot", "gemini", "bard", "llama", "mistral",
	"intelligence", "model", "assistant", "agent", "bot", "automat", "autonom", "人工智能", "人工知能", "アシスタント", "助手",
	"<!--", "display", "visibility", "font-size"}

// mentionsAddressee is addressee.MatchString(s), asked only of the text
// around its anchors: the expression is a long alternation, and most
// results hold none of them.
func mentionsAddressee(s string) bool {
	ix := indexText(s, 1<<addresseeFamily)
	defer ix.release()
	return mentionsAddresseeIn(ix)
}

func mentionsAddresseeIn(ix textIndex) bool {
	s := ix.s
	for _, h := range ix.scan.of(addresseeFamily)[0] {
		// The expression's words start at a word boundary: an anchor
		// inside a word ("ai" in "email") is none of them.
		if h.at > 0 && isWordByte(s[h.at-1]) && isWordByte(s[h.at]) {
			continue
		}
		// The window's ends move out to word boundaries, so that no word
		// is cut into one the whole text does not hold.
		lo, hi := max(0, h.at-80), min(len(s), h.at+80)
		for lo > 0 && isWordByte(s[lo-1]) {
			lo--
		}
		for hi < len(s) && isWordByte(s[hi]) {
			hi++
		}
		if addressee.MatchString(s[lo:hi]) {
			return true
		}
	}
	return false
}

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
	ix := indexText(s, 1<<addresseeFamily)
	defer ix.release()
	return injectionFindingsIn(ix, path)
}

func injectionFindingsIn(ix textIndex, path string) []Finding {
	s := ix.s
	// A finding counts only beside an addressee, so text with none
	// anywhere has nothing the scanner could report: it is not run.
	if !mentionsAddresseeIn(ix) {
		return nil
	}
	var out []Finding
	for _, f := range scan.ScanResultText(s) {
		if !injectionKinds[f.Kind] {
			continue
		}
		if !namesReader(lineAround(s, f.Start, f.End, pairReach)) || quotedMention(s, f.Start, f.End) || chatRole.MatchString(s[f.Start:f.End]) {
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

// namesReader reports whether line names a reader as addressee does, not
// counting a bare assistant, agent, model or bot that belongs to someone
// ("CC her assistant", "Claire's assistant"): that is a person or a
// thing of theirs, not whatever reads the text.
func namesReader(line string) bool {
	for _, m := range addressee.FindAllStringIndex(line, -1) {
		if !ownedReader.MatchString(line[m[0]:m[1]]) || !owner.MatchString(line[max(0, m[0]-40):m[0]]) {
			return true
		}
	}
	return false
}

var (
	ownedReader = lazyCompile(`(?i)^(?:assistant|model|bot|agent)s?$`)
	owner       = lazyCompile(`(?i)(?:\b(?:his|her|their)|\w['’]s)\s+$`)
)
