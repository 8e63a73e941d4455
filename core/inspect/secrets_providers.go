package inspect

import (
	"encoding/base64"
	"slices"
	"strings"
)

// The rest of the secrets table (IN-1): the providers whose tokens carry a
// prefix of their own (cloud and AI platforms, mail, chat, CI, package
// registries), cloud connection strings, and credentials in HTTP
// Authorization headers. Like the table in secrets.go they follow the
// formats gitleaks documents for the same providers; a token is found by
// its prefix and exact shape, so none needs a keyword like "key" beside it.
// Where a shape alone is common in other text (Mailgun's "key-" and 32 hex
// digits) a gate asks for the provider's name nearby.
var providerSecretRules = []secretRule{
	{detector: "huggingface-token", back: 1, fwd: 45, keywords: []string{"hf_", "api_org_"},
		re: lazyCompile(`\b(?:hf|api_org)_[A-Za-z]{34}\b`), minEntropy: 3},
	{detector: "digitalocean-token", back: 1, fwd: 72, keywords: []string{"dop_v1_", "doo_v1_", "dor_v1_"},
		re: lazyCompile(`\bdo[opr]_v1_[a-f0-9]{64}\b`), minEntropy: 3},
	{detector: "shopify-token", back: 1, fwd: 40, keywords: []string{"shpat_", "shpca_", "shppa_", "shpss_"},
		re: lazyCompile(`\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b`), minEntropy: 3},
	{detector: "sendgrid-key", back: 1, fwd: 70, keywords: []string{"SG."},
		re: lazyCompile(`(?:^|[^\w.-])(SG\.[\w-]{22}\.[\w-]{43})(?:[^\w-]|$)`), group: 1, minEntropy: 3},
	{detector: "twilio-key", back: 1, fwd: 34, keywords: []string{"SK"},
		re: lazyCompile(`\bSK[0-9a-fA-F]{32}\b`), minEntropy: 3},
	{detector: "mailgun-key", back: 1, fwd: 36, keywords: []string{"key-"},
		re: lazyCompile(`\bkey-[0-9a-f]{32}\b`), minEntropy: 3,
		gate: nearby("mailgun", 200)},
	{detector: "brevo-key", back: 1, fwd: 90, keywords: []string{"xkeysib-"},
		re: lazyCompile(`\bxkeysib-[a-f0-9]{64}-[a-zA-Z0-9]{16}\b`)},
	{detector: "mailchimp-key", back: 33, fwd: 5, keywords: []string{"-us"},
		re: lazyCompile(`\b[0-9a-f]{32}-us[0-9]{1,2}\b`), minEntropy: 3},
	{detector: "vault-token", back: 1, fwd: 300, keywords: []string{"hvs.", "hvb."},
		re: lazyCompile(`\bhv[sb]\.[\w-]{90,300}`), minEntropy: 3.5},
	{detector: "doppler-token", back: 1, fwd: 60, keywords: []string{"dp.pt.", "dp.st.", "dp.ct.", "dp.sa.", "dp.scim.", "dp.audit."},
		re: lazyCompile(`\bdp\.(?:pt|st|ct|sa|scim|audit)\.[A-Za-z0-9]{40,44}\b`), minEntropy: 3.5},
	{detector: "postman-key", back: 1, fwd: 65, keywords: []string{"PMAK-"},
		re: lazyCompile(`\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b`)},
	{detector: "linear-key", back: 1, fwd: 40, keywords: []string{"lin_api_"},
		re: lazyCompile(`\blin_api_[A-Za-z0-9]{40}\b`), minEntropy: 3},
	{detector: "grafana-token", back: 1, fwd: 405, keywords: []string{"glc_", "glsa_"},
		re: lazyCompile(`\bglc_[A-Za-z0-9+/]{32,400}={0,2}|\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b`), minEntropy: 3},
	{detector: "newrelic-key", back: 1, fwd: 28, keywords: []string{"NRAK-"},
		re: lazyCompile(`\bNRAK-[A-Z0-9]{27}\b`), minEntropy: 3},
	{detector: "sentry-token", back: 1, fwd: 400, keywords: []string{"sntrys_", "sntryu_"},
		re: lazyCompile(`\bsntrys_eyJ[A-Za-z0-9+/=_-]{60,380}|\bsntryu_[a-f0-9]{64}\b`), minEntropy: 3},
	{detector: "pulumi-token", back: 1, fwd: 40, keywords: []string{"pul-"},
		re: lazyCompile(`\bpul-[a-f0-9]{40}\b`), minEntropy: 3},
	{detector: "alibaba-key", back: 1, fwd: 20, keywords: []string{"LTAI"},
		re: lazyCompile(`\bLTAI[A-Za-z0-9]{20}\b`), minEntropy: 3},
	{detector: "tencent-key", back: 1, fwd: 32, keywords: []string{"AKID"},
		re: lazyCompile(`\bAKID[A-Za-z0-9]{32}\b`), minEntropy: 3.5},
	{detector: "groq-key", back: 1, fwd: 52, keywords: []string{"gsk_"},
		re: lazyCompile(`\bgsk_[A-Za-z0-9]{52}\b`), minEntropy: 3},
	{detector: "replicate-token", back: 1, fwd: 37, keywords: []string{"r8_"},
		re: lazyCompile(`\br8_[A-Za-z0-9]{37}\b`), minEntropy: 3},
	{detector: "perplexity-key", back: 1, fwd: 48, keywords: []string{"pplx-"},
		re: lazyCompile(`\bpplx-[A-Za-z0-9]{48}\b`), minEntropy: 3},
	{detector: "xai-key", back: 1, fwd: 80, keywords: []string{"xai-"},
		re: lazyCompile(`\bxai-[A-Za-z0-9]{80}\b`), minEntropy: 3},
	{detector: "notion-token", back: 1, fwd: 50, keywords: []string{"ntn_", "secret_"},
		re: lazyCompile(`\bntn_[0-9]{11}[A-Za-z0-9]{35}\b|\bsecret_[A-Za-z0-9]{43}\b`), minEntropy: 3.5},
	{detector: "supabase-token", back: 1, fwd: 40, keywords: []string{"sbp_"},
		re: lazyCompile(`\bsbp_[a-f0-9]{40}\b`), minEntropy: 3},
	{detector: "flyio-token", back: 1, fwd: 1000, keywords: []string{"fo1_", "fm2_"},
		re: lazyCompile(`\bfo1_[\w-]{43}|\bfm2_[A-Za-z0-9+/]{100,900}={0,3}`), minEntropy: 3.5},
	{detector: "age-key", back: 0, fwd: 58, keywords: []string{"AGE-SECRET-KEY-1"},
		re: lazyCompile(`AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`)},
	{detector: "mapbox-secret", back: 1, fwd: 300, keywords: []string{"sk.eyJ"},
		re: lazyCompile(`\bsk\.eyJ[A-Za-z0-9_-]{20,200}\.[A-Za-z0-9_-]{20,60}`), minEntropy: 3.5},
	{detector: "figma-token", back: 1, fwd: 40, keywords: []string{"figd_"},
		re: lazyCompile(`\bfigd_[\w-]{40}`), minEntropy: 3},
	{detector: "planetscale-token", back: 1, fwd: 70, keywords: []string{"pscale_tkn_", "pscale_pw_", "pscale_oauth_"},
		re: lazyCompile(`\bpscale_(?:tkn|pw|oauth)_[\w=.-]{32,64}`), minEntropy: 3},
	{detector: "databricks-token", back: 1, fwd: 36, keywords: []string{"dapi"},
		re: lazyCompile(`\bdapi[a-f0-9]{32}(?:-\d)?\b`), minEntropy: 3},
	{detector: "atlassian-token", back: 1, fwd: 186, keywords: []string{"ATATT3", "ATCTT3"},
		re: lazyCompile(`\bAT[AC]TT3[A-Za-z0-9_=-]{186}`), minEntropy: 3.5},
	{detector: "bitbucket-app-password", back: 1, fwd: 32, keywords: []string{"ATBB"},
		re: lazyCompile(`\bATBB[A-Za-z0-9_=.-]{32}\b`), minEntropy: 3},
	{detector: "telegram-bot-token", back: 14, fwd: 40, keywords: []string{":AA"},
		re: lazyCompile(`(?:^|[^\w:-]|bot)([0-9]{8,10}:AA[0-9A-Za-z_-]{33})(?:[^\w-]|$)`), group: 1, minEntropy: 3},
	{detector: "azure-storage-key", back: 0, fwd: 100, keywords: []string{"AccountKey="},
		re: lazyCompile(`AccountKey=([A-Za-z0-9+/]{86}==)`), group: 1, minEntropy: 4},
	{detector: "azure-shared-access-key", back: 0, fwd: 60, keywords: []string{"SharedAccessKey="},
		re: lazyCompile(`SharedAccessKey=([A-Za-z0-9+/]{42,43}=)`), group: 1, minEntropy: 4},
	{detector: "azure-sas-token", back: 1, fwd: 110, keywords: []string{"sig="},
		re: lazyCompile(`[?&]sig=((?:[A-Za-z0-9+/]|%2[Bb]|%2[Ff]){40,100}(?:%3[Dd]|=){0,2})`), group: 1, minEntropy: 3.5,
		gate: nearby("sv=", 400)},
	{detector: "azure-ad-client-secret", back: 5, fwd: 40, keywords: []string{"Q~"},
		re: lazyCompile(`(?:^|[^\w~.-])([A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^\w~.-]|$)`), group: 1, minEntropy: 3},
	{detector: "google-oauth-secret", back: 1, fwd: 28, keywords: []string{"GOCSPX-"},
		re: lazyCompile(`\bGOCSPX-[\w-]{28}`), minEntropy: 3},
	{detector: "google-oauth-token", back: 1, fwd: 1010, keywords: []string{"ya29.", "1//0"},
		re: lazyCompile(`(?:^|[^\w/.-])(ya29\.[\w-]{30,1000}|1//0[\w-]{40,500})`), group: 1, minEntropy: 3.5},
	{detector: "square-token", back: 1, fwd: 64, keywords: []string{"sq0atp-", "sq0csp-", "EAAA"},
		re: lazyCompile(`\bsq0atp-[\w-]{22}|\bsq0csp-[\w-]{43}|\bEAAA[\w-]{60}`), minEntropy: 3},
	{detector: "facebook-token", back: 1, fwd: 400, keywords: []string{"EAA"},
		re: lazyCompile(`\bEAA[A-Z][A-Za-z0-9]{100,400}\b`), minEntropy: 3.5},
	{detector: "stripe-webhook-secret", back: 1, fwd: 80, keywords: []string{"whsec_"},
		re: lazyCompile(`\bwhsec_[A-Za-z0-9+/]{32,80}={0,2}`), minEntropy: 3},
	{detector: "twitter-bearer-token", back: 0, fwd: 200, keywords: []string{"AAAAAAAAAAAAAAAAAAAAA"},
		re: lazyCompile(`AAAAAAAAAAAAAAAAAAAAA[A-Za-z0-9%]{30,180}`), minEntropy: 3},
	{detector: "chat-webhook", back: 0, fwd: 400, keywords: []string{"discord.com/api/webhooks/", "discordapp.com/api/webhooks/", "webhook.office.com/webhookb2/"},
		re: lazyCompile(`discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[\w-]{60,70}|webhook\.office\.com/webhookb2/[^\s"'<>]{40,380}`)},
	{detector: "dynatrace-token", back: 1, fwd: 97, keywords: []string{"dt0c01."},
		re: lazyCompile(`\bdt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}\b`)},
	{detector: "docker-hub-token", back: 1, fwd: 80, keywords: []string{"dckr_pat_", "dckr_oat_"},
		re: lazyCompile(`\bdckr_(?:pat|oat)_[\w-]{27,70}`), minEntropy: 3},
	{detector: "rubygems-key", back: 1, fwd: 48, keywords: []string{"rubygems_"},
		re: lazyCompile(`\brubygems_[a-f0-9]{48}\b`), minEntropy: 3},
	{detector: "nuget-key", back: 1, fwd: 43, keywords: []string{"oy2"},
		re: lazyCompile(`\boy2[a-z0-9]{43}\b`), minEntropy: 3.5},
	{detector: "terraform-token", back: 16, fwd: 72, keywords: []string{".atlasv1."},
		re: lazyCompile(`\b[A-Za-z0-9]{14}\.atlasv1\.[\w=-]{60,70}`), minEntropy: 3.5},
	{detector: "1password-token", back: 1, fwd: 1200, keywords: []string{"ops_eyJ", "A3-"},
		re: lazyCompile(`\bops_eyJ[A-Za-z0-9+/=_-]{250,1000}|\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b`), minEntropy: 3},
	{detector: "langsmith-key", back: 1, fwd: 50, keywords: []string{"lsv2_"},
		re: lazyCompile(`\blsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}\b`)},
	{detector: "prefect-key", back: 1, fwd: 36, keywords: []string{"pnu_"},
		re: lazyCompile(`\bpnu_[A-Za-z0-9]{36}\b`), minEntropy: 3},
	{detector: "heroku-key", back: 1, fwd: 65, keywords: []string{"HRKU-"},
		re: lazyCompile(`\bHRKU-AA[0-9a-zA-Z_-]{58}`), minEntropy: 3},
	// An opaque token in a Bearer header; a JWT there is also found by the
	// jwt rule.
	{detector: "bearer-token", back: 1, fwd: 520, keywords: []string{"bearer"}, fold: true,
		re: lazyCompile(`(?i)\bbearer[ \t]+([A-Za-z0-9._~+/-]{20,500}=*)`), group: 1, minEntropy: 3.5,
		check: genericSecret},
	// Basic credentials are base64 of "user:password"; only a decoded pair
	// with a real-looking password counts.
	{detector: "basic-auth", back: 1, fwd: 400, keywords: []string{"basic"}, fold: true,
		re: lazyCompile(`(?i)\bbasic[ \t]+([A-Za-z0-9+/]{8,380}={0,2})(?:[^A-Za-z0-9+/=]|$)`), group: 1,
		check: basicCredentials, gate: nearbyFold("authorization", 40)},
}

// The provider rules go before the generic ones (url-password,
// password-assignment): where both find the same span, the finding names
// the provider.
func init() {
	generic := slices.IndexFunc(secretRules, func(r secretRule) bool { return r.detector == "url-password" })
	secretRules = slices.Concat(secretRules[:generic], providerSecretRules, secretRules[generic:])
}

// nearby gates a keyword hit on word appearing within n bytes of it,
// either side.
func nearby(word string, n int) func(s string, i int) bool {
	return func(s string, i int) bool {
		return strings.Contains(s[max(0, i-n):min(len(s), i+n)], word)
	}
}

// nearbyFold is nearby in any case; word is lower case.
func nearbyFold(word string, n int) func(s string, i int) bool {
	return func(s string, i int) bool {
		return indexFrom(s[max(0, i-n):min(len(s), i+n)], word, 0, true) >= 0
	}
}

// basicCredentials accepts base64 that decodes to "user:password" with a
// password that is not a placeholder.
func basicCredentials(v string) bool {
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return false
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	if !ok || user == "" || len(pass) < 4 {
		return false
	}
	for _, c := range raw {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return notPlaceholder(pass)
}
