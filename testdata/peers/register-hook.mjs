// Loaded with `node --import ./register-hook.mjs`: conformance 0.1.16
// imports globSync from fs, which Node 20 lacks. Newer Nodes need nothing.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register('./node20-fs-hook.mjs', import.meta.url);
}
