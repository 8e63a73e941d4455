// Reads a JSON array of ECMA-262 patterns on stdin and prints one JSON line
// per pattern with recheck's verdict: status, complexity and, when it found
// one, the attack string. toolgate's ReDoS screen tests use it as an oracle.
import { checkSync } from "recheck";

const input = await new Promise((resolve, reject) => {
  let data = "";
  process.stdin.setEncoding("utf8");
  process.stdin.on("data", (c) => (data += c));
  process.stdin.on("end", () => resolve(data));
  process.stdin.on("error", reject);
});
const timeout = Number(process.env.RECHECK_TIMEOUT_MS || 2000);
for (const source of JSON.parse(input)) {
  let out;
  try {
    // JSON Schema patterns are Unicode patterns (ajv compiles them with
    // "u"); a few published ones are valid only without it.
    let flags = "u";
    let r = checkSync(source, flags, { timeout });
    if (r.status === "unknown" && r.error?.kind === "invalid") {
      flags = "";
      r = checkSync(source, flags, { timeout });
    }
    out = {
      source,
      flags,
      status: r.status,
      type: r.complexity?.type ?? "",
      degree: r.complexity?.degree ?? 0,
      fuzz: r.complexity?.isFuzz ?? false,
      attack: r.attack?.string ?? "",
    };
  } catch (e) {
    out = { source, status: "error", error: String(e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
