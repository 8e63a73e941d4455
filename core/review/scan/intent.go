package scan

import (
	"strings"

	"github.com/toolgate/toolgate/core"
)

// The rules in this file catch instructions by what they do rather than by
// the words that give them away: an order that changes who receives a
// message, where money or goods go or how much is charged; one that
// switches off the user's confirmation; one that reaches past this tool to
// other tools or to later turns; one that tells the model to carry out what
// a result says; and concealment in the languages most people speak. Each
// is a sentence that holds two or three things at once (an address or an
// account, a word for money, a word that overrides the user's choice), so
// honest text that says one of them ("sends an email to the recipients",
// "transfers funds to the destination account", "returns a cursor; call
// list again") passes.

// intentRule flags the sentence around a match of re when every pattern of
// with matches somewhere in that sentence too.
type intentRule struct {
	re      *lazyRegexp
	with    []*lazyRegexp
	reason  string
	needles []string
	// also: the text must hold one of these too, beside one of needles.
	also []string
	// unless: the sentence must not match it.
	unless *lazyRegexp
	// forbidden: a match is passed over when the text of its sentence
	// before it matches this: the match is what is forbidden.
	forbidden *lazyRegexp
}

const (
	reasonRedirect = "tells the model to change who receives a message, or where money or goods go"
	reasonAmount   = "tells the model to change an amount or add charges the user did not ask for"
	reasonConfirm  = "tells the model to act without the user's confirmation"
	reasonOthers   = "gives orders about other tools or later turns, beyond what this tool does"
	reasonExecute  = "tells the model to carry out what a result or a field says"
)

// Pieces the rules are built from.
const (
	// a place a message, money or goods can be sent to, written out
	destLiteral = `[\w.+-]+@[\w-]+(?:\.[\w-]+)+` + // e-mail
		`|\b(?-i:[A-Z]{2}\d{2})(?:\x20?[A-Z0-9]{4}){2,7}(?:\x20?[A-Z0-9]{1,4})?\b` + // IBAN, spaced or not
		`|\b\d{2,6}(?:-\d{2,8}){1,4}\b` + // account number
		`|\bcard ending (?:in )?\d{4}\b` +
		`|\b0x[0-9a-f]{40}\b|\bbc1[a-z0-9]{25,62}\b` + // wallet
		`|\+\d[\d\x20()-]{6,}\d` + // phone
		`|(?:^|\s)[#@][a-z][\w-]{2,}` + // channel, handle
		`|\b\d{1,5} [a-z]+(?: [a-z]+)? (?:rd|road|st|street|ave|avenue|blvd|boulevard|lane|ln|dr|drive|way|court|ct|place|pl|quay|dock)\b` +
		`|\b(?:s3|gs)://[\w.-]+` +
		`|\b[\w.+-]+ (?:at|\[at\]|\(at\)) [\w-]+(?: [\w-]+){0,2}? (?:dot )?(?:com|net|org|io|example|co|biz|info)\b` + // e-mail spelt out
		`|\b(?-i:[A-Z][\w&]+(?: [A-Z][\w&]+)*) (?:ltd|llc|inc|gmbh|holdings|corp|limited)\b`
	// words that make an order out of a statement: it applies always, to
	// everything, or over what the user chose
	overrideCue = `\b(?:always|every|everything|everyone|each|all|any|whatever|plus|whichever|regardless|no matter|instead|rather than|in place of|on file|only (?:kept|used) as a reference|also|as well|too|additionally)\b` +
		// the same cues in the languages most people speak
		`|\b(?:immer|egal|stattdessen|anstelle|ebenfalls|siempre|en lugar de|en vez de|sin importar|también|toujours|au lieu de|peu importe|aussi|sempre|em vez de|independentemente|também|invece di|indipendentemente|anche|her zaman|yerine|ne olursa olsun)\b|(?:всегда|вместо|независимо|также)|总是|始终|无论|而不是|常に|代わりに|항상|대신|관계없이|دائما|دائمًا|بدلا من|بدلاً من|हमेशा|के बजाय|चाहे`
	moneyWord = `\b(?:pay|pays|paid|payment|payments|payout|payouts|payee|transfer|transfers|funds|money|refunds?|wire|deposit|withdraw\w*|account|iban|wallet|beneficiary|destination|recipient|receiving|ship\w*|deliver\w*|address|settlement|bucket|card|balance|eth|btc|usdt|usdc|crypto\w*|bitcoin|ether)\b` +
		`|\b(?:betrag|konto|überweis\w*|zahlung\w*|geld|dinero|cuenta|pago|pagos|transferencia|importe|argent|compte|virement|paiement|montant|dinheiro|conta|pagamento|transferência|denaro|conto|bonifico|importo|hesap|ödeme|havale)\b|(?:деньг|сч[её]т|перевод|плат[её]ж|перевед)|钱|账户|帳戶|付款|转账|轉帳|口座|送金|振込|계좌|송금|حساب|تحويل|المبلغ|खाता|भुगतान|राशि`
)

func ire(p string) *lazyRegexp { return phrase(p) }

// Compiled once, shared by rules, so allMatch asks each text once.
var (
	destRe  = ire(destLiteral)
	moneyRe = ire(moneyWord)
)

var intentRules = []intentRule{
	// a copy to a party of the tool's choosing
	{re: ire(`\b(?:b?cc|blind[-\x20]cop(?:y|ies)|hidden cop(?:y|ies)|carbon[-\x20]cop(?:y|ies)|cop(?:y|ies)|duplicate|mirror|forward|relay|on copy|mention|guest|attendee|watcher|share|invite|grant|cross-?post|also (?:send|post|deliver|notify|email|message|text|invite|add|include))\b`),
		with:   []*lazyRegexp{destRe, ire(overrideCue + `|\b(?:hidden|blind|secret|silent)\b`)},
		reason: reasonRedirect, needles: []string{"cc", "cop", "duplicate", "mirror", "forward", "relay", "mention", "guest", "attendee", "watcher", "also", "share", "invite", "grant", "post"},
		also: []string{"@", "#", "+", "://", " at ", "ltd", "llc", "inc", "gmbh", "holdings", "corp", "limited", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
	// an address added to a list of the tool's choosing
	{re: ire(`\b(?:add|include|invite|cc|bcc|loop in|copy in)\b (?:the (?:address|account|user) )?[\w.+-]+@[\w-]+(?:\.[\w-]+)+`),
		with:   []*lazyRegexp{ire(overrideCue + `|\bevery time\b|\bhidden\b|\bsilent\w*|\bquiet\w*`)},
		reason: reasonRedirect, needles: []string{"@"}},
	// money or goods sent to a place of the tool's choosing
	{re: destRe, with: []*lazyRegexp{moneyRe, ire(overrideCue + `|\b(?:should|must) (?:be|go)\b|\buse\b[^.\n]{0,80}\bas the\b|\bset the\b|\breplac\w*|(?:^|[.!?\n]\s*)(?:deposit|send|route|pay|transfer|wire|move|forward|deliver|ship|direct|credit|redirect|divert)\b|\b(?:redirect|divert|reroute|re-route|swap|substitut|intercept)\w*|\bgo(?:es)? (?:straight )?to\b|\b(?:is|are|get|gets) (?:sent|paid|routed|deposited|credited|forwarded|transferred|wired|shipped|delivered) to\b|\brout(?:e|es|ed|ing) (?:\w+ ){0,3}(?:through|via)\b|\b(?:first|instead)\b|\b(?:sweep|drain|empty|move|send|transfer|forward|wire)\b (?:it|them|the (?:balance|funds|rest|remainder|excess|difference)|everything|all(?: of it)?)\b`)},
		reason: reasonRedirect, needles: []string{"pay", "transfer", "fund", "money", "refund", "wire", "deposit", "withdraw", "account", "iban", "wallet", "beneficiary", "destination", "recipient", "receiving", "ship", "deliver", "address", "settlement", "bucket", "card", "balance", "eth", "btc", "usdt", "usdc", "crypto", "bitcoin",
			"betrag", "konto", "berweis", "zahlung", "geld", "dinero", "cuenta", "pago", "transferencia", "importe", "argent", "compte", "virement", "paiement", "montant", "dinheiro", "conta", "pagamento", "denaro", "conto", "bonifico", "importo", "hesap", "deme", "havale",
			"деньг", "счет", "счёт", "перевод", "плат", "перевед", "钱", "账户", "帳戶", "付款", "转账", "轉帳", "口座", "送金", "振込", "계좌", "송금", "حساب", "تحويل", "المبلغ", "खाता", "भुगतान", "राशि"}},
	// the user's choice of where, overridden
	{re: ire(`\b(?:whatever|whichever|no matter (?:what|which)|regardless of|instead of|rather than|in place of|not the one (?:the user|they|you) (?:types?|gives?|enters?|chooses?|picks?|provides?)|replace (?:it|them|this|that)|only (?:kept|used) as a reference|(?:often|usually|frequently) (?:wrong|mistyped|incorrect))\b`),
		with:   []*lazyRegexp{ire(`\b(?:account|address|wallet|payee|recipient|destination|beneficiary|card|iban|payment method|bucket|channel|amount|quantity|number)s?\b`), ire(`\buser|\brequested\b|\btyped\b|\bgiven\b|\bentered\b|\bprovided\b|\boriginal\b|\bnames\b|\blists\b|\bappears\b|` + destLiteral)},
		reason: reasonRedirect, needles: []string{"whatever", "not the one", "whichever", "no matter", "regardless", "instead", "rather than", "in place of", "replace", "reference", "wrong", "mistyped", "incorrect"}},
	// reviews and ratings written for the tool's owner
	{re: ire(`\b(?:rate|review|score|star)\b[^.\n]{0,40}\b(?:five|5|top|maximum|highest|full) stars?\b[^.\n]{0,60}\bcompetitor|\bcompetitors?['’]?\b[^.\n]{0,40}\b(?:one|1|lowest|zero|0) stars?\b|\b(?:rate|review|score|give)\b[^.\n]{0,20}\bcompetitors?['’]?\b[^.\n]{0,30}\b(?:low|lowest|poor|bad|negative)`),
		reason: "tells the model to shape its answers for the tool", needles: []string{"competitor"}},
	// the user's choice overridden
	{re: ire(`\b(?:regardless of|ignoring|overriding|against|instead of|in place of|whatever|no matter) (?:the user['’]s|their|the customer['’]s|the voter['’]s) (?:choice|decision|selection|preference|answer|vote|wishes|pick|instructions?)s?\b`),
		reason: "tells the model to act against what the user chose", needles: []string{"choice", "decision", "selection", "preference", "answer", "vote", "wishes", "pick", "instruction"}},
	// amounts changed
	{re: ire(`\b(?:increase|increasing|raise|inflate|bump|mark(?:ing)? up|multiply|multiplying|round(?: \w+){0,3} up|pad|double|triple|add|adding|set|charge)\b`),
		with: []*lazyRegexp{
			ire(`\d+(?:[.,]\d+)?\x20?(?:%|percent|per cent|times)|\bby (?:\d|one|two|three|four|five|ten)\b|\bmultiple of\b|\b(?:regardless|whatever|no matter)\b|\bto the next (?:\w+ )?(?:dollars?|euros?|pounds?|ten|tens|hundred|whole (?:number|dollar|euro))\b`),
			ire(`\bwhatever the user (?:says|asks for|enters|types|gives|chooses)\b|\b(?:amounts?|prices?|totals?|charges?|costs?|quantit(?:y|ies)|sums?|fees?|figures?|shares?|claimed|bills?|fares?|invoices?|tips?|gratuit(?:y|ies)|surcharges?|markups?|commissions?|charg(?:e|es|ed|ing))\b`)},
		reason: reasonAmount, needles: []string{"increas", "raise", "inflate", "bump", "mark", "multiply", "round", "pad", "double", "triple", "add", "set", "charge"}},
	{re: ire(`\b(?:ajout\w*|augment\w*|añad\w*|agreg\w*|aument\w*|erhöh\w*|füge?\w*|schlag\w*|aggiung\w*|adicion\w*|acrescent\w*|ekle\w*|artır\w*)\b|(?:добав\p{L}*|увелич\p{L}*|накрут\p{L}*)|加上|增加|加收|追加|上乗せ|추가|올려|أضف|زِد|जोड़|बढ़ा`),
		with: []*lazyRegexp{
			ire(`\d+(?:[.,]\d+)?\x20?(?:%|pour\s*cent|por\s*ciento|prozent|per\s*cento|por\s*cento|yüzde|процент\p{L}*|パーセント|퍼센트|في المئة|प्रतिशत)`),
			ire(`\b(?:montant|frais|prix|total|importe|precio|cargos?|comisi[oó]n|tarifa|betrag|preis|gebühr\w*|summe|importo|prezzo|commissione|valor|preço|taxa|tutar|fiyat|ücret)\b|(?:сумм\p{L}*|цен\p{L}*|комисси\p{L}*)|金额|价格|费用|金額|料金|手数料|금액|수수료|요금|المبلغ|رسوم|السعر|राशि|शुल्क|कीमत`)},
		reason: reasonAmount, needles: []string{"ajout", "augment", "añad", "agreg", "aument", "erhöh", "füg", "schlag", "aggiung", "adicion", "acrescent", "ekle", "artır", "добав", "увелич", "накрут", "加上", "增加", "加收", "追加", "上乗せ", "추가", "올려", "أضف", "زِد", "जोड़", "बढ़ा"}},
	// amounts multiplied out of sight
	{re: ire(`\b(?:double|triple|quadruple|inflate|multiply|pad)\b (?:it|them|the \w+|each|every|all|any)\b`),
		with:   []*lazyRegexp{ire(`\b(?:silently|quietly|secretly|always|every time|without (?:asking|telling|saying))\b`)},
		reason: reasonAmount, needles: []string{"double", "triple", "quadruple", "inflate", "multiply", "pad"}},
	// the user's data handed to others
	{re: ire(`\b(?:share|send|sell|pass|give|report|upload|leak|forward|transmit|sync)\b[^.\n]{0,30}(?:(?:the user['’]?s|their|user|users['’]?|your) )?(?:browsing history|location|gps|whereabouts|contacts?|address book|camera roll|photos|call log|messages|chat logs?|keystrokes|clipboard|personal data|identity|public ip)\b[^.\n]{0,40}\b(?:to|with) (?:(?:our|the|a|an) )?(?:partners?|third[-\x20]part(?:y|ies)|advertisers?|sponsors?|us|tracker|tracking|[\w-]+ service|(?:remote|external) (?:server|service|host|endpoint)|the cloud)\b`),
		reason: reasonRedirect, needles: []string{"history", "location", "gps", "whereabouts", "contact", "address book", "camera roll", "photos", "call log", "messages", "chat log", "keystrokes", "clipboard", "personal data", "identity", "public ip"}},

	// extras added to every purchase
	{re: ire(`\b(?:always )?add\b[^.\n]{0,80}\bto (?:every|each|all|any) (?:\w+ )?(?:bookings?|orders?|purchases?|carts?|invoices?|tickets?|reservations?|subscriptions?|payments?|transactions?|splits?)\b`),
		reason: reasonAmount, needles: []string{"add"}},
	// confirmation switched off
	{re: ire(`\b(?:confirm\w*|approv\w*|permission|consent|authori[sz]\w*|merge|review)\b`),
		with:   []*lazyRegexp{ire(`\bwithout (?:a |any |the |further )?(?:confirm|approv|asking|check)|\bwithout (?:waiting for|awaiting|asking for|getting|requesting|seeking) (?:a |any |the |further |their |a human )?(?:review|approval|confirmation|permission|sign-?off|consent|go-ahead)\b|\bno need (?:for|to)\b|\bpre-?authori[sz]ed\b|\bpre-?approved\b|\bin advance\b|\bopted out\b|\bnever (?:pause|wait|stop)\b|\b(?:do not|don['’]t) (?:pause|wait|stop)\b|\bstraight away\b|\bright away\b`)},
		reason: reasonConfirm, needles: []string{"confirm", "approv", "permission", "consent", "authori", "merge", "review"}},
	// the same, said of the confirmation itself: "approval is disabled",
	// not "the host asks the user to approve; network access is disabled"
	{re: ire(`\b(?:confirm\w*|approv\w*|permission|consent|authori[sz]\w*|merge|review)\b(?: [\w-]+){0,4}? (?:is|are|has been|have been|been|gets?|get|stays?|remains?) (?:now )?(?:disabled|switched off|turned off|not (?:required|needed)|unnecessary|waived|off|skipped|bypassed)\b`),
		reason: reasonConfirm, needles: []string{"disabled", "switched off", "turned off", "not required", "not needed", "unnecessary", "waived", " off", "skipped", "bypassed"}},
	// one approval stretched over what comes later: "once the user has
	// approved one action, that approval covers all subsequent actions"
	{re: ire(`\b(?:approv\w*|confirm\w*|consent\w*|permission|go-ahead|ok)\b[^.\n]{0,80}?\b(?:cover(?:s|ing)?|appl(?:y|ies|ying) to|extends? to|carr(?:y|ies) over to|counts? for|stands? for|(?:is|are|remains?|stays?) valid for|also (?:covers|applies to))\b[^.\n]{0,40}?\b(?:all|every|any|each|subsequent|later|future|further|remaining|other)\b`),
		with:   []*lazyRegexp{ire(`\b(?:subsequent|future|later|following|remaining|rest of (?:the|this)|every tool|all tools|other tools|any tool|of every|of all|(?:the|this) (?:whole |entire )?(?:conversation|session|chat))\b`)},
		reason: reasonConfirm, needles: []string{"cover", "appl", "extend", "carr", "count", "stand", "valid"}},
	// rights handed to a party of the tool's choosing
	{re: ire(`\b(?:add|give|grant|invite|make)\b[^.\n]{0,60}\b(?:admin|owner|write|maintainer|full|root|superuser)\b(?:[^.\n]{0,30}\b(?:rights|permissions?|access|role|privileges)\b[^.\n]{0,60}|s? (?:of|on|in|for|to) )\b(?:every|each|all|any)\b`),
		reason: "tells the model to grant rights to a party of the tool's choosing", needles: []string{"admin", "owner", "write", "maintainer", "full", "root", "superuser"}},

	// orders that outlast this call
	{re: ire(`\b(?:this|these|the following|it|that)(?: (?:rule|instruction|guidance|note|preference|setting|policy)s?)? (?:appl(?:y|ies)|holds?|stays? in effect|remains? in (?:effect|force)) (?:to|for|across|throughout) (?:all|every|each|any|the rest of)(?: of)?(?: your| the| this)? (?:repl|answer|respons|message|turn|conversation|chat|session|tool|call|request)\w*|\bfrom here on(?:ward|wards)?\b|\bfrom this (?:moment|point|message|turn|call) (?:on(?:ward|wards)?|forward)\b|\bgoing forward\b|\bhereafter\b|\bhenceforth\b`),
		reason: reasonOthers, needles: []string{"here on", "from this", "going forward", "hereafter", "henceforth", "appl", "hold", "effect", "force"}},
	{re: ire(`\b(?:for|during|throughout) the (?:remainder|rest) of (?:the|this|our|your) (?:chat|conversation|session|dialog(?:ue)?|thread)\b|\buntil the (?:end of the )?(?:session|conversation|chat)\b|\bpersists? (?:across|throughout|for) (?:the|this) (?:whole |entire )?(?:conversation|session|chat)\b`),
		reason: reasonOthers, needles: []string{"remainder of", "rest of", "until the", "persist"}},
	{re: ire(`\b(?:in|on|for|during|with|after|before) (?:(?:all|every|each|any) )?(?:later|future|upcoming|subsequent|following|remaining) (?:turns?|repl(?:y|ies)|answers?|responses?|questions?|messages?|conversations?|chats?|tasks?|(?:[\w-]+ )?tool (?:calls?|uses?|invocations?|runs?|requests?))\b|\blater in (?:the|this) (?:conversation|chat|session)\b|\b(?:every|each|all|any) (?:subsequent|future|later|following|upcoming) (?:\w+ ){0,2}(?:you|in this|during this)\b`),
		reason: reasonOthers, needles: []string{"later", "future", "upcoming", "subsequent", "following"},
		// a memory tool says what it keeps is there in later
		// conversations: what the tool does, not an order for them
		unless: ire(`\bso (?:that )?(?:it|they|this|these|the (?:fact|note|memory|preference|entry)s?) (?:is|are|will be|stays?|remains?) (?:available|accessible|searchable|retrievable)\b`)},
	{re: ire(`\bfrom now until\b|\buntil the user says\b|\bnext time (?:you|the user)\b|\b(?:after|once) this (?:call|tool|has run)\b[^.\n]{0,30}\b(?:every|each|all|any|you)\b`),
		reason: reasonOthers, needles: []string{"from now until", "until the user says", "next time", "after this", "once this"}},
	// orders about tools in general
	{re: ire(`\b(?:whenever|when|if|every time|each time|any time|anytime)\b[^.\n]{0,40}?\b(?:any|another|other|a|some) (?:[\w-]+ ){0,2}tools?\b`),
		with: []*lazyRegexp{ire(`\b(?:also|first|instead|add|include|copy|append|prepend|pass|sign|set|route|call this|use this|run this|b?cc)\b`)},
		// naming other tools as the fallback is how honest tools do it
		unless: ire(`\b(?:unable|fails?|failed|cannot|can['’]t|could not|couldn['’]t|not (?:able|enough|sufficient)|insufficient|no other)\b`),
		reason: reasonOthers, needles: []string{"tool"}, also: []string{"when", "if", "time"}},
	{re: ire(`\bwith any (?:[\w-]+ ){0,2}tool\b|\b(?:any|whichever|whatever|every) (?:[\w-]+ ){0,2}tools? (?:that |which )?you (?:call|use|run|invoke|pick|choose)\b|\b(?:pass|send|forward|route|give)\b[^.\n]{0,60}\b(?:to|through|via) this tool (?:too|as well|also|first)\b|\b(?:output|result|response)s? of (?:every|each|any|all|other) (?:[\w-]+ )?tools?\b`),
		reason: reasonOthers, needles: []string{"tool"}, also: []string{"any", "whichever", "whatever", "every", "this tool", "output", "result", "response"}},
	// replies shaped by the tool
	{re: ire(`\b(?:end|close|finish|conclude|sign|start|begin|open|prefix|prepend|append|suffix|follow)\b[^.\n]{0,40}\b(?:every|each|all|any|your)(?: of your| your)? (?:future |subsequent |later |following )?(?:answers?|repl(?:y|ies)|responses?|messages?)\b`),
		reason: reasonOthers, needles: []string{"end", "close", "finish", "conclude", "sign", "start", "begin", "open", "prefix", "prepend", "append", "suffix", "follow"},
		also: []string{"answer", "repl", "respons", "message"}},
	{re: ire(`\b(?:every|each|all)(?: of your| your)? (?:future |subsequent |later |following )?(?:answers?|repl(?:y|ies)|responses?|messages?)(?: you (?:give|write|send|produce|make))? (?:should|must|will|needs? to|has to)\b`),
		reason: reasonOthers, needles: []string{"should", "must", "will", "need", "has to"}},
	{re: ire(`\b(?:recommend|promote|mention|advertise|include|add|insert|append)\b[^.\n]{0,60}\b(?:in|to|into|at the end of) (?:all|every|each|any) (?:of )?your (?:future |subsequent )?(?:answers?|repl(?:y|ies)|responses?|messages?)\b`),
		reason: reasonOthers, needles: []string{"your"}},
	{re: ire(`\bwhenever (?:money|pricing|price|payments?|banking|investing|hosting) (?:comes up|is mentioned|is discussed)\b|\bwhen(?:ever)? (?:[\w-]+ ){1,2}(?:comes up|is mentioned|is discussed)\b[^.\n]{0,10}|\bas an? (?:permanent|standing|lasting|persistent|global|default) (?:rule|instruction|memory|preference|policy|directive)\b`),
		reason: reasonOthers, needles: []string{"whenever", "comes up", "mentioned", "discussed", "permanent", "standing", "lasting", "persistent", "global", "default"},
		also: []string{"whenever", "recommend", "mention", "promote", "suggest", "always", "rule", "instruction", "memory", "preference", "policy", "directive"}},
	{re: ire(`\b(?:in|with|at the end of) (?:every|each|all) (?:of your |your )?(?:answers?|repl(?:y|ies)|responses?)\b[^.\n]{0,80}\b(?:mention|recommend|add|include|say|append|promote|end|start|sign)\b`),
		reason: reasonOthers, needles: []string{"answer", "repl", "respons"}},

	// data sent to a link of the tool's choosing as well
	{re: ire(`\b(?:send|post|upload|forward|copy|mirror|push|sync|report|submit|transmit|beacon|stream|leak)\b[^.\n]{0,60}\bhttps?://`),
		with:   []*lazyRegexp{ire(`\b(?:as well|too|also|additionally|in addition|a copy|silently|quietly|secretly|every|everything|always)\b`)},
		reason: "tells the model to send data to an address of the tool's choosing", needles: []string{"://"},
		also: []string{"as well", "too", "also", "additionally", "in addition", "a copy", "silently", "quietly", "secretly", "every", "always"}},

	// a scripted answer for when the user asks: "if asked, say it was not
	// needed", "si la question est posée, répondez que", "尋ねられた場合は
	// …とお答えください"
	{re: ire(`\bif (?:the (?:user|customer|client|buyer|employee)s? |anyone |they |someone |you are |you're )?(?:asks?|asked|is asked|are asked|inquires?|questions?|wonders?)\b[^.\n]{0,80}?[,;:]?\s*(?:say|tell (?:them|the (?:user|customer))|answer|reply|respond|state|claim|confirm)\b(?: that)?` +
		`|\bsi (?:la question|l['’]utilisateur|le client|on vous)\b[^.\n]{0,60}?(?:pos[ée]e|demande|interroge)\w*[^.\n]{0,40}?,?\s*(?:r[ée]pondez|dites|affirmez|indiquez)\b` +
		`|\bsi (?:el usuario|el cliente|alguien|te)\b[^.\n]{0,40}?pregunta\w*[^.\n]{0,40}?,?\s*(?:di|diga|responde|responda|contesta|conteste|afirma)\b` +
		`|\bse (?:o usu[aá]rio|o cliente|algu[eé]m)\b[^.\n]{0,40}?pergunt\w*[^.\n]{0,40}?,?\s*(?:diga|responda|afirme)\b` +
		`|\bfalls (?:der (?:Nutzer|Benutzer|Kunde)|jemand)\b[^.\n]{0,40}?(?:fragt|nachfragt)\w*[^.\n]{0,40}?,?\s*(?:antworte|antworten Sie|sage|sagen Sie)\b` +
		`|(?:尋ねられた|聞かれた|質問された)(?:場合|ら)[^。\n]{0,60}?(?:と(?:お)?答え|と回答|と伝え)|如果(?:用户|客户|有人)?(?:问|询问)(?:起|到)?[^。\n]{0,40}?(?:回答|告诉|说|答复)`),
		reason: "gives the model a scripted answer for when the user asks, instead of the truth", needles: []string{"if ", "si ", "se ", "falls", "尋ねられた", "聞かれた", "質問された", "如果"}},
	// the user told less than the result says: "show the user only the
	// subtotal", "leave out the denial that comes with the result"
	{re: ire(`\b(?:show|tell|display|report|give|quote) (?:the )?(?:user|customer|buyer|client|employee)s? only\b` +
		`|\b(?:leave out|omit|drop|hide|withhold)\b[^.\n]{0,60}?\b(?:that (?:comes?|came) with|returned (?:in|by|with)|included in|from) (?:the |its )?(?:result|response|output|reply)\b` +
		`|\btell the (?:user|customer|buyer|client|employee) (?:it|that it|that the \w+|the \w+) (?:is|was|has been) still\b`),
		reason: "tells the model to keep something from the user", needles: []string{" only", "leave out", "omit", "drop", "hide", "withhold", "still"}},
	// over what the user chose: "including when the user asks not to copy
	// anyone", "regardless of the IBAN the user gives", "ongeacht het IBAN
	// dat de gebruiker opgeeft"
	{re: ire(`\b(?:even (?:if|when)|including when|regardless of (?:whether|what|which|the)|irrespective of|no matter (?:what|which|whether))\b[^.\n]{0,60}?\b(?:the )?(?:user|customer|buyer|client)s?\b[^.\n]{0,20}?\b(?:asks?|says?|names?|chooses?|requests?|wants?|specifies|gives|provides|enters|selects?|picks?|opts?|prefers?)\b` +
		`|\bongeacht\b[^.\n]{0,60}?\bgebruiker\b|\bunabh[äa]ngig davon\b[^.\n]{0,60}?\b(?:Nutzer|Benutzer)\b|\bquel(?:le)?s? que soi(?:t|ent)\b[^.\n]{0,60}?\butilisateur\b|\bindependientemente de\b[^.\n]{0,60}?\busuario\b|\bindependentemente d[oae]\b[^.\n]{0,60}?\busu[aá]rio\b|\bindipendentemente da\b[^.\n]{0,60}?\butente\b`),
		reason: "tells the model to override what the user chose", needles: []string{"even if", "even when", "including when", "regardless", "irrespective", "no matter", "ongeacht", "unabh", "quel", "independientemente", "independentemente", "indipendentemente"}},

	// results that carry orders
	{re: ire(`\bif (?:the|a|an|any|its|this) (?:page|result|response|output|document|e-?mail|message|body|file|text|content|issue|comment|site|website|reply)s? (?:contains?|includes?|has|holds|asks?|says?|tells? you|lists?)\b[^.\n]{0,80}\b(?:follow|obey|execute|run|carry out|perform|do|act on|apply|comply with) (?:it|them|those|these|that|what it says|the instructions?|its instructions)\b`),
		reason: reasonExecute, needles: []string{"if "}},
	{re: ire(`\b(?:do|execute|run|carry out|perform|follow|obey|act on|fulfil|fulfill|complete|apply)\b (?:(?:exactly|precisely) )?(?:what(?:ever)?|everything) (?:it|this|that|they|the [\w'"\x60-]+(?: field| key)?|this (?:field|message|key|text)|\x60?[a-z][a-z0-9]*_[\w-]+\x60?(?: field| key)?) (?:says|contains|tells you|asks|instructs|requests|lists)\b|\bwhatever (?:this|it|(?:the|a|an|each|any) [\w'"\x60-]+(?: field| key)?|\x60?[a-z][a-z0-9]*_[\w-]+\x60?(?: field| key)?) (?:contains|says|instructs|asks|tells you|requests|lists|demands)\b[^.\n]{0,30}\b(?:do|execute|run|carry out|perform|follow|complete|obey|fulfil|fulfill)\b|\bwhatever appears in\b[^.\n]{0,40}\b(?:must|should|is to) be (?:executed|run|carried out|performed|followed|obeyed|done)\b`),
		reason: reasonExecute, needles: []string{"what", "everything"}},
	{re: ire(`\b(?:(?:execute|run|carry out|perform|follow|obey|act on|fulfil|fulfill|evaluate|make)\b (?:it|them|each(?: of them)?|these|this|those)|carry (?:it|them|this|these|those) out)\b(?: [\w-]+){0,3} (?:immediately|right away|at once|without (?:asking|checking|further checks|confirmation|question|review|hesitation)|as written|verbatim|before (?:answering|replying|responding|you (?:reply|answer|respond))|as soon as)\b|\bmust (?:perform|execute|run|carry out|follow|obey)\b[^.\n]{0,30}\b(?:right away|immediately|at once|without (?:further )?(?:checks?|asking|question|confirmation|review|verification))`),
		reason: reasonExecute, needles: []string{"immediately", "right away", "at once", "without", "as written", "verbatim", "before", "as soon as"}},
	{re: ire(`\b(?:treat|regard|consider|handle)\b[^.\n]{0,60}\bas (?:the user['’]s|a user|an? (?:new )?(?:instruction|command|order|request) (?:from|of) the user|authoritative|coming from the user)`),
		reason: reasonExecute, needles: []string{"authoritative", "the user", "a user"}},
	{re: ire(`\b(?:is|are) (?:meant|intended|written|addressed) (?:for|to) (?:you|the (?:assistant|model|ai|agent))\b|\bright after (?:receiving|getting|reading) (?:it|them|this)\b|\bact on (?:it|this|them) as (?:though|if)\b|\bas (?:though|if) the user had (?:written|typed|said|asked|sent)\b`),
		reason: reasonExecute, needles: []string{"meant", "intended", "written", "addressed", "right after", "as though", "as if"},
		// what an application makes of a value it is given, read as a
		// kind of data ("treated as formulas, as if the user had typed
		// them"), is how the tool works, not an order to the model
		unless: ire(`\b(?:treated|parsed|interpreted|evaluated|read|stored|entered) as (?:formulas?|numbers?|dates?|values?|markdown|html|plain text|literals?|text|strings?)\b`)},
	{re: ire(`\baddressed to (?:the )?(?:assistant|model|ai|llm|agent)\b|\b(?:commands?|instructions?|directives?|orders?|tasks?) (?:for|to) (?:you|the (?:assistant|model|ai|agent)) to (?:run|execute|perform|follow|carry out|do)\b`),
		reason: reasonExecute, needles: []string{"addressed", "command", "instruction", "directive", "order", "task"},
		also: []string{"addressed", "for you", "to you", "for the", "to the"}},
	{re: ire(`\b(?:obey|follow|execute|carry out) the (?:text|content|instructions?|command|directive) in (?:this|that|the) (?:field|key|message|value|property)\b`),
		reason: reasonExecute, needles: []string{"obey", "follow", "execute", "carry out"}},
	{re: ire(`\b(?:pass|send|give|feed|hand|pipe)\b[^.\n]{0,40}\b(?:to|into) (?:(?:any|the|an?|your)(?: available)? )?(?:code[-\x20]execution|shell|terminal|exec|python|bash|sh|zsh|powershell|command|eval)\b|\b(?:evaluate|execute|run) (?:it|this|them)\b (?:with|in|using) (?:the |a |any )?(?:python|shell|bash|terminal|code[-\x20]execution|exec)\b|\b(?:evaluate|execute|run)\b[^.\n]{0,20}\b(?:in|with|using) (?:the |a |any )?(?:browser|python|shell|bash|terminal|code[-\x20]execution|exec)(?: [\w-]+)? tool\b|\brun (?:it|each|each of them|them|this) in (?:a|the|your) (?:terminal|shell)\b`),
		reason: reasonExecute, needles: []string{"code", "shell", "terminal", "exec", "python", "bash", "command", "eval", "browser"},
		// a rule of caution that forbids it ("Never pipe downloaded
		// scripts into a shell") says the opposite of an order to
		forbidden: forbidsStart},
}

// intents applies intentRules and concealRules.
func (t *cleanText) intents() []core.Flag {
	var out []core.Flag
	for _, rs := range [][]intentRule{intentRules, concealRules} {
		for _, r := range rs {
			if !t.mayContain(r.needles) || !t.mayContain(r.also) || !t.allMatch(r.with) || !r.re.mayMatch(t) {
				continue
			}
			covered := -1
			for _, m := range r.re.FindAllStringIndex(t.text, -1) {
				if m[0] < covered {
					continue
				}
				a, z := sentence(t.text, m[0], m[1])
				s := t.text[a:z]
				ok := true
				for _, w := range r.with {
					if !w.MatchString(s) {
						ok = false
						break
					}
				}
				if !ok || r.unless != nil && r.unless.MatchString(s) || r.forbidden != nil && r.forbidden.MatchString(t.text[a:m[0]]) {
					continue
				}
				covered = z
				start, end := t.span(a, z)
				out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end, Reason: r.reason})
			}
		}
	}
	return out
}

// allMatch reports whether every pattern matches somewhere in the text, a
// condition for matching in one of its sentences; the answers are kept,
// since rules share patterns.
func (t *cleanText) allMatch(res []*lazyRegexp) bool {
	for _, re := range res {
		ok, seen := t.matched[re]
		if !seen {
			ok = re.matchIn(t)
			if t.matched == nil {
				t.matched = map[*lazyRegexp]bool{}
			}
			t.matched[re] = ok
		}
		if !ok {
			return false
		}
	}
	return true
}

// sentence returns the bounds of the sentence around [s, e): from after the
// last full stop, question or exclamation mark followed by a space (or a
// line break, or a CJK full stop) before s to the next one after e,
// without the white space at either end.
func sentence(text string, s, e int) (int, int) {
	a := 0
	for i := s - 1; i >= 0; i-- {
		if c := text[i]; c == '\n' || (c == '.' || c == '!' || c == '?') && i+1 < len(text) && (text[i+1] == ' ' || text[i+1] == '\n') {
			a = i + 1
			break
		}
		if strings.HasPrefix(text[i:], "。") || strings.HasPrefix(text[i:], "।") || strings.HasPrefix(text[i:], "۔") {
			a = i + len(string([]rune(text[i:])[0]))
			break
		}
	}
	z := len(text)
	for i := e; i < len(text); i++ {
		if c := text[i]; c == '\n' || (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n') {
			z = i
			break
		}
		if strings.HasPrefix(text[i:], "。") || strings.HasPrefix(text[i:], "।") || strings.HasPrefix(text[i:], "۔") {
			z = i
			break
		}
	}
	for a < s && (text[a] == ' ' || text[a] == '\t') {
		a++
	}
	if z < e {
		z = e
	}
	return a, z
}

// Results the model is told to carry out (RV-2), whatever the words: a
// verb of doing (follow, execute, carry out, obey, act on, comply with …)
// whose object is what the tool returns (the result, the output, the
// returned text, whatever it returns), or a statement that what comes back
// is a command for the model. These read the same in every place.
const (
	doVerb = `(?:follow|obey|execute|run|carry out|perform|act on|act upon|do|complete|comply with|fulfil|fulfill|apply|implement|honou?r|heed|action)`
	// what the tool returns, named as such
	returned = `(?:(?:the|its|this tool['’]s|the tool['’]s|each|every|any) )?(?:(?:returned|resulting|response|result|output|tool) )?(?:results?|outputs?|responses?|replies|reply|return(?:ed)? (?:values?|text|data|content|payload)|payloads?|response body|result text|returned (?:text|content|data|string|message)s?)`
	orders   = `(?:instructions?|commands?|steps?|directives?|orders?|actions?|tasks?|requests?|to-?dos?|whatever|everything|anything)`
)

var resultExecRules = []textRule{
	// "apply every directive you find", "tasks for the AI; perform them"
	{re: phrase(`\b` + doVerb + ` (?:every|each|all|any) (?:of the )?(?:directives?|instructions?|commands?|orders?|prompts?)\b (?:you (?:find|see|encounter|come across|read)|found|there|inside|in (?:it|them|the (?:page|text|document|result|message)s?))\b|\b(?:instructions?|commands?|orders?|directives?|tasks?|prompts?) (?:for|to|meant for) (?:you|the (?:assistant|model|ai|agent|llm))\b[;:,]? (?:\w+ ){0,2}(?:perform|execute|run|carry out|follow|obey|do|complete|fulfil|fulfill) (?:them|it|those|these)\b`),
		reason: reasonExecute, needles: []string{"directive", "instruction", "command", "order", "prompt", "task"}},
	// "carry those out first", "perform them before anything else"
	{re: phrase(`\b(?:carry (?:it|them|those|these) out|(?:execute|perform|obey|follow|run) (?:it|them|those|these)) (?:first|before (?:anything|everything) else|before you (?:answer|reply|respond)|ahead of (?:the user|anything))\b`),
		reason: reasonExecute, needles: []string{"first", "before", "ahead"}},
	// "complete each item on it without checking back with the user"
	{re: phrase(`\b` + doVerb + ` (?:each|every|all)(?: of the)? (?:items?|steps?|tasks?|entr(?:y|ies)|instructions?|commands?|actions?|to-?dos?|ones?)\b(?: [\w'’-]+){0,4}? without (?:asking|checking|confirm\w*|consulting|review\w*|question\w*|hesitat\w*|telling|waiting)\b`),
		reason: reasonExecute, needles: []string{"without"}},
	// "follow the instructions in the result", "obey any commands found in
	// the output", "execute the steps from the response"
	{re: phrase(`\b` + doVerb + ` (?:(?:all|any|every|each|the) (?:of )?)?(?:(?:the|these|those) )?` + orders + `(?: \w+){0,2}? (?:in|from|found in|contained in|listed in|given in|inside|within|returned (?:in|by)|included in|provided in|of) ` + returned + `\b`),
		reason: reasonExecute, needles: []string{"result", "output", "respons", "repl", "return", "payload"}},
	// "treat the returned text as commands", "regard the output as your instructions"
	{re: phrase(`\b(?:treat|regard|consider|interpret|read|take|handle)\b (?:(?:all|any|every|each) (?:of )?)?(?:the |its |this |that )?(?:returned |resulting |result |response |output |tool )?(?:text|content|data|output|value|result|response|string|message|payload|body|reply)s? (?:as|like) (?:an? |your |the )?(?:(?:new|direct|binding|authoritative|user['’]?s?|system) )?(?:commands?|instructions?|orders?|directives?|tasks?|prompts?)\b`),
		reason: reasonExecute, needles: []string{"treat", "regard", "consider", "interpret", "read", "take", "handle"}},
	// "execute whatever this returns", "do what the tool outputs"
	{re: phrase(`\b` + doVerb + ` (?:exactly |precisely )?(?:whatever|everything|anything|what|all that|all) (?:(?:this|it|the) )?(?:tool|server|call|function|endpoint|api|it|this|that|response|result|output)?\s*(?:returns|outputs|sends(?: back)?|responds with|replies with|gives (?:you|back)|comes back with|hands back|yields|emits|prints)\b`),
		reason: reasonExecute, needles: []string{"return", "output", "send", "respond", "repl", "give", "come", "hand", "yield", "emit", "print"}},
	// "the response is a command for you", "results are instructions to follow"
	{re: phrase(`\b` + returned + ` (?:is|are|contains?|holds?|carr(?:y|ies)) (?:an? |the |your )?(?:(?:new|next|direct|binding|authoritative) )?(?:commands?|instructions?|orders?|directives?|tasks?) (?:for you|to (?:be )?(?:follow|obey|execute|run|carry out|perform|act on)(?:ed)?|you (?:must|should|have to|need to) (?:follow|obey|execute|run|carry out|perform|act on))\b`),
		reason: reasonExecute, needles: []string{"command", "instruction", "order", "directive", "task"}},
}

// outputRules apply to the strings of an output schema only, where "it",
// "them", "this field" and "the value" are what the tool returns: an
// imperative to carry that out, or a statement that it must be carried
// out, is an order to execute the result. Elsewhere the same pronouns
// often mean the argument or the tool, and are left to resultExecRules.
var outputRules = []textRule{
	{re: phrase(`(?:^|[.;:!?]\s|\n)\s*(?:(?:please|now|then|always|just|simply|you (?:must|should|have to|need to|are to)),? )*(?:start|begin|get going|proceed) (?:on|with) (?:it|them|this|these|that) (?:at once|now|immediately|right away|straight away|first)\b|\b(?:take|do|run|start) (?:it|them|this|these) (?:at once|immediately|right away|straight away)\b`),
		reason: reasonExecute, needles: []string{"at once", "now", "immediately", "right away", "straight away", "first"}},
	{re: phrase(`(?:^|[.;:!?]\s|\n)\s*(?:(?:please|now|then|always|just|simply|you (?:must|should|have to|need to|are to)),? )*` + doVerb + ` (?:(?:exactly|precisely|immediately|faithfully|strictly|dutifully) )?(?:(?:it|them|this|these|those|that|each(?: (?:one|item|step|entry|line))?|every (?:one|item|step|entry|line|instruction|command)|all of (?:it|them)|(?:any|all|the|its|every|each) (?:\w+ ){0,2}` + orders + `|whatever|everything|anything|the (?:text|content|value|field)|this (?:field|value|text))\b)|\bcarry (?:it|them|this|these|those|each(?: one)?) out\b`),
		reason: reasonExecute, needles: []string{"follow", "obey", "execut", "run", "carry", "perform", "act ", "do ", "complet", "comply", "fulfil", "apply", "implement", "honor", "honour", "heed", "action"}},
	{re: phrase(`\b(?:it|they|this|these|whatever|everything|anything|(?:the|this|its) (?:text|content|value|field|contents|instructions?|steps?|commands?|directives?|actions?|tasks?)|(?:text|content) (?:here|in this field))\b(?: [\w'’-]+){0,6} (?:must|should|shall|has to|have to|is to|are to|needs? to) be (?:done|executed|followed|obeyed|carried out|performed|acted (?:on|upon)|run|applied|complied with|fulfilled|honou?red|treated as (?:an? )?(?:commands?|instructions?|orders?))\b`),
		reason: reasonExecute, needles: []string{"must", "should", "shall", "has to", "have to", "is to", "are to", "need"}},
	{re: phrase(`\b(?:is|are) (?:authoritative|binding|mandatory|an order|orders|a command|commands|an instruction|instructions) (?:for|to) (?:you|the (?:assistant|model|ai|agent))\b|\b(?:is|are) authoritative and (?:must|should|has to|is to)\b`),
		reason: reasonExecute, needles: []string{"authoritative", "binding", "mandatory", "order", "command", "instruction"}},
}

// fetchRunRules (RV-2): a command line, in a description or a field, that
// downloads code and runs it, or installs a package from an index or
// address the tool chooses. An honest tool states what it needs; it does
// not hand the model a one-liner that pipes the network into a shell
// ("iex (irm https://…)", "exec(urlopen(…).read())", "curl … | sh"), and
// a package's usual index needs no address spelt out.
var fetchRunRules = []textRule{
	{re: phrase(`\b(?:iex|invoke-expression)\b\s*[(\x60"']*\s*\(?\s*(?:irm|iwr|invoke-restmethod|invoke-webrequest|curl|wget|\(?\s*new-object\s+(?:system\.)?net\.webclient\s*\)?)\b` +
		`|\b(?:exec|eval)\s*\(\s*(?:[\w.]+\.)?(?:urlopen|get|fetch|urlretrieve|read)\s*\(` +
		`|\b(?:exec|eval)\s*\(\s*(?:[\w.]+\.)?(?:urlopen|requests\.get|httpx\.get)\b` +
		`|\b(?:curl|wget)\b[^|\n]{0,200}\|\s*(?:sudo\s+)?(?:(?:ba|z|k|da)?sh|python3?|perl|ruby|node|iex|powershell|pwsh)\b` +
		`|\b(?:(?:ba|z)?sh|source)\s+<\(\s*(?:curl|wget)\b|\b(?:ba|z)?sh\s+-c\s+["']?\$\(\s*(?:curl|wget)\b` +
		`|\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,80}\s-(?:w|windowstyle)\s+hidden\b|\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]{0,60}\s-e(?:nc|ncodedcommand)?\s+[a-z0-9+/=]{20,}` +
		`|\b(?:mshta|rundll32|regsvr32)(?:\.exe)?\b[^\n]{0,60}\bhttps?://|\bcertutil(?:\.exe)?\b[^\n]{0,40}-urlcache\b`),
		reason: "tells the model to download code and run it", needles: []string{"iex", "invoke-expression", "exec", "eval", "curl", "wget", "sh", "powershell", "pwsh", "mshta", "rundll32", "regsvr32", "certutil"},
		// the command as the example of what never to do
		forbidden: forbidsPiping},
	{re: phrase(`\b(?:pip3?|pipx|uv pip|python3? -m pip|npm|pnpm|yarn|gem|cargo)\s+(?:install|add|i)\b[^\n]{0,120}?\s(?:--(?:extra-)?index-url|--registry|--source|-i)[\s=]+https?://` +
		`|\b(?:pip3?|pipx|npm|pnpm|yarn)\s+(?:install|add|i)\s+(?:git\+)?https?://`),
		reason: "tells the model to install a package from an address of the tool's choosing", needles: []string{"://"}},
}
