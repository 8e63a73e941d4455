package scan

// concealRules ask for something to be kept from the user, in the
// languages most people speak: a word for the user in the same sentence as
// a word for not telling, hiding, or doing it unnoticed. Either alone is
// honest ("returns the user's files", "hidden files"); an honest
// description has no reason to put them together. A few adverbs that only
// mean "behind someone's back" are flagged alone.
var concealRules = []intentRule{
	// English, beyond the fixed phrases of instructionRules
	// "unaware" as the condition for telling the user ("mention this if
	// the user seems unaware") is the opposite of keeping them so
	concealUnless(`\b(?:user|customer|human|operator|client)s?\b`,
		`\bout of the loop\b|\bin the dark\b|\bnever (?:finds?|found) out\b|\bneed(?:n['’]t| not) (?:be told|find out|(?:know|hear) (?:about )?(?:it|this|that|anything))\b|\bnone the wiser\b|\bwithout (?:them|him|her) (?:knowing|noticing|seeing)\b|\bwithout (?:telling|informing|notifying|warning|alerting) (?:them|him|her)\b|\bdiscreetly\b|\bon the quiet\b|\bunder the radar\b|\bnot (?:be )?(?:made )?aware\b|\bunaware\b|\bno (?:tell|let)\b|\bmake (?:the |di )?user no\b|\bhide (?:am|it|this|that)\b`,
		`\b(?:mention|tell|explain|point out|say|note|warn|inform|remind)\b[^.\n]{0,80}\b(?:if|when|in case|should) (?:the |a )?(?:user|customer|client)s? (?:seems?|is|are|appears?|might be|may be) unaware\b`,
		"user", "customer", "human", "operator", "client"),
	// Portuguese
	conceal(`\busu[aá]rios?\b|\butilizador(?:es)?\b|\bclientes?\b`,
		`\bdiscretamente\b|\bn[aã]o (?:informar|avisar|contar|dizer|mencionar|mostrar|notificar|revelar)\b|\bn[aã]o precisa (?:ficar sabendo|saber (?:disso|nada|de nada|sobre isso))\b|\bficar sabendo\b|\bsem (?:que|o conhecimento|o (?:usu[aá]rio|utilizador|cliente) saber)\b|\bn[aã]o (?:informe|conte|diga|avise|mencione|mostre|saiba)\b|\bescond|\bsegredo\b|\boculte\b|\bem sil[eê]ncio\b`,
		"usuário", "usuario", "utilizador", "cliente"),
	// Spanish
	conceal(`\busuarios?\b|\bclientes?\b`,
		`\bno (?:hace falta|es necesario) que\b[^.\n]{0,30}\b(?:sepa|se entere|sepan|se enteren)\b|\bno se ente\w*|\bno lo sepa|\bno se d[eé] cuenta|\bcon discreci[oó]n\b|\bdiscretamente\b|\ba escondidas\b|\boculta\w*|\bsin que\b|\bno (?:le |les )?(?:digas|diga|informes|informe|avises|avise|menciones|mencione|cuentes|cuente)\b|\bno (?:avisar|informar|decir|mencionar|contar|notificar|revelar)(?:le|les)?\b|\bno (?:necesita|tiene que|debe) saber(?:lo|nada| nada| esto| eso)\b`,
		"usuario", "cliente"),
	// French
	conceal(`\butilisat(?:eur|rice)s?\b|\bclients?\b`,
		`\bdiscrètement\b|\bà son insu\b|\bsans que\b|\bn['’]a pas (?:besoin de|à) (?:le )?savoir\b|\bgarde[sz]? (?:ça|cela|le|les) pour (?:toi|vous)\b|\bne (?:le |lui )?(?:préviens|prévenez|informe|informez|dis|dites)\b|\bcach(?:er|ez|ons|ant|ait|é)|\ben secret\b|\bs['’]en aper\w+|\bne (?:rien |pas |jamais )(?:l(?:e|ui|eur) )?(?:informer|prévenir|avertir|dire|mentionner|signaler|montrer|révéler|notifier)\b`,
		"utilisat", "client"),
	// German
	conceal(`\b(?:Benutzer|Nutzer|Anwender|Kunde)\w*`,
		`\bnichts? mitbekomm\w*|\bnichts? erfahren\b|\bnichts? wissen\b|\bnichts (?:davon |darüber |dazu )?(?:sagen|erzählen|mitteilen|erwähnen|verraten|zeigen)\b|\bverschweig\w*|\bverheimlich\w*|\bnicht (?:sagen|mitteilen|informieren|erwähnen|verraten)\b|\bohne dass\b|\bunbemerkt\b`,
		"benutzer", "nutzer", "anwender", "kunde"),
	{re: ire(`\bbehalte? (?:das|es|dies) für dich\b`), reason: reasonConceal, needles: []string{"für dich"}},
	// English phrases that only ever mean keeping something from someone,
	// with or without a word for the user
	{re: ire(`\b(?:nobody|no one|no-one) (?:else )?(?:needs?|has|have|should|must|is (?:meant|supposed)) to (?:know|hear|learn|find out|notice)\b|\bkeep (?:quiet|mum|schtum) about\b|\bsay nothing (?:about|of)\b|\bkeep (?:it|this|that|the \w+(?: \w+)?) (?:to yourself|under wraps|hush-hush|on the down-?low)\b|\bhide (?:it|this|that|the [\w-]+(?: [\w-]+)?) from (?:your|the) (?:reply|answer|response|summary|report|user|output)\b|\bomit\b[^.\n]{0,50}\bwhen(?:ever)? you (?:describe|report|explain|summari[sz]e|answer|reply|tell)\b|\bbe (?:vague|evasive|non-?committal|cagey) about\b|\bgloss over\b|\bdownplay\b|\bnot (?:something|anything|a (?:thing|topic)) to (?:discuss|mention|bring up|talk about|raise|reveal)\b|\b(?:stays?|remains?) between you and (?:me|us|the tool|this tool|the server)\b|\b(?:leave out|omit|skip|drop|exclude)\b[^.\n]{0,40}\bwhen(?:ever)? (?:you (?:are )?)?(?:listing|list|reporting|report|describing|describe|summari[sz]ing|summari[sz]e|telling|tell|explaining|explain|answering|answer|replying|reply|showing|show)\b|\bwhen(?:ever)? (?:you (?:are )?)?(?:listing|reporting|describing|summari[sz]ing|telling|explaining|answering|replying|showing)\b[^.\n]{0,60}\b(?:leave out|omit|skip|exclude)\b|\b(?:best |better )?left (?:unmentioned|unsaid|unreported|undisclosed)\b|\bwithout (?:flagging|marking|labell?ing|disclosing|saying|noting|declaring) (?:it|this|them|that) as (?:an? )?(?:ad|ads|advert|advertisement|advertising|sponsored|promotion|promotional|paid)\b|\b(?:report|mention|tell|say|reveal|disclose|list|show) (?:only|just) (?:the )?[\w\x20]{0,40}?,? (?:but )?(?:never|not) (?:the|their|its|what|which|where|who)\b`),
		reason: reasonConceal, needles: []string{"know", "hear", "learn", "find out", "notice", "quiet", "mum", "schtum", "say nothing", "yourself", "wraps", "hush", "down", "hide", "omit", "vague", "evasive", "committal", "cagey", "gloss", "something", "anything", "a thing", "a topic", "between you", "leave out", "omit", "skip", "drop", "exclude", "unmentioned", "unsaid", "unreported", "undisclosed", "as an", "as a", "as ad", "as sponsored", "as paid", "as promot", "only", "just"}},
	// Italian
	conceal(`\butent[ei]\b`,
		`\bnon deve sap\w+|\bdi nascosto\b|\bsegretamente\b|\bsenza che\b|\bnon (?:dire|dirlo|informare|avvisare)\b|\bnon (?:farlo|fargli|farglielo|fatelo) sapere\b|\bsenza (?:dirlo|avvisare|informare)\b|\bnascond\w*|\ball['’]insaputa\b`,
		"utent"),
	// Russian
	conceal(`пользовател\p{L}*|юзер\p{L}*`,
		`не (?:говори|сообщай|рассказывай|показывай|упоминай|уведомляй|информируй)\p{L}*|знать не (?:обязательно|нужно|надо)|не (?:нужно|надо|обязательно|должен) знать|скро\p{L}*|скры\p{L}*|втайне|тайком|незаметно|без ведома`,
		"пользовател", "юзер"),
	// Hindi
	conceal(`उपयोगकर्ता|यूज़र|यूजर|प्रयोक्ता`,
		`(?:मत|न|ना) (?:बता|बोल|दिखा)|बताएं नहीं|बताना नहीं|पता न चले|पता नहीं चल|छिपा|छुपा|चुपचाप|गुप्त|बिना बताए|जानकारी के बिना`,
		"उपयोगकर्ता", "यूज़र", "यूजर", "प्रयोक्ता"),
	// Marathi
	conceal(`वापरकर्त\p{M}*\p{L}*|युजर`,
		`सांगू नका|सांगू नकोस|कळू देऊ नका|कळवू नका|लपव|गुपचूप|न सांगता|नकळत`,
		"वापरकर्त", "युजर"),
	// Bengali
	conceal(`ব্যবহারকারী`,
		`জানাবেন না|বলবেন না|জানাবে না|বলো না|জানিও না|গোপন|লুকিয়ে|চুপচাপ|না জানিয়ে|না জানে`,
		"ব্যবহারকারী"),
	// Urdu
	conceal(`صارف|یوزر`,
		`مت بتا|نہ بتا|نہیں بتانا|چھپا|خاموشی سے|بتائے بغیر|علم کے بغیر|پتہ نہ چلے`,
		"صارف", "یوزر"),
	// Arabic
	conceal(`المستخدم|للمستخدم|المستخدمين`,
		`لا (?:ت|تُ)(?:خبر|علم|بلغ)|لا داعي ل|لإخبار|دون علم|بدون علم|دون أن يعلم|أخف|سر[ًا]ا?\b|خفية`,
		"المستخدم", "للمستخدم"),
	// Persian
	conceal(`کاربر`,
		`نگو|نگویید|اطلاع نده|اطلاع ندهید|بدون اطلاع|مخفی|پنهان|بی‌صدا|بی صدا|متوجه نشود|نفهمد`,
		"کاربر"),
	// Telugu
	conceal(`వినియోగదారు`,
		`చెప్పవద్దు|చెప్పకండి|తెలియజేయవద్దు|తెలియజేయకండి|తెలియకుండా|రహస్యంగా|దాచ`,
		"వినియోగదారు"),
	// Tamil
	conceal(`பயனர`,
		`சொல்ல வேண்டாம்|சொல்லாதே|சொல்லாதீர்கள்|தெரிவிக்க வேண்டாம்|தெரியாமல்|ரகசியமாக|மறைத்து|மறை`,
		"பயனர"),
	// Punjabi
	conceal(`ਉਪਭੋਗਤਾ|ਯੂਜ਼ਰ`,
		`ਨਾ ਦੱਸ|ਦੱਸਣਾ ਨਹੀਂ|ਲੁਕਾ|ਚੁੱਪ-ਚਾਪ|ਗੁਪਤ`,
		"ਉਪਭੋਗਤਾ", "ਯੂਜ਼ਰ"),
	// Gujarati
	conceal(`વપરાશકર્તા|યુઝર`,
		`જણાવશો નહીં|કહેશો નહીં|ન કહો|ન જણાવો|છુપાવ|ગુપ્ત|જાણ વગર|ચુપચાપ`,
		"વપરાશકર્તા", "યુઝર"),
	// Thai
	conceal(`ผู้ใช้`,
		`ไม่ต้องบอก|อย่าบอก|อย่าแจ้ง|ไม่ต้องแจ้ง|โดยไม่ให้|ปิดบัง|แอบ|เงียบๆ|ลับๆ`,
		"ผู้ใช้"),
	// Vietnamese
	conceal(`người dùng`,
		`đừng (?:cho|nói|báo|để)|không (?:cho|nói|báo|để)|giấu|âm thầm|lặng lẽ|bí mật|không hay biết`,
		"người dùng"),
	// Indonesian and Malay
	conceal(`\bpengguna\b`,
		`\bjangan (?:beri\x20?tahu|kasih tahu|bilang|katakan|memberitahu|sampaikan)|\btanpa sepengetahuan\b|\btanpa (?:memberi\x20?tahu|diketahui)\b|\bdiam-diam\b|\brahasiakan\b|\bsembunyikan\b|\bsecara rahasia\b`,
		"pengguna"),
	// Turkish
	conceal(`kullanıcı\p{L}*`,
		`söyleme|bahsetme|bildirme|haber verme|fark ettirmeden|haberi olmadan|haberi olmasın|fark etmesin|bilmesin|gizle|gizlice|sessizce|çaktırmadan`,
		"kullanıcı"),
	// Swahili
	conceal(`\b(?:m|wa)tumiaji\b`,
		`\busim\w+|\bmsim\w+|\busiwa\w+|\bbila (?:\w+ )?kujua\b|\bkwa siri\b|\bficha\b`,
		"tumiaji"),
	// Tagalog
	conceal(`\b(?:user|gumagamit)\b`,
		`\bhuwag (?:sabihin|ipaalam)|\bnang palihim\b|\blihim\b|\bitago\b`,
		"user", "gumagamit"),
	// Hausa
	conceal(`\bmai amfani\b|\bmasu amfani\b`,
		`\b(?:kada|kar) ka (?:gaya|sanar)|\ba ɓoye\b|\ba boye\b|\ba asirce\b`,
		"amfani"),
	// Chinese, Mandarin and Cantonese
	conceal(`用户|用戶|使用者`,
		`(?:无需|無需|不必|不用|没必要|沒必要|不需要)(?:让|讓|告诉|告訴|通知|提醒|知会|知會)|(?:不要|别|別|勿|唔好|咪)(?:让|讓|告诉|告訴|通知|话|話|讲|講|俾|畀)|瞒着|瞞著|背着|背著|暗中|偷偷|悄悄|保密|收埋|靜靜雞`,
		"用户", "用戶", "使用者"),
	// Japanese
	conceal(`ユーザー|ユーザ|利用者`,
		`伏せ|内緒|秘密|知らせ(?:ない|ず)|伝え(?:ない|ず)|言わ(?:ない|ず)|報告(?:する必要は(?:ありません|ない)|しない|せず)|気づかれ|気付かれ|黙って`,
		"ユーザ", "利用者"),
	// Korean
	conceal(`사용자|유저|이용자`,
		`몰래|알리지|말하지|숨기|모르게|(?:말할|알릴|보고할) 필요(?:는|가)? 없|비밀로`,
		"사용자", "유저", "이용자"),
	// Dutch
	conceal(`\bgebruikers?\b|\bklant(?:en)?\b`,
		`\b(?:vertel|meld|zeg|toon|laat)\b[^.\n]{0,40}\bniet\b|\bniet (?:vertellen|melden|zeggen|tonen|vermelden|laten weten)\b|\bzonder (?:medeweten|dat)\b|\bstilletjes\b|\bin het geheim\b|\bhoeft (?:dit|het) niet te weten\b`,
		"gebruiker", "klant"),
	// Polish
	conceal(`\bu[żz]ytkownik\w*|\bklient\w*`,
		`\bnie (?:wspominaj|mów|informuj|pokazuj|zgłaszaj|ujawniaj|powiadamiaj)\w*|\bbez (?:wiedzy|informowania|powiadomienia)\b|\bpo cichu\b|\bpotajemnie\b|\bw tajemnicy\b|\bnie musi (?:o tym )?wiedzie\w*`,
		"użytkownik", "uzytkownik", "klient"),
	// the user is not to know, notice or find out: a word for the user, a
	// negation and a verb of knowing in one sentence. English is left out:
	// "if the user does not know the id, call list_ids" is how honest
	// descriptions speak.
	conceal3(`\busu[aá]rios?\b|\butilizador(?:es)?\b`, `\bse\b|\bcaso\b`, `\bn[aã]o\b|\bnunca\b|\bsem\b|\bnem\b`,
		`\b(?:saiba|saber|sabendo)\b (?:disso|nada|de nada|sobre isso)|\bficar sabendo\b|\bperceb\w*|\bdescobr\w*|\bdesconfi\w*`, "usuário", "usuario", "utilizador"),
	conceal3(`\busuarios?\b`, `\bsi\b|\ben caso\b`, `\bno\b|\bnunca\b|\bsin\b|\bni\b`,
		`\blo (?:sepa|sabe|sepan|note|descubra)\b|\bse (?:entere|enteren|d[eé] cuenta|percate)\b|\bsaber (?:nada|esto|eso)\b`, "usuario"),
	conceal3(`\butilisat(?:eur|rice)s?\b`, `\bsi\b|\bs['’]il\b`, `\bne\b|\bn['’]|\bjamais\b|\bsans\b`,
		`\ble (?:sache|savoir|sachent|remarque|découvre)\b|\bs['’]en (?:aperçoive|rende compte|rendre compte|apercevoir)\b|\b(?:rien|le|en) savoir\b`, "utilisat"),
	conceal3(`\b(?:Benutzer|Nutzer|Anwender)\w*`, `\bwenn\b|\bfalls\b|\bsofern\b`, `\bnicht\w*|\bnie\b|\bniemals\b|\bkein\w*|\bohne\b`,
		`\b(?:davon|das|es|dies)\b[^.\n]{0,20}\b(?:wiss\w*|weiß|merk\w*|erfahr\w*|bemerk\w*|mitbekomm\w*|mitkrieg\w*)|\bnichts (?:wissen|erfahren|merken|mitbekommen)\b`, "benutzer", "nutzer", "anwender"),
	conceal3(`\butent[ei]\b`, `\bse\b|\bqualora\b`, `\bnon\b|\bmai\b|\bsenza\b`, `\bsaperlo\b|\blo (?:sappia|sa|scopra|noti)\b|\baccorgersene\b|\bse ne accorga\b`, "utent"),
	conceal3(`пользовател\p{L}*`, `если`, `(?:^|\s)(?:не|ни|без)\s`, `(?:об этом|ничего)[^.\n]{0,20}зна\p{L}*|узна\p{L}*|замет\p{L}*|догада\p{L}*|обнаруж\p{L}*`, "пользовател"),
	conceal(`kullanıcı\p{L}*`, `(?:öğren|bil|fark et|haberdar ol|duy)(?:memeli|mamalı|mesin|masın|meden|madan|meyecek|mayacak|mez|maz)`, "kullanıcı"),
	conceal3(`المستخدم|للمستخدم`, `إذا|إن لم`, `(?:^|\s)(?:لا|لن|دون|بدون|ألا|ما)\s`, `يعلم|يعرف|يدري|يلاحظ|يكتشف|تذكر|تخبر|تعلم|تبلغ|تقول|تُعلم|تُخبر`, "المستخدم", "للمستخدم"),
	// the negation and the verb of knowing in one clause ("पता न चले",
	// "मत बताना", "बिना उपयोगकर्ता को बताए"): in "उपयोगकर्ता द्वारा बताई
	// गई जानकारी से भरें; अनुमान न लगाएँ" the verb is "told" and the
	// negation belongs to guessing
	conceal3(`उपयोगकर्ता|यूज़र|यूजर`, `अगर|यदि`, `(?:^|\s)(?:न|नहीं|मत|ना|बिना)(?:\s|$|।)`, `(?:पता|भनक|जान|मालूम|खबर|बता)[^;।\n]{0,25}(?:^|\s)(?:न|नहीं|मत|ना)(?:\s|$|।)|(?:^|\s)(?:न|नहीं|मत|ना|बिना)\s[^;।\n]{0,25}(?:पता|भनक|जान|मालूम|खबर|बता)`, "उपयोगकर्ता", "यूज़र", "यूजर"),
	conceal3(`वापरकर्त\p{M}*\p{L}*`, `(?:^|\s)जर\s`, `नका|नये|नाही|(?:^|\s)न(?:\s|$)`, `कळ|समज|माहीत|सांग`, "वापरकर्त"),
	conceal3(`صارف|یوزر`, `اگر`, `(?:^|\s)(?:نہ|نہیں|مت|بغیر)(?:\s|$|۔)`, `خبر|پتہ|پتا|معلوم|علم|بتا`, "صارف", "یوزر"),
	conceal3(`ব্যবহারকারী`, `যদি`, `(?:^|\s)(?:না|নয়|ছাড়া)(?:\s|$|।)`, `টের|জান|বুঝ|খবর|বল`, "ব্যবহারকারী"),
	conceal3(`\bpengguna\b`, `\b(?:jika|kalau|apabila|bila)\b`, `\b(?:tidak|tak|jangan|tanpa|bukan)\b`, `\b(?:tahu|mengetahui)\b (?:soal|tentang|mengenai|hal) (?:ini|itu)|\b(?:menyadari|sadar)\b`, "pengguna"),
	conceal3(`người dùng`, `\bnếu\b`, `\b(?:không|chẳng|đừng|chưa)\b`, `\bbiết (?:chuyện|điều|việc|về) (?:này|đó)|\bnhận ra\b|\bphát hiện\b|\bđể ý\b|\bhay biết\b`, "người dùng"),
	conceal3(`사용자|유저|이용자`, `면|경우`, `못|않|말고|말아|없이`, `알|눈치|깨닫|인지`, "사용자", "유저", "이용자"),
	conceal(`用户|用戶|使用者`, `(?:不要|别|別|勿|不能|不可|无需|無需|不必|不用)[^。，,]{0,8}(?:知道|发现|發現|察觉|察覺|注意到|知情)`, "用户", "用戶", "使用者"),
	conceal(`ユーザー|ユーザ|利用者`, `(?:知られ|バレ|悟られ|気づか|気付か)(?:ない|ず)`, "ユーザ", "利用者"),
	conceal(`వినియోగదారు`, `తెలియ(?:కూడదు|నివ్వ|కుండా|చేయవద్దు)`, "వినియోగదారు"),
	conceal(`பயனர`, `தெரிய(?:க் கூடாது|ாமல்|வேண்டாம்)`, "பயனர"),
	// Egyptian Arabic: "ما تقولش", "من غير ما … يعرف"
	conceal(`المستخدم|للمستخدم|اليوزر`, `ما\s?ت\p{L}+ش|من غير ما`, "المستخدم", "للمستخدم", "اليوزر"),
	// adverbs that mean behind someone's back, whoever it is
	{re: ire(`\bdiscretamente\b|\bdiscrètement\b|चुपचाप|गुपचूप|خاموشی سے|\bdiam-diam\b|âm thầm|lặng lẽ|몰래|暗中|悄悄|سرًا|خفية|مخفیانه|پنهانی|\bgizlice\b|\bçaktırmadan\b|\bkwa siri\b|แอบ|গোপনে|ரகசியமாக|రహస్యంగా|ਚੁੱਪ-ਚਾਪ|\bpalihim\b|\ba asirce\b|тайком|втайне`),
		reason:  "asks for something to be done out of the user's sight",
		needles: []string{"discr", "चुपचाप", "गुपचूप", "خاموشی", "diam-diam", "âm thầm", "lặng lẽ", "몰래", "暗中", "悄悄", "سرًا", "خفية", "مخفیانه", "پنهانی", "gizlice", "çaktırmadan", "kwa siri", "แอบ", "গোপনে", "ரகசியமாக", "రహస్యంగా", "ਚੁੱਪ-ਚਾਪ", "palihim", "asirce", "тайком", "втайне"}},
}

// conceal is a rule that flags a sentence holding a word for the user and
// a word for keeping something from them.
func conceal(user, cue string, needles ...string) intentRule {
	return intentRule{re: ire(user), with: []*lazyRegexp{ire(cue)}, reason: reasonConceal, needles: needles}
}

// concealUnless is conceal, left alone in a sentence that matches unless.
func concealUnless(user, cue, unless string, needles ...string) intentRule {
	r := conceal(user, cue, needles...)
	r.unless = ire(unless)
	return r
}

// conceal3 is a rule that flags a sentence holding a word for the user, a
// negation and a verb of knowing or telling.
//
// A sentence with "if" (cond) is left alone, and the verb of knowing needs
// "it" or "about this" where the language allows: "if the user does not
// know the id, call list_ids" and "the user need not know SQL" are how
// honest descriptions speak.
func conceal3(user, cond, neg, know string, needles ...string) intentRule {
	return intentRule{re: ire(user), with: []*lazyRegexp{ire(neg), ire(know)}, unless: ire(cond), reason: reasonConceal, needles: needles}
}
