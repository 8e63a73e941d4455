package scan

// languageRules are the instruction rules in the languages an attacker
// switches to when English phrases are caught. Each needs the words that
// set an instruction apart from honest text — "ignore the previous
// instructions", not "ignore empty rows"; "do not tell the user", not
// "tell the user" — so honest descriptions in those languages pass.
var languageRules = []textRule{
	// Spanish
	{re: phrase(`\b(?:ignora|ignore|ignoren|ignorar|olvida|olvide|olviden|omite|omita|descarta|descarte) (?:todas (?:las|tus|sus) (?:instrucciones|indicaciones|órdenes|reglas|directrices)|(?:las|tus|sus) (?:instrucciones|indicaciones|órdenes|reglas|directrices) (?:anteriores|previas|de arriba|del sistema|originales|iniciales))|\bhaz caso omiso de (?:todas )?(?:las|tus) (?:instrucciones|indicaciones|órdenes|reglas)`), reason: reasonOverride, needles: []string{"instrucciones", "indicaciones", "órdenes", "reglas", "directrices"}},
	{re: phrase(`\bno (?:se lo |le |les )?(?:digas|diga|digan|informes|informe|menciones|mencione|cuentes|cuente|reveles|revele|avises|avise|muestres|muestre)(?: nada| esto| eso)? (?:al|a los) usuarios?\b|\bsin (?:decirle|decírselo|decir nada|informar|informarle|avisar|avisarle|notificar|notificarle) (?:al|a los) usuarios?\b|\bsin que el usuario (?:lo )?(?:sepa|note|se entere)\b`), reason: reasonConceal, needles: []string{"usuario"}},
	{re: phrase(`\b(?:secretamente|en secreto|a escondidas|às escondidas|em segredo)\b`), reason: "asks for something to be done out of the user's sight", needles: []string{"secret", "escondidas", "segredo"}},
	// French
	{re: phrase(`\b(?:ignore|ignorez|ignorer|oublie|oubliez|oublier) (?:toutes (?:les|tes|vos) (?:instructions|consignes|directives|règles)|(?:les|tes|vos) (?:instructions|consignes|directives|règles) (?:précédentes|antérieures|ci-dessus|du système|d['’]origine|initiales))`), reason: reasonOverride, needles: []string{"instructions", "consignes", "directives", "règles"}},
	{re: phrase(`\bne (?:le |lui |leur )?(?:dis|dites|mentionne|mentionnez|révèle|révélez|montre|montrez|signale|signalez) (?:rien|pas|jamais)(?: (?:de )?(?:ceci|cela|ça))? (?:à|a) l['’]utilisat(?:eur|rice)|\bn['’](?:informe|informez|avertis|avertissez|préviens|prévenez) (?:pas|jamais) l['’]utilisat(?:eur|rice)|\bsans (?:le dire|en informer|informer|prévenir|avertir|en parler)(?: (?:à|a))? l['’]utilisat(?:eur|rice)|\bà l['’]insu de l['’]utilisat(?:eur|rice)|\bsecrètement\b`), reason: reasonConceal, needles: []string{"utilisat", "secrètement"}},
	// German
	{re: phrase(`\b(?:ignoriere|ignorieren|ignoriert|vergiss|vergesst|vergessen|missachte|missachten) (?:sie |du )?(?:alle |sämtliche )?(?:vorherigen|vorigen|bisherigen|früheren|obigen|vorangegangenen|ursprünglichen|vorherige|bisherige|frühere|obige) (?:Anweisungen|Instruktionen|Befehle|Regeln|Vorgaben|Anordnungen)|\b(?:ignoriere|ignorieren|vergiss|vergessen) (?:sie |du )?(?:alle|sämtliche) (?:Anweisungen|Instruktionen|Befehle|Regeln|Vorgaben)`), reason: reasonOverride, needles: []string{"anweisungen", "instruktionen", "befehle", "regeln", "vorgaben", "anordnungen"}},
	{re: phrase(`\b(?:sag|sage|sagt|sagen sie|erzähl|erzähle|erwähne|erwähnt|erwähnen sie|verrate|verraten sie|zeige|zeig) (?:dem|den|der) (?:Benutzer|Nutzer|Anwender|Benutzerin|Nutzerin)n? (?:nichts|nicht|niemals|kein)|\bohne (?:es )?(?:dem|den|die) (?:Benutzer|Nutzer|Anwender)n? (?:zu )?(?:informieren|benachrichtigen|fragen|sagen|mitzuteilen|zu sagen|wissen zu lassen)|\bohne (?:Wissen|Kenntnis) (?:des|der) (?:Benutzers|Nutzers|Anwenders)|\b(?:heimlich|insgeheim)\b`), reason: reasonConceal, needles: []string{"benutzer", "nutzer", "anwender", "heimlich", "insgeheim"}},
	// Portuguese
	{re: phrase(`\b(?:ignore|ignora|ignorar|esqueça|esqueca|esquece|desconsidere|desconsidera) (?:todas (?:as|suas|tuas) (?:instruções|instrucoes|orientações|ordens|regras|diretrizes)|(?:as|suas|tuas) (?:instruções|instrucoes|orientações|ordens|regras|diretrizes) (?:anteriores|prévias|previas|acima|do sistema|originais|iniciais))`), reason: reasonOverride, needles: []string{"instruções", "instrucoes", "orientações", "ordens", "regras", "diretrizes"}},
	{re: phrase(`\bnão (?:lhe )?(?:diga|digas|conte|contes|informe|mencione|revele|avise|mostre)(?: nada| isso| isto)? (?:ao|aos|para o|o) (?:usuário|usuario|utilizador)|\bsem (?:informar|avisar|contar|dizer|notificar)(?: nada)?(?: ao| o)? (?:usuário|usuario|utilizador)|\bsem que o (?:usuário|usuario|utilizador) (?:saiba|perceba|note)`), reason: reasonConceal, needles: []string{"usuário", "usuario", "utilizador"}},
	// Italian
	{re: phrase(`\b(?:ignora|ignorate|ignori|dimentica|dimenticate) (?:tutte (?:le )?(?:istruzioni|indicazioni|regole|direttive)|le (?:istruzioni|indicazioni|regole|direttive) (?:precedenti|sopra|di sistema|originali|iniziali))`), reason: reasonOverride, needles: []string{"istruzioni", "indicazioni", "regole", "direttive"}},
	{re: phrase(`\bnon (?:dire|dirlo|dirgli|informare|menzionare|rivelare|mostrare)(?: nulla| niente)? all['’]utente|\bsenza (?:dirlo|dire nulla|dire niente|informare|avvisare)(?: (?:al)?l['’]utente)|\b(?:segretamente|di nascosto)\b`), reason: reasonConceal, needles: []string{"utente", "segretamente", "nascosto"}},
	// Chinese, simplified and traditional
	{re: phrase(`(?:忽略|无视|無視|忘记|忘記|忘掉|不要理会|不要理會|不理会|不理會)掉?(?:之前|以前|先前|此前|上面|上述|前面|原来|原來|原有|所有|全部|一切)的?(?:所有|全部|一切)?的?(?:指令|指示|说明|說明|提示词|提示詞|提示|规则|規則|命令|要求|设定|設定)`), reason: reasonOverride, needles: []string{"忽略", "无视", "無視", "忘", "理会", "理會"}},
	{re: phrase(`(?:不要|别|別|切勿|不得|不可|不能|请勿|請勿)(?:告诉|告訴|通知|提醒|透露|显示给|顯示給|让|讓)(?:用户|用戶|使用者)|(?:对|對)(?:用户|用戶|使用者)(?:保密|隐瞒|隱瞞)|(?:用户|用戶|使用者)不知情|偷偷地?|悄悄地|秘密地`), reason: reasonConceal, needles: []string{"用户", "用戶", "使用者", "偷偷", "悄悄", "秘密地"}},
	// Japanese
	{re: phrase(`(?:以前|これまで|前|上記|先|元)の(?:すべての|全ての)?(?:指示|命令|指令|ルール|プロンプト|設定)(?:を|は)(?:すべて|全て)?(?:無視|忘れ)|(?:指示|命令|指令)を(?:すべて|全て)無視`), reason: reasonOverride, needles: []string{"無視", "忘れ"}},
	{re: phrase(`ユーザー(?:に|には)(?:言わない|伝えない|知らせない|教えない|見せない|内緒|秘密に)|ユーザーに(?:知られず|気づかれず|気付かれず)|こっそり|密かに|ひそかに|秘密裏に`), reason: reasonConceal, needles: []string{"ユーザー", "こっそり", "密かに", "ひそかに", "秘密裏"}},
	// Russian
	{re: phrase(`(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте|отбрось|отбросьте) (?:все |всех )?(?:предыдущие|прошлые|прежние|вышеуказанные|изначальные|системные|предшествующие) (?:инструкции|указания|команды|правила|установки)|(?:игнорируй|игнорируйте|проигнорируй|проигнорируйте|забудь|забудьте) все (?:инструкции|указания|правила)`), reason: reasonOverride, needles: []string{"инструкции", "указания", "команды", "правила", "установки"}},
	{re: phrase(`не (?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|показывай|показывайте|упоминай|упоминайте)(?: об этом| это| ничего)? пользовател(?:ю|ям)|без ведома пользовател(?:я|ей)|втайне от пользовател(?:я|ей)|незаметно для пользовател(?:я|ей)`), reason: reasonConceal, needles: []string{"пользовател"}},
	// Korean
	{re: phrase(`이전(?:의)? (?:모든 )?(?:지시|지침|명령|지시사항|규칙)(?:을|를|은|는)? (?:모두 )?무시|(?:모든 )?(?:지시|지침|명령)(?:을|를) (?:모두 )?무시`), reason: reasonOverride, needles: []string{"무시"}},
	{re: phrase(`사용자(?:에게|한테) (?:알리지|말하지|보여주지|공개하지|알려주지) (?:마|말)|사용자(?:가|도) 모르게`), reason: reasonConceal, needles: []string{"사용자"}},
}
