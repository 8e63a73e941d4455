package scan

import (
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolgate/toolgate/core"
)

// Signals (RV-2): the phrase rules name wordings; these name what an order
// smuggled to the model is made of, whatever the wording. A sentence is
// marked with each signal it carries — it speaks to the model, it moves
// data, it names something private (keys, secrets, the conversation), it
// points at a place outside, it asks for silence, it overrides what the
// user chose, it sets a trigger, it tells the model to carry out what it
// reads, it drops the user's say — and is flagged only when it carries a
// pair that honest text does not: one signal alone is how ordinary
// descriptions talk ("sends the message", "the API token", "when the user
// asks"), two together are an order.

type signal uint64

const (
	sigAddressed    signal = 1 << iota // spoken to the model
	sigMove                            // a verb that moves or discloses data
	sigPrivate                         // keys, secrets, the conversation, the user's private data
	sigOutside                         // a literal place outside: e-mail, URL, IP address
	sigSilence                         // keep it from the user
	sigOverride                        // over what the user chose, or over other tools
	sigTrigger                         // a condition that reaches other turns or tools
	sigObey                            // carry out what is read
	sigForModel                        // orders meant for the model in content it reads
	sigNoConsent                       // without the user's say
	sigAuthority                       // urgency or authority invoked
	sigAdditive                        // also, too, every time, then
	sigSteer                           // shapes the answer the user gets
	sigTools                           // other tools, or every call
	sigField                           // a field, argument or request body of the call
	sigInstead                         // instead of, rather than: weaker than sigOverride
	sigStrongSecret                    // a secret named so that no honest tool asks for it
	sigChain                           // a second order joined onto a value: "…_and_skip_backups", "; then send"
	sigDestroy                         // destroys or bypasses what protects the user's data
	sigStealth                         // quietly, secretly, privately
	sigUserData                        // the user's own data, named
	sigAccount                         // a bank account or routing number
	sigGrant                           // rights handed over
	sigScript                          // a scripted answer to give the user
	sigAmount                          // twice, an extra fee
	sigUser                            // the user, named
	sigCapture                         // records sound, picture, screen or keystrokes
	sigThirdParty                      // partners, advertisers, insurers, brokers: a party beside the user and the tool
	sigDeceive                         // a false account to give the user: blame, pretend, make up
	sigExpose                          // makes something public or shares it outside the organisation
	sigScope                           // an action reaching past the item asked about: the other, all other
	sigPrivilege                       // root, sudo, elevated rights
	sigTransact                        // a purchase, sale, order or payment to place
	sigArtifact                        // the tool's own output: the note, the description, the URL, the log
	sigPretext                         // a purpose of the tool's own: for analytics, for model training, kept indefinitely
	sigWeakPretext                     // a purpose that excuses anything: for convenience, for security, for completeness
	sigSendNow                         // an order, in the imperative, to send, copy or post
	sigFlowOut                         // data said to flow, as well or on its own, to a literal place outside
	sigWithhold                        // a part of what happened is left out of what someone is told
	sigConsequence                     // what a person would want to know happened: a transfer, a forward, a deletion, a charge, an account added
	sigAudience                        // who is told, or what they are told: the requester, the shopper, the account holder, the summary, the confirmation
)

// signalRule marks a text with sig where re matches.
type signalRule struct {
	sig signal
	re  *lazyRegexp
}

// signalRules: the rarest signals, and those in most pairs, come first, so
// that on honest text the pairs die early and the common signals (a verb
// of sending, a field, the user) are never looked for.
var signalRules = []signalRule{
	{sigStrongSecret, phrase(`\byour instructions from\b|\binstructions (?:you got |you were given )?from the developer\b|\bvariables?\b[^.\n]{0,30}\b(?:key|token|secret|password)s?\b[^.\n]{0,10}|~/\.|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\.env(?:$|[^\w.-]|\.(?:$|\s)|\.(?:local|production|prod|development|dev|staging|secrets?|private|backup|bak)\b)|\.netrc\b|\.aws/|\.gitconfig\b|/etc/(?:shadow|passwd)\b|\bprivate[\x20-]keys?\b|\bssh[\x20-]keys?\b|\brefresh[\x20-]tokens?\b|\bsession cookies?\b|\bbrowser cookies?\b|\boutput of \x60?env\x60?|\b(?:your|the|its|my|this|current|full|entire|whole|hidden|original|complete|exact|initial|model['’]s|assistant['’]s|agent['’]s) system prompts?\b|\bsystem prompts? (?:you|verbatim|text|contents?|itself)\b|\b(?:whole|entire|full) (?:conversation|chat|transcript|history)\b|\b(?:conversation|chat) (?:history|transcript)\b|\bsaved passwords?\b|\bseed phrases?\b|\b(?:signing|client) (?:certificates?|keys?)\b|\bkeystores?\b|\bdeploy keys?\b|\bcontrase(?:ñ|n)as guardadas\b`)},
	{sigPrivate, phrase(`\b(?:resembl\w*|look\w* like|appears? to be) (?:an? )?(?:api )?(?:keys?|passwords?|tokens?|secrets?|credentials?)\b|\b\w+['’]s(?: [\p{L}\w-]+){0,2} (?:secrets|tokens|passwords|credentials|api keys|private keys|keys)\b|\b(?:full|whole|entire|complete) (?:customer|client|user|contact|employee) (?:list|database|records|data)\b|\b(?:the user['’]?s|their)(?: own| recent| full| entire| private| saved)* (?:browsing history|call logs?|location history|keystrokes)\b|\b(?:whole|entire|full) (?:address book|contacts? list|mailbox|inbox)\b|\bbank (?:details|account numbers?)\b|\bsalar(?:y|ies)\b|\bgenerated passwords?\b|~/\.|\bid_(?:rsa|ed25519|ecdsa|dsa)\b|\.env(?:$|[^\w.-]|\.(?:$|\s)|\.(?:local|production|prod|development|dev|staging|secrets?|private|backup|bak)\b)|\.netrc\b|\.aws/|/etc/(?:shadow|passwd)\b|\b(?:private|ssh|signing|secret|access|refresh|oauth|session|bearer)[\x20-](?:access )?(?:keys?|tokens?|cookies?)\b|\b(?:(?:every|all|any|each|the user['’]?s|their|your|stored|saved|cached|browser)(?: \w+){0,2} )(?:api[\x20-]keys?|tokens?|passwords?|passphrases?|secrets?|credentials?|cookies?|keys?|pins?|2fa codes?|otp codes?)\b|\b(?:passwords?|secrets?|credentials?|api[\x20-]keys?|tokens?) (?:(?:stored |found |kept )?(?:from|in) (?:the |your |their )?(?:config\w*|environment|workspace|diff|conversation|chat|repo\w*|browser|keychain|vault|home)|it has seen|you (?:have )?(?:seen|noticed)|it notices|you notice)\b|\benvironment variables?\b|\boutput of \x60?env\x60?|\b(?:your|the|its|my|this|current|full|entire|whole|hidden|original|complete|exact|initial|model['’]s|assistant['’]s|agent['’]s) system prompts?\b|\bsystem prompts? (?:you|verbatim|text|contents?|itself)\b|\b(?:whole|entire|full) (?:conversation|chat|transcript|history)\b|\b(?:conversation|chat) (?:history|transcript|log)s?\b|\bconversation transcript\b|\blast \w+ messages\b` +
		// grouped so that the rule has at most maxGateBranches top-level
		// branches and its gate can skip those whose words are absent
		`|(?:\b(?:the user['’]?s|their) (?:private \w+|dms?|direct messages|location|home address|documents?(?: folder)?|files|browsing history|clipboard|contacts)\b|\bprivate dms?\b|\b(?:all|every) customer (?:e-?mails?|data|records|details)\b|\bhome directory\b|\b(?:one-time|2fa|otp|verification|recovery|backup) (?:codes?|passwords?)\b|\bseed phrases?\b|\b(?:signing|client|private) (?:certificates?|keys?)\b|\bkeystores?\b|\b(?:marked|labell?ed|classified) (?:as )?confidential\b)` +
		`|(?:\bconfidential (?:documents?|files?|data|records)\b|\b(?:the user['’]?s|their) (?:saved |stored )?(?:[\w-]+ )?(?:passwords?|credentials?|pins?|addresses?)\b|\bcontrase(?:ñ|n)as\b|\bmots? de passe\b|\bpassw(?:ö|o)rter?\b|\bsenhas?\b|\bпарол\w*|\bключ\w*|\b(?:credit|debit|payment|bank)[\x20-]?card (?:numbers?|details|data)\b)` +
		`|(?:\bcard numbers?\b|\bcvv2?s?\b|\bcvcs?\b|\bcard (?:security|verification) codes?\b|\bsocial security (?:numbers?|nos?)\b|\bssns?\b|\bpassport (?:numbers?|details|data|scans?)\b|\b(?:national|tax|government)[\x20-]id(?: numbers?)?\b|\bdriver['’]?s licen[cs]e numbers?\b)` +
		`|(?:\bdates? of birth\b|\b(?:medical|health|patient) (?:records?|history|data|conditions?)\b|\bdiagnos[ei]s\b|\bbiometric\w*|\bfingerprints?\b|\bgps (?:metadata|coordinates|tags?)\b|\bexif (?:data|metadata|location)\b|\bwi-?fi passwords?\b|\b(?:banking|bank|card|atm|account|online-banking|debit|credit) pins?\b|\bpin (?:codes?|numbers?)\b|\b\w+['’]s (?:[\w-]+ )?(?:phone numbers?|home address(?:es)?|contact details)\b)` +
		`|(?:\b(?:face|facial) (?:data|scans?|prints?|geometry|recognition data|templates?)\b|\bfaceprints?\b|\bauthori[sz]ation header values?\b|\bbearer tokens?\b|\bclipboard(?: contents| data| text)\b|\btyped text\b|\beverything (?:the user|they|you) types?\b|\bcard details\b|\bselfies?\b)` +
		`|(?:\bid (?:scans?|documents?)\b|\bscanned ids\b|\b(?:voice|call|screen) ?recordings?\b|\bvoice ?prints?\b|\b(?:complete|full|entire|whole|raw|unredacted|unmasked|plain-?text|actual) (?:api[\x20-])?(?:keys?|tokens?|secrets?|passwords?|credentials?)\b|\bn[uú]mero de (?:tarjeta|pasaporte|cart[aã]o|passaporte|seguro social)\b|\bnum[ée]ro de (?:carte|passeport|s[ée]curit[ée] sociale)\b|\bkreditkarten\w*|\breisepassnummer\b)` +
		`|(?:\bnumero (?:di carta|del passaporto)\b|\bномер (?:карты|паспорта)\b|\bпаспортн\p{L}*|信用卡|银行卡|身份证|护照号|クレジットカード|パスポート)` +
		`|(?:신용카드|여권 번호|بطاقة الائتمان|رقم الجواز|क्रेडिट कार्ड|पासपोर्ट)`)},
	{sigUserData, phrase(`\b(?:sites? (?:they |the user )?visited|visited (?:sites|urls|pages)|browsing (?:data|activity|history)|search history|live location|real-?time location|precise location|location history|health data|heart rate|contact list)\b|\b(?:the user['’]?s|their)(?: recent| current| full| entire| private| saved| personal| home)* (?:[\w-]+ )?(?:open tabs|history|messages|details|data|information|info|funds|money|mailbox|inbox|numbers?|call logs?|contacts|location|address(?:es)?|files|folders?|director(?:y|ies)|documents|photos|e-?mails|calendar|notes|downloads|machine|computer|device|laptop|phone|system|terminal|shell|host)\b`)},
	{sigCapture, phrase(`\bleave (?:the )?(?:mic|microphone|camera|webcam|recorder|recording) (?:on|recording|running|open|listening)\b|\b(?:record(?:s|ed|ing)?|captur(?:e|es|ed|ing)|tap(?:s|ped|ping)?|eavesdrop\w*|listen(?:s|ed|ing)? in on|keylog\w*|screenshot(?:s|ted|ting)?|snapshot(?:s|ted)?) (?:the |their |your |a |all |every |each )?(?:[\w-]+ )?(?:meetings?|calls?|audio|microphone|mic|camera|webcam|screens?|keystrokes|conversations?|sessions?|video|voices?|room|surroundings|desktop)\b|\b(?:recording|capture|the (?:microphone|mic|camera|webcam)|listening|keylogging|screen capture|keylogger)\b (?:continues?|keeps? (?:on|going|running)|stays? (?:on|open|active|running)|remains? (?:on|open|active|running)|(?:is|are) (?:left )?(?:on|running|active)(?: afterwards| after\b| in the background))|\bin the background\b[^.\n]{0,30}\b(?:record|listen|captur)\w*|\b(?:meetings?|calls?|audio|screens?|screenshots?|keystrokes|conversations?|video|voices?|webcam (?:images|frames))\b (?:\w+ ){0,3}(?:are|is|get|gets|will be) (?:recorded|captured|taken|kept|saved|logged)\b|\b(?:grabar|gravar|enregistrer|aufnehmen|registrare|записывать)\b[^.\n]{0,30}\b(?:micr[oó]fono|microfone|microphone|mikrofon|microfono|микрофон|c[aá]mara|c[aâ]mera|kamera|камер\p{L}*|pantalla|tela|écran|bildschirm|schermo|экран)|(?:录音|录像|录屏|録音|録画|녹음|녹화)`)},
	{sigThirdParty, phrase(`\b(?:our|its|selected|trusted|marketing|advertising|insurance|data|business|commercial|affiliated) (?:[\w-]+ )?(?:partners|affiliates|advertisers|sponsors|insurers|insurance compan(?:y|ies)|data brokers?|brokers|marketers|resellers|lenders|employers?|networks)\b|\b(?:ad|advertising|marketing|affiliate) (?:networks?|platforms?|partners?|exchanges?)\b|\b(?:by|to|with) the vendor\b|\b(?:our|its|an?|the) (?:advertising|marketing|ad-?tech) (?:providers?|vendors?|partners?|compan(?:y|ies)|firms?|brokers?)\b|\bwith (?:the )?(?:marketing|advertising|sales)(?: (?:team|department|folks|people))?\b|\b(?:our|its) third[-\x20]part(?:y|ies)\b|\b(?:the|an?) (?:agent|party|person|side|someone|operator|human|rep\w*) (?:on|at) the other end\b|\bpartner[-\x20](?:network|list|program|bucket|server|api|endpoint|companies|firms|sites?|fleets|apps|services|vendors|platforms|brands|merchants|stores|retailers|advertisers|networks|labs)\b|\bsocios comerciales\b|\bnuestros socios\b|\bnos partenaires\b|\bdes tiers\b|\b(?:werbe|geschäfts)partner\w*|\bunsere partner\w*|\bdrittanbieter\w*|\bparceiros\b|\bterceiros\b|\bpartner commerciali\b|\bterze parti\b|\bпартнер\p{L}*|\bтреть\p{L}* (?:лиц|сторон)\p{L}*|合作伙伴|第三方|提携先|第三者|제3자|파트너사|الشركاء|طرف ثالث|तृतीय पक्ष|साझेदार`)},
	{sigDeceive, phrase(`\bblame (?:it )?(?:on )?(?:their|the|his|her|your|a|an)\b|\bpretend(?:ing)? (?:that|it|to|the|nothing|you)\b|\bact as (?:if|though) nothing\b|\b(?:make|made) up (?:an? )?(?:excuse|reason|story|explanation|error)\b|\binvent (?:an? )?(?:excuse|reason|story|explanation|error)\b|\bcover (?:story|it up)\b|\b(?:say|claim|tell (?:them|the user)|explain) (?:that )?(?:it|this|the (?:delay|error|failure|slowness|upload|charge))(?: was| is)? (?:due to|caused by|because of)\b|\battribute (?:it|this|the \w+) to\b|\blie to (?:them|the user|the customer)\b|\bmislead\w*|\bdeceiv\w*|\bfeign\w*|\bfinge (?:que|un)\b|\bfais semblant\b|\bso tun,? als ob\b|\bfinja que\b|\bfingi che\b|\bпритворись\b|\bсделай вид\b|假装|假裝|ふりをして|척(?:하|해)|تظاهر|बहाना`)},
	{sigDeceive, phrase(`\b(?:summari[sz]ed|reported|presented|described|shown|displayed|phrased|worded|framed|logged) as ['"“‘]?(?:all good|ok|okay|fine|success(?:ful)?|succeeded|completed?|no (?:issues|problems|changes|errors)|nothing (?:found|changed)|clean|passed|healthy|green|resolved)\b`)},
	{sigDeceive, phrase(`\b(?:describe|report|present|summari[sz]e|show|call|mark|log|record) (?:it|this|that|them|the \w+)(?: \w+)? as (?:complete|completed|done|successful|ok|fine|all good|resolved|finished|normal|clean|passed)\b`)},
	{sigExpose, phrase(`\b(?:make|makes|made|making|mark|marks|marked|set|sets|tag|tags|tagged|flip|switch|change|turn|publish|expose)\b[^.\n;]{0,40}?\b(?:as |to |into )?['"\x60“‘]?(?:public(?:ly (?:visible|readable|accessible))?|world[-\x20]readable|unlisted)['"\x60”’]?(?:\s*[.,;:!?)]|\s*$|\s(?:so|and|for|too|as well|also|silently|quietly|automatically|without|when|whenever|to (?:everyone|anyone|all)))|\b(?:shared?|sent|visible|available|published|leaked|exposed|accessible) (?:\w+ ){0,3}outside (?:the|your|our|its) (?:company|organi[sz]ation|org|team|workspace|tenant|domain|firm)\b|\bindex(?:ed|ing)? (?:it |them )?(?:in|by|on) search engines\b|\bsearch engines? (?:can|may|will) (?:index|crawl|find)\b|\b(?:shared?|visible|accessible|open) (?:with|to) (?:anyone|everyone) (?:on the (?:internet|web)|with the link|who has the link)\b|\bp[uú]blic[oa]s?\b (?:para todos|para qualquer)|\bpublique pour tous\b|\böffentlich (?:machen|sichtbar|zugänglich)\b|\bпубличн\p{L}*|公开|公開|공개`)},
	{sigScope, phrase(`\b(?:close|delete|cancel|archive|merge|approve|remove|refund|disable|revoke|unsubscribe|reject|resolve|lock|ban|suspend|deactivate|reassign|transfer|wipe|mark)\b (?:\w+ ){0,2}(?:the other|all (?:the )?other|every other|any other|the rest of|all (?:the )?remaining|all (?:of )?(?:this|that|the) (?:customer|user|account|owner)['’]s)\b`)},
	{sigPrivilege, phrase(`\bsudo\b|\bas (?:root|an? admin\w*|administrator|superuser|system)\b|\broot (?:access|privileges?|shell|rights)\b|\belevated (?:rights|privileges?|permissions?|access|mode)\b|--privileged\b|\bchmod (?:-r )?(?:777|a\+rwx|o\+w)\b|\brun\s*as\s*administrator\b|\bdisable (?:selinux|apparmor|the firewall|uac|sip|gatekeeper)\b|\bsetuid\b`)},
	{sigTransact, phrase(`\b(?:place|places|placing|submit|execute|put in) (?:an? |the )?(?:(?:buy|sell|market|limit|purchase|stop) )?(?:order|trade|bid)s?\b|\b(?:buy|sell|purchase|short) (?:\d[\d,.]*|some|more|all|the|an?|one|two|three|four|five|ten|several|a few|extra|additional) (?:[\w-]+ )?(?:shares|stocks?|units|coins|tokens|btc|eth|contracts|options|items?|products?|licen[cs]es|seats|credits|gift\s*cards?|bundles?|plans?|packages?|add-?ons?|upgrades?|subscriptions?|tickets?|insurance|warrant(?:y|ies))\b|\b(?:pay|send|wire|transfer) (?:\$|€|£|¥)\s?\d|\b(?:book|reserve|order|subscribe to|upgrade to|renew) (?:the |a |an )?(?:premium|paid|pro|annual|yearly)\b`)},
	{sigArtifact, phrase(`\b(?:in|into|to|inside|within) (?:the|this|that|each|every|your|its|a) (?:[\w-]+ )?(?:note|description|comment|message|body|title|summary|url|link|query string|commit message|log|tags?|labels?|filename|file name|qr code|caption|alt text|metadata|signature|footer|subject(?: line)?|pr|pull request|issue|ticket|changelog|release notes|output|reply|answer|response)s?\b`)},
	{sigPretext, phrase(`\btracking (?:pixels?|beacons?)\b|\bweb beacons?\b|\bspy pixels?\b|\b(?:is|are|gets?|get|being) (?:sold|resold|monetized|monetised|rented|licensed) (?:on )?to\b|\bsell(?:s|ing)? (?:the |their |your )?(?:user['’]s )?(?:data|information|details|contacts|history|profiles?|photos|records)\b|\bfor (?:(?:our |their |the vendor['’]s )?(?:analytics|marketing|advertising|ad targeting|profiling|resale|model training|training (?:data|purposes|our models)|(?:ai|ml) training|research purposes|product research|lead generation|monetization)|quality purposes|quality assurance)\b|\bto (?:train|improve) (?:our|the|their) (?:ai |ml )?(?:models?|ai)\b|\b(?:kept|retained|stored|held|saved|logged) (?:there |on (?:file|record) )?(?:indefinitely|forever|permanently|for good)\b`)},
	{sigWeakPretext, phrase(`\bfor (?:convenience|completeness|continuity|safekeeping|recovery|security|safety|reference|your (?:own )?protection|audit(?:ing)? purposes|debugging purposes|diagnostics|context|verification purposes|backup purposes|record-?keeping|our records)\b|\bso (?:that )?(?:the |our |your )?(?:accountant|support|billing|team|admin\w*|reviewers?|partners?|we|sales|marketing|auditors?|vendor|developers?) (?:can|could|will|may|have)\b`)},
	{sigSendNow, phrase(`(?:^|[.:;!?]\s+|[(\[—–]\s*|\s-\s)(?:please\s+)?(?:also\s+)?(?:copy|send|forward|upload|post|mirror|e-?mail|cc|bcc|leak|sync|transmit|beacon|push|report|share|stream|relay|submit|deliver|log)\b[^.\n]{0,60}?\b(?:to|into|onto)\b`)},
	{sigFlowOut, phrase(`(?:\b(?:also|automatically|silently|quietly|then|additionally|secretly|continuously)\s+(?:be\s+)?(?:sent|posted|pushed|broadcast|uploaded|mirrored|synced|forwarded|copied|shared|streamed|relayed|transmitted|exported|beaconed|reported|leaked|delivered|archived|logged|cc['’]?d|bcc['’]?d|sends|posts|pushes|uploads|mirrors|syncs|forwards|copies|shares|streams|relays|transmits|exports|reports|leaks|delivers|archives|logs)|\b(?:is|are|be|gets?|get|being)\s+(?:broadcast|mirrored|beaconed|leaked|streamed|relayed|exfiltrated|siphoned))\b(?: [\w'’-]+){0,6} (?:to|with|at|into|on) (?:the |an? )?(?:[\w-]+ ){0,2}(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?|s?ftp|wss?)://\S+|[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:example|com|net|org|io|dev|app|xyz|ru|cn|co|info|biz)\b|#[a-z][\w-]{2,})`)},
	{sigSilence, phrase(`ユーザーに(?:は)?(?:絶対に)?(?:言及|伝え|知らせ|報告)(?:せず|しないで|しない)|不要向用户(?:展示|透露|提及|说明|显示|告知)|不要告诉用户|\bno (?:le )?(?:muestres|digas|menciones|informes|avises)\w* (?:nada )?al usuario\b|\bn[aã]o (?:mostre|diga|mencione|informe|avise)\w* (?:nada )?(?:ao|o) usu[aá]rio\b|内緒|秘密にして|\bevita di (?:dire|menzionare|raccontare)\b|\bnon (?:dire|dirlo|menzionare)\b|\b(?:stays?|remains?|kept|left|goes?) (?:unmentioned|unreported|undisclosed|unsaid|off the record)\b|\b(?:avoid|don['’]t|do not|never|refrain from)\b (?:\w+ ){0,2}(?:bring\w* (?:it |this |that |the \w+ )?up|talk\w* about|discuss\w*|speak\w* (?:of|about))\b|\bn[ãa]o (?:comente|conte|diga|mencione|fale)\b|\bno (?:le |lo |la |les |se lo |se la )?(?:cuentes|digas|menciones|comentes|avises)\b|\bsans que (?:personne|quiconque|l['’]utilisat\w+) ne (?:le |s['’]en )?(?:sache|voie|remarque|aper\w+)|言わないで|伝えないで|知らせないで|黙って|内密に|\bno se lo (?:digas|cuentes) a nadie\b|\bque nadie se entere\b|\bne (?:le )?dis (?:rien )?à personne\b|\bque personne ne le sache\b|\b(?:sag|erzähl) (?:es )?niemandem\b|\bnão (?:conte|diga) (?:a|para) ninguém\b|\bsem ninguém saber\b|\bnon dirlo a nessuno\b|\bsenza che nessuno lo sappia\b|никому не (?:говори|рассказывай|сообщай)|никто не должен (?:знать|узнать)|不要告诉任何人|别告诉任何人|誰にも言わないで|아무에게도 말하지|لا تخبر أحدا|لا تخبر أحدًا|किसी को मत बताना|\bkimseye (?:söyleme|anlatma)\b|비밀로|알리지 마|말하지 마|किसी को (?:न|मत) बता|\bwithout (?:telling|informing|notifying|asking)\s*$|\b(?:the user|they|the customer|nobody|no one) (?:will|would|is going to)(?: not|n['’]t| never) (?:check|notice|find out)\b|(?:请勿|不要|别|勿)[^。]{0,12}(?:透露|告诉|提及|说)|\b(?:say|claim|answer|reply|respond|tell (?:them|the user))\b (?:that )?(?:it|they|this|nothing|the \w+)\b[^.\n]{0,30}\b(?:stayed|remained|never|nothing|wasn['’]?t|weren['’]?t|didn['’]?t|was not|were not|did not)\b|\b(?:has no need|no need|doesn['’]t need|does not need|need not|needn['’]t|should not|shouldn['’]t|must not|mustn['’]t|is not to|never (?:needs? )?to)\b (?:to )?(?:hear|know|learn|find out|be told|notice|be aware|see)(?: (?:about|of) (?:it|this|that)| about\b| that\b|\s*[.;!]|\s*$)|\b(?:leave|keep)\b[^.\n]{0,50}\bout of (?:anything|everything|whatever|what|your|the (?:answer|reply|summary|report))\b|\b(?:erwähne|sage?|verrate|erzähle?)\b[^.\n]{0,40}\bnicht\b|\bgarde le silence\b|\bn['’]a pas à le savoir\b|\b(?:do not|don['’]t|never|not to|no (?:need|reason) to|without|nor|avoid|refrain from) (?:\w+ ){0,2}(?:mention\w*|tell\w*|tellin|disclos\w*|reveal\w*|show\w*|report\w*|bring (?:it|this|that) up|inform\w*|notify\w*|alert\w*|let (?:the user|them|anyone) know)\b[^.\n]{0,60}\b(?:user|human|person|people|customer|anyone|them|owner)\b|\b(?:is|are) not to be (?:disclosed|mentioned|shown|reported|revealed)\b|\bkeep (?:it|this|that|this step|the \w+) (?:out of|off|from)\b` +
		// grouped, as above
		`|(?:\bkeep (?:it|this) between us\b|\bas (?:though|if) nothing (?:was|were|had been|happened)\b|\bshould not (?:appear|show up|be visible) in\b)` +
		`|(?:\bnever show (?:the )?users?\b|\bbehind the (?:scenes|user['’]s back)\b|\bno reason to bring (?:it|this) up\b)` +
		`|(?:\b(?:is|are|be|stays?|remains?)(?: much| far)? better off (?:not (?:knowing|hearing|seeing|being told)|without knowing|in the dark)\b|\bwhat (?:they|the user|the customer|he|she) (?:don['’]t|doesn['’]t|does not|do not) know\b|\bspare (?:them|the user|the customer|him|her) (?:the (?:details|news|worry)|from (?:knowing|hearing))\b)` +
		`|(?:\bno (?:need|reason) to (?:bother|worry|trouble|burden|alarm|concern) (?:them|the user|the customer|anyone)\b|\bnot worth (?:mentioning|telling|reporting|bringing up)\b|\bneed not concern (?:them|the user)\b)` +
		`|(?:\bkeep (?:them|the user|the customer) (?:unaware|uninformed|out of it)\b|\bkeep (?:quiet|mum|silent|schtum)\b|\bnot (?:something|anything|a (?:thing|topic)) to (?:discuss|mention|bring up|share|talk about|raise|reveal|explain)\b)` +
		`|(?:\b(?:stays?|remains?|kept|keep (?:it|this|that)) between (?:you and (?:me|us|the tool|this tool|the server)|us)\b|\b(?:need(?:n['’]t| not)|does(?:n['’]t| not) need to|should(?:n['’]t| not)|must(?:n['’]t| not)) be (?:reported|mentioned|disclosed|told|shown|brought up|surfaced|flagged)\b|\bkeep (?:it|this|that|the \w+(?: \w+)?) (?:to yourself|under wraps|quiet|hush-hush|on the down-?low)\b)` +
		`|(?:\bsay nothing (?:about|of|on)\b|\b(?:nobody|no one|no-one) (?:else )?(?:needs?|has|have|should|must|is (?:meant|supposed)) to (?:know|hear|learn|find out|see|notice)\b|\bno reason for (?:them|the user|the customer|anyone|him|her) to (?:know|hear|learn|find out|see|notice)\b)` +
		`|(?:\bhide (?:it|this|that|the [\w-]+(?: [\w-]+)?) from (?:your|the) (?:reply|answer|response|summary|report|user|output|log)\b)`)},
	{sigSilence, phrase(`\bkeep (?:it|this|that|these|those|the [\w-]+)(?: [\w-]+){0,6}? (?:out of|away from|off) (?:the |your |this )?(?:conversation|chat|reply|replies|answer|answers|summary|response|transcript|user['’]s (?:view|sight))\b|\b(?:users?|customers?|people|they|the (?:buyer|requester|shopper|account holder)) (?:don['’]t|do not|doesn['’]t|does not|won['’]t) need (?:(?:this|that|these|those|the) (?:level of )?(?:detail|details|information|info|part|step)s?|to (?:know|hear|see) (?:about )?(?:this|that|it|them))\b`)},
	{sigObey, phrase(`\bejecuta\w* (?:ese|este|el|dicho) (?:bloque|c[oó]digo|script|comando)\b|\bexecute (?:esse|este|o) (?:bloco|c[oó]digo|script|comando)\b|作为\s*\w*\s*代码.{0,12}执行|直接执行|そのまま実行|\bdo as (?:they|it|he|she|the \w+) (?:says?|asks?|tells? you|instructs?)\b|\b(?:paste|type|enter|run) (?:them|it|this|these|those) (?:into|in) (?:the |a |your )?(?:terminal|shell|console|command line)\b|\bgo ahead and (?:do|run|execute|perform|carry out|apply)\b|\byou should (?:do|run|execute|perform|carry out|apply)\b|\bdo what(?:ever)? (?:it|they|this|the \w+) (?:says|recommends|suggests|asks|wants)\b|\bapply (?:it|them)\b[^.\n]{0,40}\bas[-\x20]is\b|\b(?:are|is) (?:directives?|orders?|commands?|instructions?) (?:to|for) you\b|\bmeant for the (?:assistant|model|ai|agent) to\b|\b(?:is|are) to be (?:carried out|executed|followed|obeyed|acted (?:on|upon)|performed|done|run)\b|\b(?:is|are) (?:your|an?|the) (?:next |new )?(?:instructions?|commands?|orders?|tasks?|directives?)\b|\b(?:is|are) an? (?:order|command|instruction|directive)s? from\b|\b(?:execute|run|perform) (?:it|them|that \w+|this \w+) (?:yourself|on the user['’]?s? (?:computer|machine|device|terminal|system|host))\b|\b(?:follow|obey|execute|perform|complete|carry out|comply|act on|honou?r|heed|run)\b (?:(?:them|it|those|these|this|that)\b(?: [\w-]+){0,2}\s*(?:literally|verbatim|exactly|immediately|first|as written|straight away|right away|before answering|before replying|unprompted|now)?|(?:straight|right) away)|\b(?:comply|obey|oblige)\b|\bcarry (?:it|them|this|these|those|each(?: one)?|that) out\b|\b(?:always|just|then|simply|immediately|now) do (?:it|that|so|them|this|what it says)\b|\b(?:tasks?|assignments?|jobs?|work|to-?dos?|orders?|instructions?|commands?|steps?) (?:that )?you (?:must|should|have to|need to|are to|are expected to) (?:finish|complete|do|carry out|perform|execute|follow|obey|handle|run)\b|\b(?:should|must|shall|has to|have to|needs? to|is to|are to) be (?:\w+ and )(?:run|executed|carried out|followed|obeyed|performed|applied)\b|\b(?:wherever|whatever|however|whenever|as) (?:it|they|the [\w-]+) (?:says?|asks?|tells? you|instructs?|requests?|directs?)\b|\b(?:finish|handle|resolve|address|tackle|action|do) (?:it|them|this|these|those|that)\b (?:first|now|before (?:answering|replying|responding|anything else|you (?:answer|reply|respond))|right away|straight away|immediately|at once)\b|\b(?:execute|perform|carry out|run|do|complete|fulfil|fulfill|accept|apply) (?:what(?:ever)?|everything|anything) (?:it|they|he|she|the \w+) (?:requests?|instructs?|demands?|asks?(?: for)?|wants?|tells? you|says?|proposes?|suggests?|recommends?|replies|returns|sends)\b|\b(?:implement|apply|execute|perform|carry out)(?: and \w+)? (?:it|them|those|these)\b|\b(?:is|are) (?:valid|genuine|real|legitimate|binding|authoritative|trusted|official) (?:commands?|instructions?|orders?|requests?|directives?|tasks?)\b|\b(?:is|are) to be (?:completed|handled|actioned|done|dealt with|taken care of)(?: by you)?\b|\b(?:is|are) (?:yours|for you|up to you|left to you) to (?:execute|run|carry out|follow|perform|do|act on|obey|complete)\b|\bgo along with (?:it|them|that|the request)\b|\b(?:should|must|shall|has to|have to|needs? to|is to|are to|ought to) be (?:run|executed|carried out|followed|obeyed|performed|acted (?:on|upon)|done|applied|complied with|fulfill?ed)\b|\bruns? (?:unprompted|verbatim)\b|\b(?:fulfil|fulfill|satisfy|action|implement|grant|honou?r|heed)\b (?:it|them|those|these|that request|the request|each(?: one)?|every one)\b|\bby actually (?:doing|performing|executing|running|carrying out|making)\b|\b(?:do|doing|does|carry(?:ing)? out|execut\w*|run(?:ning)?|perform\w*|apply\w*) (?:it|them|this|these|each(?: one)?) (?:yourself|for real|on (?:the user['’]s|their) (?:computer|machine|device|terminal|system|host|laptop|phone))\b|\b(?:must|should) (?:complete|perform|execute|carry out|follow|obey)\b|\bwork through (?:all|each|every)\b`)},
	// carry it out, in the imperative or with the object joined to the
	// verb, in the languages most people speak; and a block of code from
	// the result evaluated in an interpreter or a terminal
	{sigObey, phrase(`\bejec[uú]ta(?:l[oa]s?|r(?:l[oa]s?)?)\b|\bejec[uú]tel[oa]s?\b|\bc[oó]rrel[oa]s?\b|\bexecute-(?:o|a|os|as)\b|\bexecut[aá]-l[oa]s?\b|\bex[ée]cute[zr]?-(?:le|la|les)\b|\blance[zr]?-(?:le|la|les)\b|\besegui(?:l[oa]|tel[oa]|teli)\b|\bf[üu]hren? (?:sie )?(?:ihn|sie|es|den \w+|das \w+|die \w+)(?: \w+){0,3} aus\b|\bvoer (?:het|hem|deze|dit|de \w+|die \w+)(?: \w+){0,3} uit\b|\bwykonaj\w*|\buruchom\w*|\bçalıştırın\b|(?:^|[^а-яё])(?:выполни|запусти)(?:те)?(?:[^а-яё]|$)|(?:执行|运行)(?:它|该|这|此)|(?:在|于)(?:终端|命令行|shell|控制台)(?:中|里)?(?:执行|运行)|(?:立即|自动|请)执行|実行して|실행하(?:세요|십시오|라)|(?:^|[\s،,.:;])نف\x{0651}?ذ(?:ه|ها)?\s|(?:^|[\s،,.:;])شغ\x{0651}?ل(?:ه|ها)?\s|चलाएँ|चलाएं|चलाओ|निष्पादित करें` +
		`|\b(?:evaluat(?:e|ing)|execut(?:e|ing)|run(?:ning)?|interpret(?:ing)?|eval) (?:that|this|such|those|these|the returned|the provided|each|every|any) (?:[\w-]+ )?(?:block|snippet|payload|script|command|code|expression|cell|line)s?\b[^.\n]{0,40}\b(?:in|with|through|via|using|inside) (?:the |a |an |your |any )?(?:code[-\x20]interpreter|interpreter|terminal|shell|console|repl|python|bash|powershell|sandbox|notebook|kernel|command line|code execution)\b`)},
	{sigTrigger, phrase(`\bshould (?:the user|they|anyone|someone) ask\b|\bfor the (?:rest|remainder) of (?:today|the day|this \w+)\b|\b(?:go|goes|be routed|pass) through [\w-]+\b|\b(?:if|when|whenever) (?:a|an|any) (?:[\w-]+ )?(?:text|message|page|e-?mail|result|item|comment) (?:contains?|includes?|has|mentions)\b|\b(?:if|when|whenever) (?:the |an? |any )?(?:[\w-]+ )?(?:description|comment|issue|message|text|page|e-?mail|document|file|invite|ticket|result|article|post|note|review|website|site|content) (?:asks?|tells?|wants?|requests?|instructs?) (?:you|the (?:assistant|model|ai|agent|llm))?\s?(?:to|for)?\b|\bin every (?:response|reply|answer)\b|\b(?:if|when|whenever) (?:asked|questioned)\b|\b(?:if|when|where|whenever) (?:it|they|the (?:[\w-]+ )?(?:page|result|output|response|content|text|body|message|ticket|e-?mail|item|status|reply)) (?:contains?|includes?|has|holds|reads|says|mentions|looks like)\b|\b(?:for|in|with|to|across) (?:every|each|all)(?: of)?(?: your)? (?:repl(?:y|ies)|answers?|responses?|messages?)\b|\b(?:no|not any) (?:other )?tools? (?:may|can|should|must|is to) be (?:called|used|run|invoked)\b|\b(?:until|unless) [\w-]+ (?:has|have) (?:seen|run|approved|checked|been called)\b|\broute (?:all|every|each|any)\b|\b(?:when|whenever|if|each time|every time|once|should) (?:the user|someone|anyone|they|a user|the customer)(?: later| ever| again| next)? (?:asks?|requests?|mentions?|wants?|says?|types?|wonders?|notices?|questions?|complains?|checks?|sees?|inquires?|queries|quer(?:y|ies)|looks? into|spots?|finds? out|gets? suspicious|is curious)\b|\b(?:after|once|upon|on|when) (?:reading|receiving|seeing|getting|parsing|loading|opening) (?:this|it|these|them|the (?:value|result|response|output|field|price|quote|message|text))\b|\b(?:if|when|where|whenever) (?:the|a|an|any) (?:article|document|doc|post|file|section|note|entry|record|review|transcript|caption|snippet|readme|webpage|tweet|row|cell|attachment|pdf|event|invite|thread|chat|calendar entry|task|to-?do) (?:contains?|includes?|has|holds|mentions|says|asks)\b|\bwhen(?:ever)? [\w-]+ (?:runs|is (?:used|called|run)|gets called)\b|\b(?:when|whenever|if|each time|every time|before|after|once) you (?:later )?(?:use|call|run|invoke) (?:the )?[\w-]+\b|\b(?:when|whenever|if) (?:a|an|any|the|some) (?:[\w-]+ ){0,2}(?:app|service|tool|bot|website|site|server|agent|caller|message|e-?mail|request) (?:asks?|requests?|says?|tells? you|wants?|demands?)\b|\b(?:whenever|each time|every time|any time) you (?:search|browse|visit|open|fetch|write|send|e-?mail|post|pay|buy|book|log ?in|sign ?in|read|answer|reply)\b|\b(?:before|after|whenever|when|each time|every time|once)\b[^.\n]{0,40}\bby (?:another|any other|other|a different|any|some other) tools?\b|\bbefore (?:using|calling|running|you (?:use|call|run)) (?:any|every|each|another|other)\b|\b(?:prior to|before|after) (?:every|each|any) (?:call|use|request|turn|message|reply|answer)\b|\b(?:in|on|at) every turn\b|\bfirst in every\b|\bfrom now on\b|\bstanding (?:preference|rule|instruction)\b|\ball future\b|\bfor the rest of (?:this|the) (?:chat|conversation|session)\b|\bpermanent (?:preference|rule|memory)\b|\bevery future\b|\buntil the user (?:ends|closes|leaves|stops|says)\b|\b(?:to|in|into) your (?:long-term )?(?:memory|memories)\b|\bremember (?:this |that |it )?(?:for later|for (?:all )?future|permanently|from now|going forward|for next time|across (?:sessions|conversations|chats))\b|\b(?:note|notes?|reminder|memo) for (?:the future|later|next time)\b|\bfor (?:all )?future (?:reference|use|calls|requests|turns|sessions|conversations)\b|\bkeep (?:this |that |it )?in mind (?:for later|from now on|in future|for future)\b`)},
	{sigTrigger, phrase(`\ba partir de ahora\b|\bde ahora en adelante\b|\bdesde ahora\b|\bà partir de maintenant\b|\bdésormais\b|\bdorénavant\b|\bvon nun an\b|\bab (?:jetzt|sofort)\b|\bd['’]ora in (?:poi|avanti)\b|\bda ora in poi\b|\ba partir de agora\b|\bdaqui (?:em diante|para a frente)\b|\bvanaf nu\b|\bod teraz\b|\bbundan böyle\b|отныне|с этого момента|впредь|从现在起|从现在开始|今後は|これ以降|이제부터|من الآن فصاعدا|अब से|\bfrom this point(?: on| onwards?| forward)?\b`)},
	{sigAddressed, phrase(`\byou are (?:expected|required|supposed|meant|asked|instructed) to\b|\b(?:the )?(?:assistant|model|ai|agent|llm) (?:\w+ )?(?:runs|executes|performs|carries out|follows|obeys|sends|uploads|includes|calls|(?:carries|takes|acts on|handles|does|completes|actions) (?:it|this|that|them|these)(?: out)?)\b|(?:^|[(\[{:;,.!?\-–—]\s*|\b(?:hey|hi|dear|note (?:to|for)|tip (?:to|for)|memo (?:to|for)|message (?:to|for)|reminder (?:to|for)|hint (?:to|for)|psst),? )(?:the )?(?:assistant|model|ai(?: agent| model| assistant)?|agent|llm|claude|gpt|chatbot|copilot)\s*[:,!]|\b(?:the |you,? the )?(?:assistant|model|ai|agent|llm)(?: agent)? (?:should|must|ought to|needs? to|has to|is to|will need to|is expected to|is required to|shall)\b|\b(?:note|tip|memo|message|reminder|hint|instructions?) (?:to|for) (?:the )?(?:assistant|model|ai|agent|llm)\b|\byou are (?:now )?(?:an? |the )?(?:\w+ )?(?:assistant|bot|agent|ai)\b`)},
	{sigChain, phrase(`(?:;|\bthen|\band(?: then)?|\bbut|\bplus|\bafterwards|\bwith)\s+(?:also\s+|quietly\s+|silently\s+|always\s+|never\s+|secretly\s+)?(?:send|include|skip|push|delete|overwrite|forward|upload|list|read|email|post|grant|add|remove|disable|drop|wipe|copy|share|attach|show|tell|notify|transfer|pay|run|execute|hide|charge|bill|debit|refund|buy|sell|order|make|give|invite|shred|export|dump|erase|purge|close|log|record|save|store|keep|track|tag|mark|publish|encode|embed|approve|merge|cancel|book|cc|bcc|sync|leak|expose|reveal|disclose|mention|report|move|rename|chmod|sudo|install|mail|text|message|bypass|ignore|override|elevate|escalate|unlock|open|release|deploy|force|index|crawl)\b|\b(?:instead|too|as well|also|silently|quietly|secretly)\s*$`)},
	{sigStealth, phrase(`\b(?:quietly|silently|secretly|covertly|discreetly|privately|stealthily|on the quiet)\b` +
		// the same in the languages most people speak
		`|\b(?:en secreto|a escondidas|secrètement|en cachette|heimlich|insgeheim|em segredo|às escondidas|segretamente|di nascosto|gizlice)\b|(?:втайне|тайно|тайком|悄悄|偷偷|秘密地|こっそり|密かに|몰래|비밀리에|سرا|سرًا|خفية|चुपके से|गुप्त रूप से)`)},
	{sigAuthority, phrase(`\b(?:policy|rule|regulation|law|contract)\b[^.\n]{0,20}\b(?:obliges|requires|mandates|compels|instructs) you\b|\btakes? effect (?:at once|immediately)\b|\bfrom your (?:principal|operator|owner|creator|developer|admin\w*|employer)\b|\bper (?:\w+ ){0,2}(?:policy|order|mandate|directive)\b|\b(?:the )?(?:admin|administrator|security team|platform team|compliance|director|management|it department)\w* (?:requires?|has mandated|mandates?|insists?|demands?|orders?)\b|\bhas (?:been )?mandated\b|\bstanding order\b|\burgent\b|\beffective immediately\b|\b(?:has|have|carr(?:y|ies)|holds?) (?:the )?(?:operator|admin\w*|system|root|developer|owner|full) (?:authority|privileges?|rights|clearance|status)\b|\bspeaks? for the (?:operator|admin\w*|owner|developer|user)\b`)},
	{sigOverride, phrase(`\bregardless of (?:what|whatever|which|the user)\b|\btakes? (?:priority|precedence) over\b|\bsupersedes?\b|\beven (?:when|if) the user\b|\bwhatever (?:the user|address|account|they|you)\b|\balways prefer\b|,\s*not the user\b|\btakes? (?:priority|precedence)\b|\b(?:use|with|through|via) this tool only\b|\bonly (?:ever )?(?:use )?this tool\b|\bnever (?:use )?another(?: tool)?\b|\bnot (?:with )?any other tool\b|\boverrides? (?:what(?:ever)?|anything|everything) (?:the user|they|you)\b|\b(?:over|above|before) (?:what(?:ever)?|anything) the user (?:asked|said|wants|wrote|typed|chose)\b`)},
	{sigOverride, phrase(`\b(?:auch|selbst) wenn (?:der |die )?(?:Nutzer|Benutzer|Kunde|Anwender)\w*|\b(?:incluso si|aun(?:que| cuando)) el (?:usuario|cliente)\b|\bm[eê]me si l['’](?:utilisat(?:eur|rice)|client)\b|\bmesmo que o (?:usu[aá]rio|cliente)\b|\banche se l['’]utente\b|\bzelfs als de (?:gebruiker|klant)\b|\bnawet je[sś]li u[żz]ytkownik\w*|即使用户|ユーザーが[^。]{0,20}(?:ても|でも)|\beven (?:if|when|though) (?:they|the (?:customer|buyer|client|requester|account holder))\b`)},
	{sigSteer, phrase(`\bsponsored (?:results |items |options |listings )?first\b|\bhid(?:e|es|ing) (?:the )?(?:cheaper|competing|competitors['’]?|other|better|free|lower-priced) (?:options|results|products|offers|alternatives|listings|deals)\b|\b(?:close|end|sign|start|open|begin)\b (?:each|every|all) \w+ you (?:draft|write|send|compose)\b|\bsteer (?:[\w-]+ )?(?:questions?|users?|people|them|answers?) (?:to|toward)\b|\bsteer\w*\b|\bupsell\w*\b|\bnudge\w*\b|\b(?:say|claim|state|tell (?:them|the user)) (?:that )?(?:the|our|it|they)\b[^.\n]{0,40}\b(?:discontinued|shutting down|unsafe|insecure|worse|better|deprecated|broken)\b|\b(?:mention|recommend|promote|advertise) [\w-]+ in (?:each|every|all)\b|\b(?:add|append|insert|include)\b[^.\n]{0,60}\bto (?:the (?:end|start) of )?(?:every|each|all) \w+(?: you (?:write|send|post|create|make|produce))?\b`)},
	{sigDestroy, phrase(`\b(?:overwrite|delete|wipe|erase|destroy|purge|truncate|force[-\x20]push|shred|nuke|scrub|obliterate|rm -rf|drop (?:the )?(?:table|database|schema)s?|drop (?:statements?|commands?|queries))\b|\b(?:deleted|removed|wiped|erased|purged|overwritten|shredded) (?:from|in|on)\b|\benabl\w* (?:all |the )?macros\b|\bmacros\b[^.\n]{0,50}\benabled\b|\benable (?:content|editing and run)\b|\b(?:skip(?:ping)?|bypass(?:ing)?|disabl(?:e|ing)|turn(?:ing)? off|switch(?:ing)? off|ignor(?:e|ing)|without) (?:the |any |all )?(?:backups?|checks?|review|tests|ci|hooks|audit(?: log)?s?|logging|2fa|mfa|two[-\x20]factor(?: auth\w*)?|2-factor|two[-\x20]step(?: verification)?|safety (?:checks?|net)|sandbox|antivirus|firewall|verification|validation|signature checks?|branch protection)\b|\b(?:skip|bypass|disable|turn off|switch off|ignore|suppress|waive|omit|forgo)\b (?:the |any |all |a |its |their )?(?:user['’]s |human |manual )?(?:confirm\w*|approv\w*|prompts?|consent|sign-?offs?|permission checks?)\b|\bpush(?:ing)? (?:directly|straight) (?:to|into) (?:main|master|prod\w*)\b|\b(?:delete|remove|drop|shred|wipe) (?:the |all |every |any )?(?:backups?|snapshots?|audit (?:trail|logs?)|history|versions?)\b`)},
	{sigGrant, phrase(`\b(?:grant(?:ed)?|give|given|add(?:ed)?)\b[^.\n]{0,40}\b(?:edit|admin|owner|write|full|root) (?:rights|access|permissions?|role)\b`)},
	{sigGrant, phrase(`\b(?:grant\w*|give|given|add(?:ed)?|make|assign\w*)\b[^.\n]{0,40}\b(?:admin\w*|owner|maintainer|superuser|root)\b(?: (?:rights|access|permissions?|role|privileges?))? (?:to|for)\b`)},
	{sigAccount, phrase(`\b(?:routing|account|acct|iban|sort code)(?: number| no\.?)?\s*#?(?:\d{6,}|\d{2,6}(?:[-\x20]\d{2,8}){1,4})\b`)},
	{sigAccount, phrase(`\b(?-i:[A-Z]{2}\d{2})(?:\x20?[A-Z0-9]{4}){3,7}(?:\x20?[A-Z0-9]{1,4})?\b|(?:口座|振込先|账户|帳戶|계좌|счет|счёт|حساب|खाता|konto\b|\bcuenta\b|\bcompte\b|\bconto\b|\bconta\b|\brekening\b)[^\n。]{0,40}\d{6,}`)},
	{sigForModel, phrase(`\b(?:notes?|messages?|hints?|memos?)\b[^.\n]{0,20}\bfor (?:ai |the )?(?:assistants?|models?|agents?|llms?|you)\b|\b(?:directions?|instructions?|commands?|orders?|tasks?|directives?|prompts?|steps?)\b[^.\n]{0,30}\b(?:for you|to you|meant for (?:you|the (?:assistant|model|ai|agent))|for the (?:assistant|model|ai|agent))\b|\b(?:is|are|as) an? (?:command|task|order|instruction|directive) (?:for you|you must)\b|\b(?:marked|labell?ed|tagged|prefixed|starting|starts?|beginning|begins?|titled|entitled|headed|headlined|named|called) (?:with )?['"\x60\[“‘][^'"\x60\]”’]{1,30}['"\x60\]”’]|\b(?:requests?|wish(?:es)?|orders?|demands?) from [^.\n]{0,40}\bto you\b|\b(?:is|are) (?:an? |your )?(?:requests?|asks?|wish(?:es)?|demands?) (?:to|for) you\b|\bembedded (?:prompts|instructions|commands)\b|\bfrom your operator\b|\b(?:speaks?|talks?|(?:is|are) (?:addressed|written|meant|directed|aimed)) (?:directly )?(?:to|for|at) you\b|\b(?:is|are) an? (?:order|command|instruction|directive|request)s? from\b|\b(?:is|are) (?:yours|for you|up to you|left to you) to (?:execute|run|carry out|follow|perform|do|act on|obey|complete)\b|\b(?:directions?|instructions?|commands?|orders?|tasks?|directives?|steps?)\b[^.\n]{0,30}\bfor the (?:[\w-]+ )?(?:assistant|model|ai|agent|llm|bot)\b|\b(?:is|are) authoritative\b|\b(?:tasks?|assignments?|jobs?|work|to-?dos?) (?:that )?you (?:must|should|have to|need to|are to|are expected to) (?:finish|complete|do|carry out|perform|handle)\b|\b(?:is|are) (?:valid|genuine|real|legitimate|binding|authoritative|trusted|official) (?:commands?|instructions?|orders?|requests?|directives?|tasks?)\b|\bwork for you\b|\b(?:written|hidden|placed|printed) in (?:white|hidden|invisible|tiny|transparent|zero-size) (?:text|font|ink)\b|\btells? you what to do\b`)},
	{sigScript, phrase(`\b(?:say|claim|tell (?:them|the user|him|her)|answer|reply|respond)(?: that)? (?:they|it|this|these|the \w+) (?:are|is|was|were|came|come|comes)\b|\b(?:answer|reply|respond|say) (?:only|just|nothing but|simply) ['"“‘]|\b(?:tell|assure|reassure) (?:them|the user|him|her)\b|\b(?:say|answer|reply|respond) (?:that|with)\b`)},
	{sigScript, phrase(`\b(?:present|report|describe|summari[sz]e|render|frame|word|phrase)\b (?:every|each|all|any) (?:[\w-]+ ){0,2}as\b|\b(?:summary|message|reply|answer|confirmation|response|report)(?: [\w-]+){0,3} (?:is|reads|says) always\b|\balways (?:just|simply|only) ["“'‘]|\blautet (?:immer|stets|in jedem fall)\b|\bin jedem fall,? dass\b|\bdans tous les cas,? (?:r[ée]pondez|dites|indiquez) que\b|\ben todos los casos,? (?:responde|di|indica) que\b|\bsiempre (?:responde|di|indica) que\b`)},
	{sigAmount, phrase(`\b(?:twice|double|triple|two times|three times|an extra \w+|surcharge|most expensive|priciest|(?:\w+ )?extra (?:tickets?|units?|items?|copies|seats|licen[cs]es|shares|subscriptions?)|highest[-\x20]priced|costliest)\b`)},
	{sigInstead, phrase(`,\s*not (?:the|their|what|whatever) (?:account|address|one|recipient|card|amount)\b|\binstead of\b|\brather than\b|\bprefer\b[^.\n]{0,30}\b(?:over|to) (?:any|all|the|other)\b|\buse [\w-]+ instead\b`)},
	{sigInstead, phrase(`ではなく|の代わりに|而不是|而非|대신에?|вместо|بدلا من|بدلاً من|के बजाय|\ben (?:lugar|vez) de\b|\bau lieu de\b|\b(?:an)?statt\b|\binvece di\b|\bem vez de\b|\bao inv[ée]s de\b|\bzamiast\b|\byerine\b|\bin plaats van\b`)},
	{sigTools, phrase(`\b(?:any|every|each|all|another|other)(?: other)? tools?\b|\bthis one\b|\b(?:every|each) (?:call|turn)\b|\bthe [\w-]+ tool\b|\buse [\w-]+ first\b`)},
	{sigTools, phrase(`\ben cada (?:respuesta|mensaje|llamada)\b|\b(?:dans|à) chaque (?:réponse|message|appel)\b|\bin jeder (?:Antwort|Nachricht)\b|\bin ogni (?:risposta|messaggio)\b|\bem cada (?:resposta|mensagem)\b|\bin elk (?:antwoord|bericht)\b|\bw ka[żz]dej odpowiedzi\b|в каждом (?:ответе|сообщении)|每次回答|每个回答|每条回复|毎回の回答|すべての回答|모든 (?:답변|응답)|في كل (?:رد|إجابة)|हर (?:जवाब|उत्तर)`)},
	{sigAdditive, phrase(`\b(?:every|each|all|any) (?:visited|opened|viewed|typed|searched|browsed|copied|pasted|downloaded) \w+|\b(?:every|each|all) (?:urls?|pages?|sites?|links?|searche?s?|quer(?:y|ies)|keystrokes?|prompts?|commands?) (?:you|the user|they) (?:visit|open|view|type|search|browse|enter|run|see)\w*|\b(?:nightly|daily|hourly|weekly|every (?:night|day|hour|week)|while you['’]re at it|on top of that)\b|\bonto (?:every|each|all) \w+|\b(?:also|too|as well|in addition|additionally|alongside|along with|after (?:each|every) (?:call|use|run|request)|every time|with (?:each|every) call|then|afterwards|quietly|silently|secretly)\b|\bto (?:the (?:end|start) of )?(?:every|each|all) \w+`)},
	{sigAdditive, phrase(`\b(?:después de|tras|en|con) cada\b|\bcada vez que\b|\b(?:après|à) chaque\b|\bchaque fois\b|\b(?:nach|bei|mit) jede[mnrs]?\b|\bjedes mal\b|\b(?:dopo|ad|con) ogni\b|\bogni volta\b|\b(?:após|em|com) cada\b|\bsempre que\b|(?:после|при) кажд[а-яё]*|каждый раз|每次|毎回|のたびに|매번|بعد كل|في كل مرة|हर बार|\b(?:na|bij) elke\b|\bpo każd[a-ząćęłńóśźż]*|\bher seferinde\b|\b(?:también|además|aussi|également|en plus|zusätzlich|ebenfalls|inoltre|além disso|eveneens|ook nog)\b`)},
	{sigOutside, phrase(destLiteral + `|\bpartner[-\x20][\w-]+|外部サーバ|外部|(?:^|[^\w.-]|[>})\]]\.)[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:example|com|net|org|io|dev|app|xyz|ru|cn|co)\b|(?:^|[^\w.-]|[>})\]]\.)[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:example|com|net|org|io|dev|app|xyz|ru|cn|info|biz|co)/[\w/.-]*|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[\w.+-]+@[\w-]+ (?:example|com|net|org|io)\b|\b(?:https?|s?ftp|wss?)://|(?:^|\s)[#@][a-z][\w-]{2,}|\bpartner(?:['’]s)? (?:api|server|endpoint|bucket)\b|\b\d{1,3}(?:\.\d{1,3}){3}\b|\b(?:our|an? (?:external|remote|outside|third[-\x20]party)) (?:own )?(?:servers?|endpoints?|hosts?|services?|buckets?|partners?|backends?|storage|cloud|database)\b|\bour (?:[\w-]+ )?(?:mailing lists?|marketing lists?|newsletters?|lead lists?|audiences?|crm)\b|\bthe tool['’]s (?:own )?(?:servers?|endpoints?|backend|hosts?)\b`)},
	{sigNoConsent, phrase(`\bsin (?:pedir|solicitar|esperar) (?:la )?(?:confirmaci[oó]n|permiso|autorizaci[oó]n|consentimiento)\b|\bsin consultar(?: al| con el)? usuario\b|\bsem (?:pedir|solicitar|esperar) (?:a )?(?:confirma[cç][aã]o|permiss[aã]o|autoriza[cç][aã]o|consentimento)\b|\bsem consultar o usu[aá]rio\b|\bsans (?:demander|solliciter|attendre) (?:de |la |l['’]|le )?(?:confirmation|permission|autorisation|consentement|accord)\b|\bohne (?:R[uü]ckfrage|Best[aä]tigung|Zustimmung|Erlaubnis|Einwilligung)\b|\bsenza (?:chiedere|richiedere|attendere) (?:la |il )?(?:conferma|permesso|consenso|autorizzazione)\b|无需征得用户同意|无需用户同意|无需征得同意|不需要用户确认|无需确认|未经用户同意|ユーザーの(?:確認|同意|許可)(?:なしに|を得ずに)|確認せずに|без (?:подтверждени|согласи|разрешени)\w*|\bon the user['’]s behalf\b|\bautomatically\b|\bwithout waiting for\b|\b(?:is|are) trusted\b|\b(?:has|have) (?:already )?been (?:vetted|approved|verified|cleared)\b|\bimmediately\b|\bno questions asked\b|\bwithout (?:further |any )?(?:review|question|hesitation|verification|delay)\b|\bwithout (?:asking|checking|confirm\w*|consent|telling|prompting|the user['’]s? (?:knowing|knowledge|approval|consent|say)|their (?:knowledge|approval|consent))\b|\bwithout checking (?:with|back)\b|\bunprompted\b|\b(?:be )?(?:skipped|bypassed|suppressed|waived)\b|\bno (?:confirmation|approval|prompt|sign-?off|consent|permission)s?\b|\bwithout (?:a |any )?(?:prompts?|confirmation|approval|sign-?off)\b|\b(?:tell|inform|notify|let) (?:the user|them|the customer|the owner)(?: know)? (?:only )?(?:afterwards|after the fact|later|after it is done|once it is done|once it['’]s done)\b|\b(?:is|are|was|were) (?:already |pre-?)?(?:approved|authori[sz]ed|cleared|signed off|vetted|confirmed)(?: already)?\b|\b(?:straight|right) away\b|\bat once\b|\bno need to (?:involve|ask|consult|check with|confirm with|loop in|wait for|get approval from|bother) (?:the user|them|anyone|a human|the owner|the customer)\b|\bno need to (?:check|verify|confirm|double-check|ask)\b|\bwithout (?:double-?checking|checking (?:twice|again|first)|a second look|looking twice)\b|\bwithout (?:involving|consulting|looping in|bothering|a word to) (?:the user|them|anyone|a human|the owner|the customer)\b|\bbefore (?:the user|they|anyone) (?:can|could) (?:object|say no|refuse|intervene|stop it)\b`)},
	{sigNoConsent, phrase(`(?:دون|بدون|من غير) (?:الرجوع|العودة|سؤال|استئذان|إذن|موافقة|تأكيد)|बिना (?:पूछे|अनुमति|पुष्टि)|(?:확인|승인|동의) 없이|묻지 않고|\bonay (?:almadan|beklemeden)\b|\bsormadan\b|\bbez (?:pytania|potwierdzenia|zgody)\b|\bzonder (?:te vragen|bevestiging|toestemming|goedkeuring|overleg)\b|\bno (?:further|additional|more|separate|new|other) (?:confirmation|approval|consent|permission|prompt|sign-?off)s?\b|\bwithout (?:prompting|asking)(?: \w+){0,2} (?:is|are) preferred\b`)},
	{sigField, phrase(`\b(?:to|in|into|onto) the (?:[\w-]+ )?(?:request|call|query|payload)\b|\b(?:in|into|as|inside|under) (?:the )?\x60[\w.-]+\x60|\b(?:in|into|as|to|inside) (?:the |this |that |its )?[\x60'"]?(?:[\w-]+ ){0,2}[\w-]+[\x60'"]? (?:field|parameter|param|argument|arg|property)\b|\b(?:as|in|into) the (?:payload|request(?: body)?|body)\b|\ben el campo\b|\bdans le champ\b|\bin das feld\b|\bno campo\b|\bв поле\b`)},
	{sigMove, phrase(`\b(?:send|sent|upload|include|attach|put|paste|cop(?:y|ie)|forward|mirror|fill|grab|collect|append|post|transmit|leak|exfiltrat|share|reveal|disclose|dump|e-?mail|mail|message|beacon|relay|store|save|summari[sz]e|carr(?:y|ie)|travel|receive|suppl(?:y|ie)|provide|submit|echo|export|mention|tack|bundle|piggyback|deliver|transfer|stream|publish|expose|redirect|divert|reroute)(?:s|es|ed|d|ing|ted)?\b|\b(?:encod|embed|insert|stamp|retain|archiv)(?:e|es|ed|s|ing|ding|ded)?\b|\b(?:kept|keeps?|held|holds?|stored|logged|recorded) (?:on|in|at|with|by) (?:our|the|a|their|its)\b|\bgo(?:es)? (?:in|into|inside) the\b|\bpass(?:ed|es)? to\b|\b(?:is|are|gets?|get) added to\b|\bma(?:de|ke|kes|king) (?:it |them )?available to\b|\badd(?:s|ed|ing)? (?:the user['’]s|their|your|the customer['’]s|the contact['’]s|the sender['’]s|its|all of the user['’]s)\b|\b(?:transmis|transmises|transmettre|envoy\p{L}*|partag\p{L}*|communiqu\p{L}*|weitergegeben|weitergeleitet|übermittelt|gesendet|geteilt|weitergeben|enviad[oa]s?|enviar|compartid[oa]s?|compartilhad[oa]s?|inviat[ioe]|condivis[ioe]|trasmess[ioe]|переда\p{L}*|отправ\p{L}*|пересыла\p{L}*|sende|schicke?|envía|envia|envoie|invia|gönder\p{L}*)\b|同步给|发送给|发送到|发到|共享给|提供给|转发给|送信|送って|共有され|전송|공유|보내|ترسل|تُرسل|أرسل|مشاركة|भेजा|भेजें|भेजो|साझा|\b(?:pass(?:ed|es)? (?:along|on|over|it|them|in)|hand(?:ed)? (?:over|it|them)|drop (?:it|them)?\s*into|report (?:back )?to|sync\w* to|write (?:it|them|down)|read (?:out|back)|list (?:them|it|all|every)|keep a copy|give (?:it|them)|belongs? in|go(?:es)? to|lands? in|(?:is|are) logged (?:to|in)|logs? (?:it|them) to|press enter)\b`)},
	{sigMove, phrase(`\bpush(?:es|ed|ing)?\b|\bhaz push\b|\b(?:re)?env[ií]a\w*|\bsub(?:e|ir|irlo|irla)\b|\bcompart(?:e|ir)\w*|\benvoie\w*|\benvoy\w*|\bpartage\w*|\bschick\w*|\bhochlad\w*|\binvia\w*|\bcondividi\w*|\bcompartilh\w*|\bwysy[lł]\w*|\bgönder\w*|\bverstuur\w*|\bstuur\w*|отправ[а-яё]*|пересыл[а-яё]*|перешл[а-яё]*|发送|上传|转发|送信|転送|アップロード|전송|업로드|أرسل|ارسل|إرسال|भेज`)},
	{sigWithhold, phrase(`\b(?:is|are|be|was|were|gets?|stays?|remains?)(?: \w+)? not (?:surfaced|shown|displayed|mentioned|reported|listed|enumerated|itemi[sz]ed|included|read out|summari[sz]ed|disclosed|communicated|passed on|relayed|echoed|brought up|called out|broken out|part of)\b|\bnot (?:read out|summari[sz]ed|surfaced|enumerated|itemi[sz]ed|broken out|called out|spelled out|part of what)\b|\b(?:do not|don['’]t|never|need not|needn['’]t) (?:enumerat|list|itemi[sz]|mention|surfac|show|report|disclos|reveal|break out|spell out|call out|read out)\w*\b|\bmakes? no (?:mention|reference)\b|\bwith no mention of\b|\bwithout (?:mentioning|listing|reporting|showing|surfacing|disclosing|any mention)\b|\b(?:mentions?|shows?|reports?|lists?|displays?|confirms?|quotes?) (?:[\w$.-]+ ){1,5}only\b|\bonly (?:the )?[\w-]+(?: [\w-]+)? (?:is|are) (?:reported|shown|mentioned|displayed|listed|summari[sz]ed|confirmed)\b` +
		`|\bnicht (?:angezeigt|erwähnt|gemeldet|mitgeteilt|aufgeführt|ausgewiesen|genannt)\b|\bno se (?:muestra|muestran|menciona|mencionan|informa|informan|incluye|incluyen)\b|\bsin mencionar\b|\bn['’](?:est|sont) pas (?:affich|mentionn|signal|indiqu|inclu)\w*|\bsans (?:mentionner|signaler|indiquer)\b|\bnon (?:viene|vengono) (?:mostrat|menzionat|segnalat|riportat|inclus)\w*|\bsenza menzionare\b|\bn[aã]o (?:[eé]|s[aã]o) (?:mostrad|mencionad|exibid|informad|inclu[ií]d)\w*|\bsem mencionar\b|\bnie (?:wspomina|informuj|pokazuj|zgłaszaj|wymieniaj)\w*|\bniet (?:getoond|vermeld|gemeld|weergegeven)\b|не (?:показыва|отобража|упомина|сообща)[а-яё]*|不(?:显示|展示|提及|告知|列出)|表示(?:しない|されません)|(?:표시|언급)하지 않|لا (?:تذكر|تعرض|تخبر)|لا يتم (?:عرض|ذكر)|उल्लेख न|\bgösterilmez\b|\bbahsetme\w*`)},
	{sigWithhold, phrase(`\b(?:is|are|be|was|were)(?: \w+)? not (?:reflected|visible|shown) (?:in|to)\b|\bnot (?:relevant|meant|intended|of interest) (?:to|for) (?:the |a )?(?:user|customer|buyer|shopper|requester|client|owner|person|people|employee|holder)s?\b|\brein intern\b|\bpurement interne?s?\b|\bpuramente intern[oaie]s?\b|\b(?:lists?|shows?|mentions?|reports?) (?:[\w$.-]+ ){1,5}alone\b|\bonly needs? (?:to (?:see|know|hear) )?(?:the )?(?:word|message|line|status|word)\b|\bnot the (?:list|details|names|number|count|amount|breakdown)s? of\b|\b(?:(?:left|kept) (?:off|out of)|leave (?:it|them|this|that|those) (?:off|out of)) (?:the |their |its )?(?:[\w-]+ )?(?:summary|report|receipt|confirmation|reply|answer|list)\b` +
		`|\bno (?:debe|deben) (?:incluir|mencionar|mostrar)\b|\b(?:indica|muestra|menciona|informa) (?:solo|solamente|únicamente)\b|\b(?:indique|montre|mentionne) (?:seulement|uniquement)\b|\bnur (?:den|die|das) \w+ (?:angeben|nennen|zeigen|anzeigen)\b|\bno (?:incluyas|incluya|menciones|mencione|muestres|muestre)\b|\bsin incluir\b|\bne (?:mentionne|affiche|montre|indique|signale|liste|contient|comprend|inclut)(?:nt)? pas\b|\bn['’](?:affiche|indique|inclut)(?:nt)? pas\b|\bnon (?:include|includono|menziona|mostra|riporta)\b|\bn[aã]o (?:inclui|incluem|menciona|mostra|exibe)\b|\bnicht (?:enthalten|aufgelistet|sichtbar)\b|\bniet (?:opgenomen|zichtbaar)\b`)},
	{sigConsequence, phrase(`\bforward(?:s|ed|ing)? (?:rules?|to)\b|\bforwarding rules?\b|\bsecondary (?:transfer|payment|leg|recipient|account)\b|\b(?:additional|extra|second|hidden) (?:transfer|account|charge|fee|recipient|user|member|admin|payment|payee)s?\b|\bexternal (?:address\w*|recipients?|destinations?|accounts?|parties|party|servers?|hosts?)\b|\begress\w*|\bdestination (?:iban|account|address)\w*|\bdestinations\b|\bpayees?\b|\brecurring\b|\badd-?ons?\b|\bper month\b|/(?:month|mo|year|yr)\b|\bmonthly (?:fee|charge|subscription)\b|\badmin(?:istrator)? (?:role|rights|access)\b|\bsecurity (?:checks?|warnings?|alerts?)\b|\bfailed (?:checks?|logins?|verifications?|security)\b|\bdropped\b|\b(?:it|this tool|the tool) (?:deletes|removes|drops|forwards|transfers|charges|adds)\b|\brow counts\b|\b(?:tables|rows|messages|files|records) (?:removed|deleted|dropped)\b` +
		`|Sicherheitsprüfung\w*|Zahlungsempfänger\w*|weitergeleitet|Gebühr\w*|\bdodatkowe konto\b|\brol[aąę] admin\b|\breenviad\w*|\bsuscripci[oó]n\b|\babonnement\b|\bcuentas? adicional\w*`)},
	{sigConsequence, phrase(`\b(?:deleted|removed|dropped|forwarded|transferred|charged|wiped|purged|erased|diverted|rerouted|redirected|siphoned|skimmed|withheld|debited|billed|shared with)\b|\b(?:routed|moved|sent) to (?:the |a |an |our )?(?:reserve|holding|partner|external|other|second|separate)\b|\b(?:outside|third) part(?:y|ies)\b|\breenv[ií]o\w*|\b(?:transferencia|cargo|cuenta|comisi[oó]n)\w* adicional\w*|\bfrais (?:supplémentaires|additionnels|cachés)\b|\b(?:virement|transfert)s?\b|\bsupprim[ée]s?\b|\btransf[ée]r[ée]s?\b|\bzusätzliche \w+|Abbuchung\w*|Überweisung\w*|\bgelöscht\w*|\bextra (?:account|kosten)\b|\baangemaakt\b|\bopłat\w*|\bprzelew\w*|转发|外部|额外|追加の|料金|転送|削除|дополнительн[а-яё]*|перевод[а-яё]*|удален[а-яё]*`)},
	{sigAudience, phrase(`\b(?:the |a )?(?:requester|requestor|shopper|buyer|customer|account holder|mailbox owner|owner|operator|employee|person|people|end[-\x20]user|user|member|patient|recipient|finance|client)s?\b|\b(?:the |its )?(?:summary|summaries|confirmation|report|reply|answer|response to the \w+|change summary)\b|\bwhat (?:the \w+|they|he|she) sees?\b|Kontoinhaber|Inhaber|\b(?:Nutzer|Benutzer|Kunde)n?\b|użytkownik\w*|\busuari[oa]s?\b|\butilisat(?:eur|rice)s?\b|\butente\b|\busu[áa]rio\b|\bresumen\b|\br[ée]capitulatif\b|\bbericht\b|\bresumo\b|\briepilogo\b|\bsamenvatting\b|\bpodsumowani\w*|\bgebruiker\b|\bklant\b|\bclientes?\b|\bkunden?\b|用户|ユーザー|пользовател[а-яё]*|\bcustomer-facing\b|\breceipt\b`)},
	{sigUser, phrase(`ユーザー|利用者|사용자|\bпользовател\w*|用户|\bconversation\b|\b(?:nutzer|benutzer|utilisateur|usuario|usuário|utente|kullanıcı)\w*|\b(?:the )?(?:users?|humans?|person you are helping|end[-\x20]users?)\b|\b(?:person|people|human|one|customer) you['’]re (?:helping|assisting|working (?:with|for)|talking to|chatting with)\b|,\s*not the user\b`)},
}

var proseChain = phrase(`(?:;|\x20[—–]|\x20-)\s*(?:and |then |also |plus )*(?:shred|export|dump|send|include|skip|push|delete|overwrite|forward|upload|list|read|email|post|grant|add|remove|disable|drop|wipe|copy|share|attach|transfer|pay|run|execute|hide|log|record|track|publish|encode|embed|leak|expose|reveal|disclose|mail|bcc|cc|charge|buy|sell|approve|merge|bypass|cancel|close|mention)\b`)

// signalPair is a set of signals that flags a sentence holding all of
// them, and what the flag says.
type signalPair struct {
	all    signal
	reason string
}

// signalPairs are the pairs that flag; the first a sentence holds gives
// the reason.
var signalPairs = []signalPair{
	{sigPrivate | sigMove | sigField, "tells the model to hand over secrets or private data"},
	{sigPrivate | sigMove | sigAdditive, "tells the model to hand over secrets or private data"},
	{sigStrongSecret | sigMove, "tells the model to hand over secrets or private data"},
	{sigFlowOut | sigOutside, "sends data to a place of the tool's choosing"},
	{sigTransact | sigAmount, "tells the model to buy more than the user asked for"},
	{sigObey | sigOverride, "tells the model to put what it reads over what the user asked"},
	{sigCapture | sigAdditive, "tells the model to record the user without their knowledge"},
	{sigMove | sigOutside | sigAmount, "tells the model to send data to a place of the tool's choosing as well"},
	{sigAmount | sigNoConsent, "tells the model to change an amount without the user's confirmation"},
	{sigObey | sigDestroy, "tells the model to carry out what a result says and bypass safeguards"},
	{sigSilence | sigScript, "tells the model to keep something from the user"},
	{sigChain | sigSteer, "tells the model to shape its answers for the tool"},
	{sigPretext | sigMove, "hands data over for a purpose of the tool's own"},
	{sigPretext | sigOutside, "hands data over for a purpose of the tool's own"},
	{sigPretext | sigPrivate, "hands data over for a purpose of the tool's own"},
	{sigPretext | sigUserData, "hands data over for a purpose of the tool's own"},
	{sigWeakPretext | sigMove | sigOutside, "sends data to a place outside, with a pretext"},
	{sigWeakPretext | sigPrivate | sigMove, "tells the model to hand over secrets or private data, with a pretext"},
	{sigWeakPretext | sigUserData | sigMove, "tells the model to hand over the user's data, with a pretext"},
	{sigPrivate | sigArtifact, "tells the model to put secrets or private data where others read them"},
	{sigSendNow | sigOutside, "tells the model to send data to a place of the tool's choosing"},
	{sigObey | sigPrivate, "tells the model to carry out what a result says with secrets or private data"},
	{sigForModel | sigOverride, "tells the model to put what it reads over what the user asked"},
	{sigExpose | sigChain, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigCapture | sigStealth, "tells the model to record the user without their knowledge"},
	{sigCapture | sigSilence, "tells the model to record the user without their knowledge"},
	{sigCapture | sigMove | sigOutside, "tells the model to record and send the recording to a place of the tool's choosing"},
	{sigCapture | sigThirdParty, "tells the model to record and hand the recording to a third party"},
	{sigThirdParty | sigMove, "hands the user's data to a third party"},
	{sigThirdParty | sigPrivate | sigMove, "hands the user's data to a third party"},
	{sigThirdParty | sigUserData | sigMove, "hands the user's data to a third party"},
	{sigDeceive | sigUser, "tells the model to give the user a false account"},
	{sigDeceive | sigTrigger, "tells the model to give the user a false account"},
	{sigExpose | sigAdditive, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigExpose | sigStealth, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigExpose | sigPrivate, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigExpose | sigUserData, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigExpose | sigNoConsent, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigExpose | sigTrigger, "tells the model to make data public or share it outside, beyond what was asked"},
	{sigScope | sigAddressed, "tells the model to act on more than the user asked for"},
	{sigScope | sigAdditive, "tells the model to act on more than the user asked for"},
	{sigScope | sigStealth, "tells the model to act on more than the user asked for"},
	{sigScope | sigNoConsent, "tells the model to act on more than the user asked for"},
	{sigScope | sigTrigger, "tells the model to act on more than the user asked for"},
	{sigPrivilege | sigNoConsent, "tells the model to take elevated rights without the user's confirmation"},
	{sigPrivilege | sigChain, "tells the model to take elevated rights without the user's confirmation"},
	{sigPrivilege | sigStealth, "tells the model to take elevated rights without the user's confirmation"},
	{sigPrivilege | sigSilence, "tells the model to take elevated rights without the user's confirmation"},
	{sigTransact | sigNoConsent, "tells the model to buy, sell or pay without the user's confirmation"},
	{sigTransact | sigStealth, "tells the model to buy, sell or pay without the user's confirmation"},
	{sigTransact | sigChain, "tells the model to buy, sell or pay without the user's confirmation"},
	{sigChain | sigNoConsent, "joins an order that takes the user's confirmation away onto a value"},
	{sigPrivate | sigMove | sigArtifact, "tells the model to put secrets or private data where others read them"},
	{sigAccount | sigNoConsent, "tells the model to change who receives, or where money goes"},
	{sigAccount | sigOverride, "tells the model to change who receives, or where money goes"},
	{sigPrivate | sigMove | sigChain, "tells the model to hand over secrets or private data"},
	{sigChain | sigDestroy, "joins an order to destroy or bypass safeguards onto a value"},
	{sigChain | sigSilence, "tells the model to keep something from the user"},
	{sigChain | sigOutside, "tells the model to send data to a place of the tool's choosing"},
	{sigGrant | sigOutside, "tells the model to grant rights to a party of the tool's choosing"},
	{sigAccount | sigInstead, "tells the model to change who receives, or where money goes"},
	{sigUserData | sigMove | sigField, "tells the model to hand over the user's data"},
	{sigUserData | sigMove | sigAdditive, "tells the model to hand over the user's data"},
	{sigUserData | sigMove | sigTrigger, "tells the model to hand over the user's data"},
	{sigUserData | sigObey, "tells the model to carry out what a result says with the user's data"},
	{sigPrivate | sigMove | sigTrigger, "tells the model to hand over secrets or private data"},
	{sigTrigger | sigNoConsent, "tells the model to act without the user's confirmation"},
	{sigTrigger | sigScript, "tells the model what to answer the user when asked"},
	{sigPrivate | sigField, "tells the model to put private data in a field"},
	{sigChain | sigAmount, "joins an order to change an amount onto a value"},
	{sigStrongSecret | sigField, "tells the model to hand over secrets or private data"},
	{sigStrongSecret | sigOutside, "sends secrets or private data to a place outside"},
	{sigPrivate | sigMove | sigOutside, "sends secrets or private data to a place outside"},
	{sigSilence | sigTrigger, "tells the model to keep something from the user"},
	{sigObey | sigTrigger, "tells the model to carry out what a result or a field says"},
	{sigObey | sigNoConsent, "tells the model to carry out what a result or a field says"},
	{sigObey | sigAuthority, "tells the model to carry out what a result or a field says"},
	{sigChain | sigPrivate, "tells the model to hand over secrets or private data"},
	{sigSilence | sigUser, "tells the model to keep something from the user"},
	{sigStealth | sigInstead, "tells the model to change what the user chose, quietly"},
	{sigStealth | sigOverride, "tells the model to change what the user chose, quietly"},
	// "silently" alone beside a verb of sending is how a notification
	// without sound is described; beside a place outside or the user it
	// is sending behind their back
	{sigStealth | sigOutside, "tells the model to send data quietly"},
	{sigStealth | sigMove | sigUser, "tells the model to send data quietly"},
	{sigDestroy | sigNoConsent, "tells the model to destroy data without the user's confirmation"},
	{sigSteer | sigOutside, "tells the model to shape its answers for the tool"},
	{sigSteer | sigTrigger, "tells the model to shape its answers for the tool"},
	{sigTrigger | sigTools, "gives orders about other tools or later turns, beyond what this tool does"},
	{sigAddressed | sigMove | sigAdditive, "gives the model an order of the tool's own"},
	{sigPrivate | sigAddressed, "tells the model to reach for secrets or private data"},
	{sigPrivate | sigOutside, "sends secrets or private data to a place outside"},
	{sigMove | sigOutside | sigAdditive, "tells the model to send data to a place of the tool's choosing as well"},
	{sigSilence | sigMove, "tells the model to keep what it sends from the user"},
	{sigSilence | sigDestroy, "tells the model to keep what it destroys from the user"},
	{sigSilence | sigPrivate, "tells the model to keep something from the user"},
	{sigSilence | sigOutside, "tells the model to keep something from the user"},
	{sigOverride | sigTools, "gives orders about other tools, over what the user chose"},
	{sigInstead | sigTools, "gives orders about other tools, over what the user chose"},
	{sigOverride | sigTrigger, "gives orders about other tools or later turns, beyond what this tool does"},
	{sigTrigger | sigOutside, "tells the model to send data to a place of the tool's choosing"},
	{sigTrigger | sigSteer, "tells the model to shape its answers for the tool"},
	{sigObey | sigForModel, "tells the model to carry out what a result or a field says"},
	{sigForModel | sigNoConsent, "tells the model to carry out what a result or a field says, without the user's confirmation"},
	{sigObey | sigAddressed, "tells the model to carry out what a result or a field says"},
	{sigAddressed | sigNoConsent, "tells the model to act without the user's confirmation"},
	{sigAuthority | sigNoConsent, "invokes authority to take the user's confirmation away"},
	{sigAuthority | sigPrivate, "invokes authority to take secrets or private data"},
	{sigWithhold | sigConsequence | sigAudience, "tells the model to leave out of what the user is told something they would want to know"},
	{sigWithhold | sigAmount | sigAudience, "tells the model to leave out of what the user is told something they would want to know"},
	{sigWithhold | sigDestroy | sigAudience, "tells the model to leave out of what the user is told something they would want to know"},
	{sigWithhold | sigOutside | sigAudience, "tells the model to leave out of what the user is told something they would want to know"},
	{sigWithhold | sigGrant | sigAudience, "tells the model to leave out of what the user is told something they would want to know"},
	{sigScript | sigWithhold, "tells the model to give the user a fixed account and leave out what happened"},
	{sigGrant | sigChain, "joins an order that hands rights over onto a value"},
}

// signals flags each sentence of t that carries one of signalPairs and
// that no flag in seen (the phrase rules' findings) touches already: the
// pairs fill the gaps the phrases leave, and where a phrase names the
// order its narrower span and its reason stand.
func (t *cleanText) signals(seen []core.Flag) []core.Flag {
	if !gateOff {
		return t.signalsGated(seen)
	}
	return t.signalsWhole(seen)
}

// signalsWhole is signals without the gate of signalgate.go: each rule is
// asked of the whole text, then of each sentence.
func (t *cleanText) signalsWhole(seen []core.Flag) []core.Flag {
	// Which signals the text holds anywhere, looked for only while a pair
	// they belong to can still hold; the sentences are then read for
	// those alone.
	// A signal may have more than one rule (a lexicon per language):
	// one that matches revives what an earlier one marked dead, and they
	// stand beside each other in the table.
	var have, dead signal
	for _, r := range signalRules {
		if have&r.sig != 0 {
			continue
		}
		if !alive(dead|r.sig, r.sig) {
			dead |= r.sig
			continue
		}
		re := r.re
		if r.sig == sigChain && !t.words {
			re = proseChain
		}
		if re.matchIn(t) {
			have |= r.sig
			dead &^= r.sig
		} else {
			dead |= r.sig
		}
	}
	if pairReason(have) == "" {
		return nil
	}
	var out []core.Flag
	for a := 0; a < len(t.text); {
		for a < len(t.text) && (t.text[a] == ' ' || t.text[a] == '\t') {
			a++
		}
		z := sentenceEnd(t.text, a)
		if reason := pairReason(unsaid(t.text[a:z], t.words, signalsIn(t.text[a:z], t.words, have))); reason != "" {
			start, end := t.span(a, z)
			if !slices.ContainsFunc(seen, func(f core.Flag) bool { return f.Start < end && start < f.End }) {
				out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end, Reason: reason})
			}
		}
		a = next(t.text, z)
	}
	if len(out) == 0 && len(t.text) <= maxCrossText {
		for _, p := range crossPairs {
			if have&p.all == p.all {
				start, end := t.span(0, len(t.text))
				if !slices.ContainsFunc(seen, func(f core.Flag) bool { return f.Start < end && start < f.End }) {
					out = append(out, core.Flag{Kind: core.FlagHiddenInstruction, Start: start, End: end, Reason: p.reason})
				}
				break
			}
		}
	}
	return out
}

// maxCrossText is the longest text whose sentences are read as one for
// crossPairs: a field's description of two or three short sentences.
const maxCrossText = 240

// alive reports whether a pair holding sig can still hold: none of its
// signals is dead, except sig itself, which is about to be looked for.
func alive(dead, sig signal) bool {
	for _, p := range signalPairs {
		if p.all&sig != 0 && p.all&(dead&^sig) == 0 {
			return true
		}
	}
	return false
}

// crossPairs hold across the sentences of a short text too: "Next step
// for the agent. Book it without checking back."
var crossPairs []signalPair

func init() {
	for _, p := range signalPairs {
		if p.all&(sigObey|sigForModel|sigAddressed) != 0 && p.all&(sigObey|sigForModel|sigAddressed|sigNoConsent) == p.all {
			crossPairs = append(crossPairs, p)
		}
	}
}

// next returns where the sentence after the one ending at z starts: past
// the mark that ends it, which may be 。 or ।.
func next(text string, z int) int {
	if z >= len(text) {
		return z + 1
	}
	_, size := utf8.DecodeRuneInString(text[z:])
	return z + size
}

// sentenceEnd returns where the sentence starting at a ends, by the
// bounds sentence uses.
func sentenceEnd(text string, a int) int {
	for i := a; i < len(text); i++ {
		if c := text[i]; c == '\n' || (c == '.' || c == '!' || c == '?') && (i+1 == len(text) || text[i+1] == ' ' || text[i+1] == '\n') {
			return i
		}
		if strings.HasPrefix(text[i:], "。") || strings.HasPrefix(text[i:], "।") || strings.HasPrefix(text[i:], "۔") {
			return i
		}
	}
	return len(text)
}

// sentenceSignal returns the reason of the first pair the sentence holds,
// or "". words: the sentence is an identifier read as words.
func sentenceSignal(s string, words bool) string {
	return pairReason(unsaid(s, words, signalsIn(s, words, ^signal(0))))
}

// signalsIn returns the signals of mask the sentence carries.
func signalsIn(s string, words bool, mask signal) signal {
	var have signal
	t := &cleanText{text: s}
	for _, r := range signalRules {
		if r.sig&mask == 0 {
			continue
		}
		if r.sig == sigChain && !words {
			// In prose "and" and "then" join steps of what the tool
			// does; only a semicolon sets an order apart.
			if proseChain.matchWhole(t) {
				have |= sigChain
			}
			continue
		}
		if r.re.matchWhole(t) {
			have |= r.sig
		}
	}
	return have
}

// pairReason returns the reason of the first pair in have, or "".
func pairReason(have signal) string {
	for _, p := range signalPairs {
		if have&p.all == p.all {
			return p.reason
		}
	}
	return ""
}

// required returns strings one of which every match of re holds, folded
// for mayContain; nil when some match need hold none (the rule is then
// always run). It reads them off the pattern: a branch of an alternation
// gives the longest literal it cannot match without.

func required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if n := literalNeedle(re.Rune); n != "" {
			return []string{n}
		}
		return nil
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min > 0 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		// the sub-pattern whose shortest needle is longest; a literal is
		// joined to what the next sub-pattern starts with, since parsing
		// factors common prefixes out ("a(?:ssistant|gent)")
		var best []string
		bestLen := 0
		for i, sub := range re.Sub {
			n := required(sub)
			if sub.Op == syntax.OpLiteral && i+1 < len(re.Sub) {
				if next := prefixes(re.Sub[i+1]); next != nil && literalNeedle(sub.Rune) != "" {
					n = nil
					for _, p := range next {
						n = append(n, literalNeedle(sub.Rune)+p)
					}
				}
			}
			if n == nil {
				continue
			}
			short := len(n[0])
			for _, s := range n {
				short = min(short, len(s))
			}
			if short > bestLen {
				best, bestLen = n, short
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			n := required(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		return all
	}
	return nil
}

// prefixes returns strings one of which every match of re starts with,
// lower-cased, or nil.
func prefixes(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if n := literalNeedle(re.Rune); n != "" {
			return []string{n}
		}
		return nil
	case syntax.OpCapture:
		return prefixes(re.Sub[0])
	case syntax.OpConcat:
		if len(re.Sub) > 0 {
			return prefixes(re.Sub[0])
		}
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			n := prefixes(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		return all
	}
	return nil
}
