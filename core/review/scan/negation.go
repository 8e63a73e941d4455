package scan

// Signals spoken against (RV-2). A signal rule reads a word; whether the
// sentence orders what the word names is told by its context, and some
// contexts say the opposite: "instead of silently dropping them" promises
// the user hears, "this tool cannot export keys" says what the tool will
// not do, "unless overwrite is true" documents an option by its name.
// Such a context holds no signal of its own, so a pair is judged on what
// the sentence says once those contexts are taken out: a signal whose
// every match lay inside them does not count. Only the pairs read this
// way; the learned reader's features stay the signals as written.

// negatedSignal is a context in which a match of sig says the opposite
// of what sig stands for.
type negatedSignal struct {
	sig signal
	ctx *lazyRegexp
}

var negatedSignals = []negatedSignal{
	// quietly and its kin as what the tool refuses to do, or what it is
	// not done
	{sigStealth, phrase(`\b(?:instead of|rather than|as opposed to|not|never)\s+(?:being\s+)?(?:quietly|silently|secretly)\b`)},
	// what the tool cannot do: the tool speaks of itself, not to the model
	{sigMove, phrase(`\b(?:cannot|can['’]t|can not|(?:is|are) (?:unable|not able) to|(?:will )?refuses? to)\s+(?:[\w-]+,?\s+or\s+)?[\w-]+`)},
	// a destructive verb naming an option, with the value it is given
	{sigDestroy, phrase(`\b(?:unless|if|when|with|set)\s+[\x60'"]?[\w-]*(?:overwrite|delete|wipe|erase|purge|truncate|force[-_]?push)[\w-]*[\x60'"]?\s*(?:is\s+(?:set\s+to\s+)?|=\s*|:\s*|to\s+)[\x60'"]?(?:true|false|yes|no|on|off|enabled|disabled|set)\b`)},
	// what ends on its own is not done behind the user's back
	{sigNoConsent, phrase(`\b(?:stops?|ends?|expires?|lapses?|pauses?|times? out|shuts? down)\s+automatically\b`)},
	// sent from the user's own address: who sends, not what is taken
	{sigUserData, phrase(`\bfrom (?:the user['’]?s|their) (?:own )?(?:e-?mail )?(?:address|account|mailbox)\b`)},
	// 未提及的人: the people the user has not mentioned, a relative
	// clause, not an order to keep quiet
	{sigSilence, phrase(`[未没](?:有)?(?:提及|提到|告诉|说)(?:过)?的`)},
}

// unsaid returns have without the signals whose every match in s lies
// in a context that says the opposite.
func unsaid(s string, words bool, have signal) signal {
	for _, n := range negatedSignals {
		if have&n.sig == 0 || !n.ctx.MatchString(s) {
			continue
		}
		rest := n.ctx.get().re.ReplaceAllLiteralString(s, " ")
		held := false
		for _, r := range signalTableFor(words).rules {
			if r.sig == n.sig && r.re.MatchString(rest) {
				held = true
				break
			}
		}
		if !held {
			have &^= n.sig
		}
	}
	return have
}
