package inspect

import (
	"encoding/base64"
	"strings"
	"testing"
)

const (
	hexLower = "0123456789abcdef"
	upperNum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	lowerNum = "abcdefghijklmnopqrstuvwxyz0123456789"
	letters  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	b64      = alnum + "+/"
	bech32   = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
)

// Every provider of the second table is found in the shapes its tokens
// take, inside the text a tool result carries them in: a config line, a
// JSON field, an environment dump, a header (IN-1). Each token is made
// anew on each run; the span reported must be the token itself.
func TestProviderSecretsFound(t *testing.T) { // IN-1
	in := mustNew(t, nil)
	type c struct{ name, text, detector, secret string }
	tok := func(name, detector, before, token, after string) c {
		return c{name, before + token + after, detector, token}
	}
	azureKey := fresh(86, b64) + "=="
	sasSig := strings.ReplaceAll(strings.ReplaceAll(fresh(43, b64), "+", "%2B"), "/", "%2F") + "%3D"
	basicPair := base64.StdEncoding.EncodeToString([]byte("deploy:" + fresh(16, alnum)))
	cases := []c{
		tok("huggingface", "huggingface-token", "HF_TOKEN=", "hf_"+fresh(34, letters), "\n"),
		tok("huggingface org", "huggingface-token", `"token": "`, "api_org_"+fresh(34, letters), `"`),
		tok("digitalocean", "digitalocean-token", "DIGITALOCEAN_TOKEN=", "dop_v1_"+fresh(64, hexLower), ""),
		tok("shopify", "shopify-token", "X-Shopify-Access-Token: ", "shpat_"+fresh(32, hexLower), ""),
		tok("sendgrid", "sendgrid-key", `SENDGRID_API_KEY="`, "SG."+fresh(22, alnum+"_-")+"."+fresh(43, alnum+"_-"), `"`),
		tok("twilio", "twilio-key", "twilio api key ", "SK"+fresh(32, hexLower), " (secret below)"),
		tok("mailgun", "mailgun-key", "mailgun:\n  api_key: ", "key-"+fresh(32, hexLower), "\n"),
		tok("brevo", "brevo-key", "BREVO_KEY=", "xkeysib-"+fresh(64, hexLower)+"-"+fresh(16, alnum), ""),
		tok("mailchimp", "mailchimp-key", "apikey ", fresh(32, hexLower)+"-us21", ""),
		tok("vault", "vault-token", "VAULT_TOKEN=", "hvs."+fresh(95, alnum+"_-"), "\n"),
		tok("doppler", "doppler-token", "DOPPLER_TOKEN=", "dp.st.prd."[:6]+fresh(43, alnum), ""),
		tok("postman", "postman-key", "x-api-key: ", "PMAK-"+fresh(24, hexLower)+"-"+fresh(34, hexLower), ""),
		tok("linear", "linear-key", `{"linear": "`, "lin_api_"+fresh(40, alnum), `"}`),
		tok("grafana cloud", "grafana-token", "GRAFANA_TOKEN=", "glc_"+fresh(60, alnum), "\n"),
		tok("grafana service account", "grafana-token", "token: ", "glsa_"+fresh(32, alnum)+"_"+fresh(8, hexLower), ""),
		tok("new relic", "newrelic-key", "NEW_RELIC_API_KEY=", "NRAK-"+fresh(27, upperNum), ""),
		tok("sentry user", "sentry-token", "SENTRY_AUTH_TOKEN=", "sntryu_"+fresh(64, hexLower), ""),
		tok("sentry org", "sentry-token", "auth.token=", "sntrys_eyJ"+fresh(120, alnum), ""),
		tok("pulumi", "pulumi-token", "PULUMI_ACCESS_TOKEN=", "pul-"+fresh(40, hexLower), ""),
		tok("alibaba", "alibaba-key", "AccessKeyId: ", "LTAI"+fresh(20, alnum), ""),
		tok("tencent", "tencent-key", "SecretId=", "AKID"+fresh(32, alnum), ""),
		tok("groq", "groq-key", "GROQ_API_KEY=", "gsk_"+fresh(52, alnum), ""),
		tok("replicate", "replicate-token", "REPLICATE_API_TOKEN=", "r8_"+fresh(37, alnum), ""),
		tok("perplexity", "perplexity-key", "key: ", "pplx-"+fresh(48, alnum), ""),
		tok("xai", "xai-key", "XAI_API_KEY=", "xai-"+fresh(80, alnum), ""),
		tok("notion", "notion-token", "NOTION_TOKEN=", "ntn_"+fresh(11, "0123456789")+fresh(35, alnum), ""),
		tok("notion legacy", "notion-token", `"auth": "`, "secret_"+fresh(43, alnum), `"`),
		tok("supabase", "supabase-token", "SUPABASE_ACCESS_TOKEN=", "sbp_"+fresh(40, hexLower), ""),
		tok("fly", "flyio-token", "FLY_API_TOKEN=", "fo1_"+fresh(43, alnum+"_-"), "\n"),
		tok("age", "age-key", "# created: 2026-01-01\n", "AGE-SECRET-KEY-1"+strings.ToUpper(fresh(58, bech32)), "\n"),
		tok("mapbox", "mapbox-secret", "MAPBOX_SECRET=", "sk.eyJ"+fresh(60, alnum)+"."+fresh(22, alnum+"_-"), ""),
		tok("figma", "figma-token", "X-Figma-Token: ", "figd_"+fresh(40, alnum+"_-"), ""),
		tok("planetscale", "planetscale-token", "password: ", "pscale_pw_"+fresh(43, alnum), ""),
		tok("databricks", "databricks-token", "DATABRICKS_TOKEN=", "dapi"+fresh(32, hexLower), ""),
		tok("atlassian", "atlassian-token", "JIRA_API_TOKEN=", "ATATT3"+fresh(186, alnum+"_-="), ""),
		tok("bitbucket", "bitbucket-app-password", "BITBUCKET_APP_PASSWORD=", "ATBB"+fresh(32, alnum), ""),
		tok("telegram", "telegram-bot-token", "https://api.telegram.org/bot", "123456789:AA"+fresh(33, alnum+"_-"), "/getMe"),
		tok("azure storage", "azure-storage-key", "DefaultEndpointsProtocol=https;AccountName=prod;AccountKey=", azureKey, ";EndpointSuffix=core.windows.net"),
		tok("azure service bus", "azure-shared-access-key", "Endpoint=sb://bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=", fresh(43, b64)+"=", ""),
		tok("azure sas url", "azure-sas-token", "https://prod.blob.core.windows.net/c/f.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&sig=", sasSig, ""),
		tok("azure ad secret", "azure-ad-client-secret", "AZURE_CLIENT_SECRET=", fresh(3, alnum)+"8Q~"+fresh(34, alnum+"_~.-"), "\n"),
		tok("google oauth secret", "google-oauth-secret", `"client_secret":"`, "GOCSPX-"+fresh(28, alnum+"_-"), `"`),
		tok("google access token", "google-oauth-token", "access_token=", "ya29."+fresh(120, alnum+"_-"), "&"),
		tok("square", "square-token", "SQUARE_ACCESS_TOKEN=", "EAAA"+fresh(60, alnum), ""),
		tok("square oauth", "square-token", "secret ", "sq0csp-"+fresh(43, alnum), ""),
		tok("facebook", "facebook-token", "fb_token=", "EAAC"+fresh(160, alnum), ""),
		tok("stripe webhook", "stripe-webhook-secret", "STRIPE_WEBHOOK_SECRET=", "whsec_"+fresh(32, alnum), ""),
		tok("twitter bearer", "twitter-bearer-token", "TWITTER_BEARER=", "AAAAAAAAAAAAAAAAAAAAA"+fresh(80, alnum), ""),
		tok("discord webhook", "chat-webhook", "https://", "discord.com/api/webhooks/123456789012345678/"+fresh(68, alnum+"_-"), ""),
		tok("dynatrace", "dynatrace-token", "DT_API_TOKEN=", "dt0c01."+fresh(24, upperNum)+"."+fresh(64, upperNum), ""),
		tok("docker hub", "docker-hub-token", "DOCKER_PAT=", "dckr_pat_"+fresh(27, alnum+"_-"), ""),
		tok("rubygems", "rubygems-key", ":rubygems_api_key: ", "rubygems_"+fresh(48, hexLower), ""),
		tok("nuget", "nuget-key", "nuget push -k ", "oy2"+fresh(43, lowerNum), ""),
		tok("terraform", "terraform-token", `token = "`, fresh(14, alnum)+".atlasv1."+fresh(67, alnum), `"`),
		tok("1password service account", "1password-token", "OP_SERVICE_ACCOUNT_TOKEN=", "ops_eyJ"+fresh(300, alnum), ""),
		tok("1password secret key", "1password-token", "Secret Key: ", "A3-"+fresh(6, upperNum)+"-"+fresh(11, upperNum)+"-"+fresh(5, upperNum)+"-"+fresh(5, upperNum)+"-"+fresh(5, upperNum), ""),
		tok("langsmith", "langsmith-key", "LANGSMITH_API_KEY=", "lsv2_pt_"+fresh(32, hexLower)+"_"+fresh(10, hexLower), ""),
		tok("prefect", "prefect-key", "PREFECT_API_KEY=", "pnu_"+fresh(36, alnum), ""),
		tok("heroku", "heroku-key", "HEROKU_API_KEY=", "HRKU-AA"+fresh(58, alnum+"_-"), ""),
		tok("bearer header", "bearer-token", "GET /v1/me HTTP/1.1\r\nAuthorization: Bearer ", fresh(40, alnum), "\r\n"),
		tok("basic header", "basic-auth", "curl -H 'Authorization: Basic ", basicPair, "' https://api.internal/"),
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := in.Text(c.text, "", Bit(Secrets))
			for _, f := range fs {
				if f.Detector == c.detector {
					if got := c.text[f.Start:f.End]; got != c.secret {
						t.Errorf("span %q, want %q", got, c.secret)
					}
					return
				}
			}
			t.Errorf("%s not found in %q; got %v", c.detector, c.text, detectors(c.text, fs, Secrets))
		})
	}
}

// Text that shares a provider's prefix or shape but is not its credential
// is left alone: prefixes inside words, wrong lengths, low entropy,
// placeholders, prose about headers, hashes without a provider's name
// (IN-1).
func TestProviderSecretsBenign(t *testing.T) { // IN-1
	in := mustNew(t, nil)
	cases := []string{
		"the shelf_" + fresh(34, letters) + " label",                                       // prefix inside a word
		"hf_" + fresh(20, letters),                                                         // too short
		"hf_" + strings.Repeat("a", 34),                                                    // no entropy
		"cache key-" + fresh(32, hexLower),                                                 // a hash, no Mailgun in sight
		"SKIP the SKU list, SKETCH",                                                        // not a Twilio key
		"commit " + fresh(40, hexLower) + " -us flag",                                      // not a Mailchimp key
		"Authorization: Bearer <token>",                                                    // placeholder
		"Authorization: Bearer YOUR_API_TOKEN_HERE",                                        // placeholder
		"Send the token as a bearer token in the header",                                   // prose
		"Authorization: Basic dXNlcjpwYXNzd29yZA==",                                        // user:password, a placeholder
		"a basic " + base64.StdEncoding.EncodeToString([]byte("deploy:"+fresh(16, alnum))), // not in a header
		"the sig=" + fresh(43, alnum) + " parameter",                                       // no SAS token around it
		"Q~ is not a secret: abcQ~",                                                        // too short
		"1//02 is a fraction",                                                              // not a refresh token
		"EAAA batteries",                                                                   // too short
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",                     // padding, no entropy
		"AccountKey=" + strings.Repeat("A", 86) + "==",                                     // no entropy
		"dapi" + strings.Repeat("0", 32),                                                   // no entropy
		"LTAI is a prefix",                                                                 // too short
		"the value oy2short",                                                               // too short
		"see https://discord.com/api/webhooks/ for details",
	}
	for _, s := range cases {
		if fs := in.Text(s, "", Bit(Secrets)); len(fs) > 0 {
			t.Errorf("%q: flagged %v", s, detectors(s, fs, Secrets))
		}
	}
}
