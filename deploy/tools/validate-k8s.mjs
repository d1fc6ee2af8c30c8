// Validates Kubernetes manifests against the Kubernetes API's schemas, as kubeconform --strict does:
// every object's fields, types, formats, enums and required fields (the JSON schemas of the npm
// package kubernetes-models, generated from Kubernetes' OpenAPI document), and no field the API does
// not know (a misspelt `readinesProbe` is silently dropped by the API server). Then what the schemas
// cannot see: a workload's selector matches its pod template, every Service and
// PodDisruptionBudget selects some workload's pods, a StatefulSet's serviceName is a Service here,
// and probes name ports the container has.
//
//   node deploy/tools/validate-k8s.mjs FILE.yaml|- ...      (deploy/k8s/validate.sh runs it)
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

// The packages of deploy/tools/package.json, installed where deploy/check-configs.sh put them.
const TOOLS = process.env.TANDEM_DEPLOY_TOOLS ?? path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(TOOLS, "package.json"));
const YAML = require("yaml");
const MODELS = path.dirname(require.resolve("kubernetes-models/package.json"));
const NODE_MODULES = path.dirname(MODELS);

// --- The API's field names, from the package's TypeScript declarations. ---------------------------

const declarations = new Map();  // .d.ts path -> {fields: Map(name -> type) | null, imports}

function stripComments(text) {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
}

// Splits `a; b; {c; d}; e` at top-level semicolons.
function splitMembers(body) {
  const out = [];
  let depth = 0, start = 0;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === "{" || c === "<" || c === "(") depth++;
    else if (c === "}" || c === ">" || c === ")") depth--;
    else if (c === ";" && depth === 0) { out.push(body.slice(start, i).trim()); start = i + 1; }
  }
  if (body.slice(start).trim()) out.push(body.slice(start).trim());
  return out;
}

function declaration(file) {
  if (declarations.has(file)) return declarations.get(file);
  const text = stripComments(fs.readFileSync(file, "utf8"));
  const imports = new Map();
  for (const m of text.matchAll(/import \{([^}]*)\} from "([^"]+)"/g)) {
    for (const name of m[1].split(",").map((s) => s.trim()).filter(Boolean)) imports.set(name, m[2]);
  }
  let fields = null;
  const head = text.match(/export interface \w+(?: extends [\w, ]+)? \{/);
  if (head) {
    let depth = 1, i = head.index + head[0].length;
    const start = i;
    for (; depth > 0; i++) depth += text[i] === "{" ? 1 : text[i] === "}" ? -1 : 0;
    fields = new Map();
    for (const member of splitMembers(text.slice(start, i - 1))) {
      const m = member.match(/^"([^"]+)"\??:\s*([\s\S]+)$/);
      if (m) fields.set(m[1], m[2].trim());
    }
  }
  const result = { file, fields, imports };
  declarations.set(file, result);
  return result;
}

function resolveImport(from, spec) {
  if (spec.startsWith(".")) return path.resolve(path.dirname(from), spec.replace(/\.js$/, ".d.ts"));
  return path.join(NODE_MODULES, spec.replace(/\.js$/, "") + ".d.ts");
}

// Reports the fields of `value` that its type does not declare, recursively.
function unknownFields(value, type, decl, where, problems) {
  if (value === null || typeof value !== "object") return;
  type = type.trim();
  let m;
  if ((m = type.match(/^Array<([\s\S]+)>$/))) {
    if (Array.isArray(value)) value.forEach((v, i) => unknownFields(v, m[1], decl, `${where}[${i}]`, problems));
    return;
  }
  if ((m = type.match(/^\{\s*\[key: string\]:\s*([\s\S]+?);?\s*\}$/))) {
    for (const [k, v] of Object.entries(value)) unknownFields(v, m[1], decl, `${where}.${k}`, problems);
    return;
  }
  if (!/^\w+$/.test(type) || !decl.imports.has(type)) return;  // a scalar, a union, any
  const target = declaration(resolveImport(decl.file, decl.imports.get(type)));
  checkFields(value, target, where, problems);
}

function checkFields(value, decl, where, problems) {
  if (!decl.fields || Array.isArray(value)) return;
  for (const [k, v] of Object.entries(value)) {
    if (!decl.fields.has(k)) problems.push(`${where}.${k}: unknown field`);
    else unknownFields(v, decl.fields.get(k), decl, `${where}.${k}`, problems);
  }
}

// --- Schemas. ----------------------------------------------------------------------------------------

function modelPath(apiVersion, kind) {
  const group = apiVersion.includes("/") ? apiVersion : `v1`;
  return path.join(MODELS, group, kind);
}

async function validateObject(obj, where) {
  const problems = [];
  if (!obj || typeof obj.apiVersion !== "string" || typeof obj.kind !== "string") {
    return [`${where}: not a Kubernetes object (apiVersion and kind)`];
  }
  const base = modelPath(obj.apiVersion, obj.kind);
  if (!fs.existsSync(`${base}.js`)) return [`${where}: unknown kind ${obj.apiVersion} ${obj.kind}`];
  const model = (await import(pathToFileURL(`${base}.js`).href))[obj.kind];
  try {
    new model(obj).validate();
  } catch (e) {
    problems.push(`${where}: ${e.message.replace(/\s+/g, " ")}`);
  }
  checkFields(obj, declaration(`${base}.d.ts`), where, problems);
  return problems;
}

// --- Cross-object checks. ----------------------------------------------------------------------------

const WORKLOADS = new Set(["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"]);

function matches(selector, labels) {
  return Object.entries(selector || {}).every(([k, v]) => (labels || {})[k] === v);
}

function crossChecks(objects) {
  const problems = [];
  const key = (o) => `${o.metadata?.namespace ?? ""}/${o.kind}/${o.metadata?.name}`;
  const workloads = objects.filter((o) => WORKLOADS.has(o.kind));
  const services = new Set(objects.filter((o) => o.kind === "Service").map((o) => `${o.metadata?.namespace ?? ""}/${o.metadata?.name}`));
  for (const w of workloads) {
    const labels = w.spec?.template?.metadata?.labels;
    if (!matches(w.spec?.selector?.matchLabels, labels)) problems.push(`${key(w)}: selector does not match the pod template's labels`);
    if (w.kind === "StatefulSet" && !services.has(`${w.metadata?.namespace ?? ""}/${w.spec?.serviceName}`)) {
      problems.push(`${key(w)}: serviceName ${w.spec?.serviceName} is no Service here`);
    }
    const pod = w.spec?.template?.spec ?? {};
    for (const c of [...(pod.containers ?? []), ...(pod.initContainers ?? [])]) {
      const ports = new Set((c.ports ?? []).flatMap((p) => [p.containerPort, p.name]));
      for (const probe of ["startupProbe", "readinessProbe", "livenessProbe"]) {
        const p = c[probe];
        if (!p) continue;
        const port = p.grpc?.port ?? p.tcpSocket?.port ?? p.httpGet?.port;
        if (port !== undefined && !ports.has(port)) problems.push(`${key(w)}: ${c.name} ${probe} port ${port} is not a port of the container`);
      }
    }
  }
  for (const o of objects) {
    let selector = null;
    if (o.kind === "Service" && o.spec?.selector) selector = o.spec.selector;
    if (o.kind === "PodDisruptionBudget") selector = o.spec?.selector?.matchLabels;
    if (!selector) continue;
    const ns = o.metadata?.namespace ?? "";
    if (!workloads.some((w) => (w.metadata?.namespace ?? "") === ns && matches(selector, w.spec?.template?.metadata?.labels))) {
      problems.push(`${key(o)}: its selector matches no workload's pods`);
    }
  }
  return problems;
}

// --- Main. -------------------------------------------------------------------------------------------

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: validate-k8s.mjs FILE.yaml|- ...");
  process.exit(2);
}
const problems = [];
let count = 0;
const byFile = [];
for (const file of files) {
  const text = fs.readFileSync(file === "-" ? 0 : file, "utf8");
  const objects = [];
  for (const [i, doc] of YAML.parseAllDocuments(text, { uniqueKeys: true }).entries()) {
    const where = `${file === "-" ? "stdin" : file}#${i}`;
    if (doc.errors.length) { problems.push(`${where}: ${doc.errors[0].message}`); continue; }
    const obj = doc.toJS();
    if (obj === null) continue;
    const name = `${where} ${obj.kind ?? "?"}/${obj.metadata?.name ?? "?"}`;
    problems.push(...(await validateObject(obj, name)));
    objects.push(obj);
    count++;
  }
  byFile.push(objects);
}
for (const objects of byFile) problems.push(...crossChecks(objects));
for (const p of problems) console.log(`FAIL: ${p}`);
const version = JSON.parse(fs.readFileSync(path.join(MODELS, "package.json"), "utf8")).version;
console.log(`${problems.length ? "failed" : "ok"}: ${count} objects checked against kubernetes-models ${version}, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
