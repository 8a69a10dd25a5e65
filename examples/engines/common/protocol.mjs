// The conformance protocol loop for engine adapters written in JavaScript (docs/conformance.md, "The protocol").
//
// An adapter gives `serve` one async function, `answer(request) -> output`: the request is the parsed JSON line
// {"id", "type", "input"}; the output is the object that goes under "output". It throws `Unsupported` when the
// engine cannot express the case (the response is then {"id", "unsupported": reason}, which `check` counts apart
// from failures); any other error becomes {"id", "error": "Name: message"}. Requests are answered one at a time,
// in order, one flushed line each, until standard input ends.
import readline from "node:readline";

export class Unsupported extends Error {}

/** The suite's JSON floats back to numbers: the strings "-inf", "inf" and "nan" included. */
export function floats(value) {
  if (Array.isArray(value)) return value.map(floats);
  if (value === "-inf") return -Infinity;
  if (value === "inf") return Infinity;
  if (value === "nan") return NaN;
  return value;
}

function jsonSafe(value) {
  if (typeof value === "number" && !Number.isFinite(value)) return Number.isNaN(value) ? "nan" : value > 0 ? "inf" : "-inf";
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (value && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]));
  return value;
}

export async function respond(line, answer) {
  let id = null;
  try {
    const request = JSON.parse(line);
    id = request.id ?? null;
    return JSON.stringify({ id, output: jsonSafe(await answer(request)) });
  } catch (err) {
    if (err instanceof Unsupported) return JSON.stringify({ id, unsupported: err.message });
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
    return JSON.stringify({ id, error: `${err && err.name ? err.name : "Error"}: ${err && err.message ? err.message : err}` });
  }
}

/** Answer requests in order until standard input ends. */
export async function serve(answer) {
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim()) process.stdout.write((await respond(line, answer)) + "\n");
  }
}
