// Answers the conformance package's `fs` import with node:fs plus a globSync
// that throws: only its tier-check command uses it, and the tests never do.
const shim = 'toolgate-node20:fs';
const source = `export * from 'node:fs';
export { default } from 'node:fs';
export function globSync() {
  throw new Error('fs.globSync needs Node >= 22 (conformance tier-check)');
}`;

export async function resolve(specifier, context, next) {
  const fromConformance = context.parentURL?.includes('/node_modules/@modelcontextprotocol/conformance/');
  if (fromConformance && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: shim, shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (url === shim) return { format: 'module', source, shortCircuit: true };
  return next(url, context);
}
