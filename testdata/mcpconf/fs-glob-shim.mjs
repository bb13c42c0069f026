// node:fs as the conformance suite imports it, with the globSync that
// Node 22 added and Node 20 lacks (install.sh points the suite's one
// import of it here). The suite calls it once, as
// globSync("**/checks.json", {cwd: dir}): the paths, relative to cwd, of
// the files under it with that name. That is all this globSync does: a
// pattern "**/NAME" and the option cwd; anything else throws, so a newer
// suite that uses more fails by name rather than finding nothing.
import { readdirSync } from "node:fs";
import { join, relative } from "node:path";

export * from "node:fs";

export function globSync(pattern, options = {}) {
  const name = typeof pattern === "string" && pattern.startsWith("**/") ? pattern.slice(3) : "";
  if (!name || /[*?[\]{}]/.test(name) || Object.keys(options).some((k) => k !== "cwd")) {
    throw new Error(`fs-glob-shim: globSync(${JSON.stringify(pattern)}, ${JSON.stringify(options)}) is beyond this shim (testdata/mcpconf)`);
  }
  const root = options.cwd ?? process.cwd();
  const found = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name === name) found.push(relative(root, p));
    }
  };
  walk(root);
  return found;
}
