package inspect

import (
	"encoding/base64"
	"strings"
	"testing"
)

// Samples marked "gitleaks" are copied from gitleaks' rule definitions
// (github.com/gitleaks/gitleaks, cmd/generate/config/rules/*.go, MIT
// licence): the true and false positives its own rules are validated with.

// Credentials in the providers' formats, gitleaks' true samples among
// them, are found (IN-1).
func TestSecretsFound(t *testing.T) { // IN-1
	in := mustNew(t, nil)
	pemBody := base64.StdEncoding.EncodeToString([]byte(fresh(600, alnum)))
	var pem strings.Builder
	for len(pemBody) > 64 {
		pem.WriteString(pemBody[:64] + "\n")
		pemBody = pemBody[64:]
	}
	pem.WriteString(pemBody + "\n")
	jwtHead := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	jwtBody := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"1234567890","name":"Jane Roe","iat":1516239022}`))
	jwt := jwtHead + "." + jwtBody + "." + fresh(43, alnum)
	cases := []struct {
		name, text, detector, secret string
	}{
		{"aws access key", "aws_access_key_id = AKIA" + "LALEMEL33243OLIB", "aws-access-key", "AKIALALEMEL33243OLIB"}, // gitleaks
		{"aws sts key", "key ASIA" + fresh(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"), "aws-access-key", ""},
		{"aws secret", `aws_secret_access_key = "` + fresh(40, alnum+"/+") + `"`, "aws-secret-key", ""},
		{"github pat", "token: " + githubToken("ghp"), "github-token", ""},
		{"github oauth", githubToken("gho"), "github-token", ""},
		{"github server", "GH=" + githubToken("ghs"), "github-token", ""},
		{"github fine-grained", "github_pat_" + fresh(22, alnum) + "_" + fresh(59, alnum), "github-pat", ""},
		{"gitlab pat", "glpat-" + fresh(20, alnum), "gitlab-token", ""},
		{"gitlab routable", "glpat-" + fresh(27, alnum) + "." + fresh(9, "abcdefghijklmnopqrstuvwxyz0123456789"), "gitlab-token", ""},
		{"gitlab runner", "GR1348941" + fresh(20, alnum), "gitlab-token", ""},
		{"slack bot", `"bot_token1": "xoxb-781236542736-2364535789652-GkwFDQoHqzXDVsC6GzqYUypD"`, "slack-token", ""},                                      // gitleaks
		{"slack user", `"user_token2": "xoxp-283316862324-298911817009-298923149681-44f585044dace54f5701618e97cd1c0b"`, "slack-token", ""},                // gitleaks
		{"slack legacy bot", `"bot_token2": "xoxb-282029623751-BVtmnS3BQitmjZvjpQL7PSGP"`, "slack-token", ""},                                             // gitleaks
		{"slack legacy", `"access_token1": "xoxs-3206092076-3204538285-3743137121-836b042620"`, "slack-token", ""},                                        // gitleaks
		{"slack app", `"token2": "xapp-1-IEMF8IMY1OQ-4037076220459-85c370b433e366de369c4ef5abdf41253519266982439a75af74a3d68d543fb6"`, "slack-token", ""}, // gitleaks
		{"stripe live", `stripe.api_key = "sk_live_` + fresh(24, alnum) + `"`, "stripe-key", ""},
		{"stripe restricted", "rk_live_" + fresh(24, alnum), "stripe-key", ""},
		{"google api key", `key: "AIza` + fresh(35, alnum+"_-") + `"`, "google-api-key", ""},
		{"google key at end", `AIzaSyNHxIf32IQ1a1yjl3ZJIqKZqzLAK1XhDk-`, "google-api-key", ""}, // gitleaks
		{"openai project", "OPENAI_API_KEY=sk-proj-" + fresh(40, alnum) + "T3BlbkFJ" + fresh(40, alnum), "openai-key", ""},
		{"openai legacy", "sk-" + fresh(20, alnum) + "T3BlbkFJ" + fresh(20, alnum), "openai-key", ""},
		{"anthropic", "sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzAA", "anthropic-key", ""}, // gitleaks
		{"anthropic admin", "sk-ant-admin01-" + fresh(93, alnum+"_-") + "AA", "anthropic-key", ""},
		{"npm", "//registry.npmjs.org/:_authToken=npm_" + fresh(36, alnum), "npm-token", ""},
		{"pypi", "password = pypi-AgEIcHlwaS5vcmc" + fresh(60, alnum), "pypi-token", ""},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\n" + pem.String() + "-----END RSA PRIVATE KEY-----", "private-key", ""},
		{"openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\n" + pem.String() + "-----END OPENSSH PRIVATE KEY-----", "private-key", ""},
		{"jwt", "Authorization: Bearer " + jwt, "jwt", jwt},
		{"postgres url", "postgres://app:" + "Zq8vT2mLp4Xw" + "@db.internal:5432/app", "url-password", "Zq8vT2mLp4Xw"},
		{"amqp url", "amqp://guest:s3cr3T9kQ@rabbit/", "url-password", "s3cr3T9kQ"},
		{"password assignment", `DB_PASSWORD="` + "hT7kq2Vx9Lm" + `"`, "password-assignment", "hT7kq2Vx9Lm"},
		{"api key assignment", "api_key: 9f8Gk2LmQx7Tz4Wv", "password-assignment", "9f8Gk2LmQx7Tz4Wv"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := in.Text(c.text, "", Bit(Secrets))
			got := detectors(c.text, fs, Secrets)
			found := false
			for _, f := range fs {
				if f.Detector == c.detector {
					found = true
					if c.secret != "" && c.text[f.Start:f.End] != c.secret {
						t.Errorf("span %q, want %q", c.text[f.Start:f.End], c.secret)
					}
				}
			}
			if !found {
				t.Errorf("%s not found in %q; got %v", c.detector, c.text, got)
			}
		})
	}
}

// Look-alikes are not credentials: git SHAs, UUIDs, base64 blobs, AWS's
// documented example key, bad checksums, placeholders, gitleaks' false
// samples (IN-1).
func TestSecretsBenign(t *testing.T) { // IN-1
	in := mustNew(t, nil)
	badSum := githubToken("ghp")
	badSum = badSum[:len(badSum)-1] + map[bool]string{true: "A", false: "B"}[badSum[len(badSum)-1] != 'A']
	cases := []string{
		"key = AKIAXXXXXXXXXXXXXXXX",                                           // gitleaks: low entropy
		"aws_access_key: AKIAIOSFODNN7EXAMPLE",                                 // gitleaks: AWS's documented example
		"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",     // AWS's documented example
		`msgstr "Näytä asiakirjamallikansio."`,                                 // gitleaks
		"TODAYINASIAASACKOFRICEFELLOVER",                                       // gitleaks: wrong length
		"xoxb-xxxxxxxxx-xxxxxxxxxx-xxxxxxxxxxxx",                               // gitleaks
		"xoxb-12345-abcd234",                                                   // gitleaks
		"xoxb-xoxb-my-bot-token",                                               // gitleaks
		`"token3": "xoxp-1234-1234-1234-4ddbc191d40ee098cbaae6f3523ada2d"`,     // gitleaks
		"https://github.com/xoxa-nyc/xoxa-nyc.github.io/blob/master/README.md", // gitleaks
		"https://indieweb.org/images/3/35/2018-250-xoxo-indieweb-1.jpg",        // gitleaks
		`apiKey: "AIzaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`,                    // gitleaks: entropy
		"AIZASYCO2CXRMC9ELSKLHLHRMBSWDEVEDZTLO2O",                              // gitleaks: case
		"AIzaSyabcdefghijklmnopqrstuvwxyz1234567",                              // gitleaks: Firebase example
		"GWw4hjABFzZCGiRpmlDyDdo87Jn9BN9THUA47muVRNunLxsa82tMAdvmrhOqNkRKiYMEAFbTJAIzaTesb6Tscfcni8vIpWZqNCXFDFslJtVSvFDq", // gitleaks
		"sk-ant-api03-abc123xyz-456def789ghij-klmnopqrstuvwx-3456yza789bcde-1234fghijklmnopby56aaaogaopaaaabc123xyzBB",     // gitleaks: wrong suffix
		"sk-ant-api03-abc123xyz-456de-klMnopqrstuvwx-3456yza789bcde-1234fghijklmnopAA",                                     // gitleaks: too short
		"sk-ant-oat01-tooShort",                          // gitleaks, without its assignment (which the generic rule reads)
		"glpat-XXXXXXXXXXX-XXXXXXXX",                     // gitleaks
		"glptt-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // gitleaks
		"GR1348941XXXXXXXXXXXXXXXXXXXX",                  // gitleaks
		badSum,                                           // checksum fails
		"ghp_" + strings.Repeat("a", 36),
		"commit 3f786850e387550fdab836ed7e6dc881de23001b",
		"id: 550e8400-e29b-41d4-a716-446655440000",
		"data: " + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("the quick brown fox ", 8))),
		"eyJhbGciOieeeiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0.a_5icKBDo-8EjUlrfvz2k2k", // header does not decode
		"postgres://user:password@localhost/db",
		"postgres://app:${DB_PASSWORD}@db/app",
		"password = changeme",
		"password: hunter",
		"token = process.env.GITHUB_TOKEN",
		"Set the `password=` option to your database password.",
		"-----BEGIN PRIVATE KEY-----\n" + strings.Repeat("X", 200) + "\n-----END PRIVATE KEY-----", // gitleaks: low entropy
		"sk_test_short",
	}
	for _, s := range cases {
		if fs := in.Text(s, "", Bit(Secrets)); len(fs) > 0 {
			t.Errorf("%q: flagged %v", s, detectors(s, fs, Secrets))
		}
	}
}
