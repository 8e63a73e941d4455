// Times the patterns behind core/review/scan's slow-pattern cost model in
// V8: each on its attack string (a pumped input that fails at the end), at
// lengths growing by half until one test takes 0.2 s, then fits
// t = c * n^degree. Run: node testdata/schemas/slow-patterns.mjs [degree]
const cases = [
  [2, String.raw`\s+$`, (n) => " ".repeat(n) + "x"],
  [2, String.raw`[a-z]+$`, (n) => "a".repeat(n) + "!"],
  [2, String.raw`^.*a.*b$`, (n) => "a".repeat(n)],
  [2, String.raw`^\d+\d+$`, (n) => "1".repeat(n) + "x"],
  [2, String.raw`^[-+]?[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$`, (n) => "1".repeat(n) + "x"],
  [2, String.raw`^[^@\s]+@[^@\s]+\.[^@\s]+$`, (n) => "a@" + ".".repeat(n) + "@"],
  // ms before 2.0 (CVE-2015-8315)
  [2, String.raw`^((?:\d+)?\.?\d+) *(milliseconds?|msecs?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|years?|yrs?|y)?$`, (n) => "1".repeat(n) + "!"],
  // moment's RFC 2822 clean-up before 2.29.4 (CVE-2022-31129)
  [2, String.raw`\([^)]*\)`, (n) => "(".repeat(n)],
  // ua-parser-js's Xiaomi POCO rule
  [2, String.raw`\b(poco[\w ]+|m2\d{3}j\d\d[a-z]{2})(?: bui|\))`, (n) => "poco ".repeat(n / 5)],
  // the trim behind the 2016 Stack Overflow outage: its $ branch is
  // backtracked at every offset of a run of spaces the input does not end with
  [2, String.raw`^[\s\u200c]+|[\s\u200c]+$`, (n) => "b" + " ".repeat(n) + "b"],
  [3, String.raw`\d+\d+x`, (n) => "1".repeat(n)],
  [3, String.raw`^.*.*.*=$`, (n) => "a".repeat(n)],
  [3, String.raw`\s+\s+$`, (n) => " ".repeat(n) + "x"],
  [3, String.raw`^\d+\d+\d+$`, (n) => "1".repeat(n) + "x"],
  [3, String.raw`^[-+]?[0-9]*\.?[0-9]*\.?[0-9]+$`, (n) => "1".repeat(n) + "x"],
  [3, String.raw`^.*a.*b.*c$`, (n) => "abab".repeat(n / 4)],
  [3, String.raw`^\S+@\S+\.\S+$`, (n) => "@.".repeat(n / 2) + " "],
  [3, String.raw`\s*(?:[\w\s]*\/)?\s*([\w.]+)\s*$`, (n) => " ".repeat(n) + "!"],
];
const only = Number(process.argv[2] || 0);
for (const [d, src, attack] of cases) {
  if (only && d !== only) continue;
  const re = new RegExp(src, "u"); // ajv compiles patterns with "u"
  for (let n = 64; n < 4e6; n = Math.round(n * 1.5)) {
    const s = attack(n);
    const t0 = process.hrtime.bigint();
    if (re.test(s)) {
      console.log(JSON.stringify({ d, src, error: "the attack string matches" }));
      break;
    }
    const t = Number(process.hrtime.bigint() - t0) / 1e9;
    if (t >= 0.2) {
      const c = t / Math.pow(n, d);
      console.log(JSON.stringify({ d, src, n, t: +t.toFixed(3), c: c.toExponential(2), secondAt: Math.round(Math.pow(1 / c, 1 / d)) }));
      break;
    }
  }
}
