// tsx test/deploy/k8s-check.ts: checks deploy/kubernetes/ (and its migrate/ folder) without a cluster.
//  1. each manifest against the Kubernetes schemas (kubernetes-models' validate(): types,
//     required fields, enums, formats);
//  2. no unknown fields, which validate() lets through: TypeScript checks each manifest
//     as an object literal of the same models' interfaces (excess-property checks);
//  3. each kustomization.yaml lists every manifest of its folder but the example Secret, and the
//     migration Job is applied on its own, before the rollout (migrate/);
//  4. the settings that must agree with each other and with the app's drain;
//  5. `kubectl kustomize` renders each, when kubectl is installed.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { HorizontalPodAutoscaler, type IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { Job, type IJob } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget, type IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { Secret, type ISecret } from 'kubernetes-models/v1/Secret';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { parseCommandLine } from '../../scripts/lib/cli.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const USAGE = `Usage: npx tsx test/deploy/k8s-check.ts [folder]   (a part of npm run deploy:check)

Checks the Kubernetes manifests in deploy/kubernetes/ (or in [folder], a changed copy) without
a cluster: each against the Kubernetes schemas, no unknown fields, the kustomizations, and the
settings that must agree with each other and with the app's drain; kubectl kustomize renders
them when kubectl is installed.`;
const { positionals } = parseCommandLine(USAGE, { positionals: 1 });
const dir = path.resolve(positionals[0] ?? path.join(root, 'deploy', 'kubernetes'));

/** The kinds used here: the model that validates each, and its module and interface for TypeScript. */
const MODELS: Record<string, { Model: new (data: never) => { validate(): void }; module: string; type: string }> = {
  'apps/v1/Deployment': { Model: Deployment, module: 'kubernetes-models/apps/v1/Deployment', type: 'IDeployment' },
  'v1/Service': { Model: Service, module: 'kubernetes-models/v1/Service', type: 'IService' },
  'autoscaling/v2/HorizontalPodAutoscaler': { Model: HorizontalPodAutoscaler, module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler', type: 'IHorizontalPodAutoscaler' },
  'policy/v1/PodDisruptionBudget': { Model: PodDisruptionBudget, module: 'kubernetes-models/policy/v1/PodDisruptionBudget', type: 'IPodDisruptionBudget' },
  'batch/v1/Job': { Model: Job, module: 'kubernetes-models/batch/v1/Job', type: 'IJob' },
  'v1/Secret': { Model: Secret, module: 'kubernetes-models/v1/Secret', type: 'ISecret' },
};

let passed = 0;
function rule(ok: boolean, text: string, detail = ''): void {
  if (!ok) {
    console.error(`  FAIL  ${text}${detail ? `\n${detail}` : ''}`);
    process.exit(1);
  }
  passed++;
  console.log(`  ok    ${text}`);
}

interface Manifest {
  /** Its path from the checked folder: `deployment.yaml`, `migrate/migration-job.yaml`. */
  file: string;
  key: string;
  body: { apiVersion: string; kind: string; metadata?: { name?: string } } & Record<string, unknown>;
}
interface Kustomization {
  resources?: string[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

// --- Read ------------------------------------------------------------------------------
console.log(`=== k8s-check: ${path.relative(root, dir) || dir} ===`);
// The folder and its subfolders (migrate/): each with a kustomization of its own.
const folders = ['', ...readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort()];
const files = folders.flatMap((folder) =>
  readdirSync(path.join(dir, folder)).filter((f) => f.endsWith('.yaml')).sort().map((f) => path.posix.join(folder, f)),
);
const manifests: Manifest[] = [];
const kustomizations = new Map<string, Kustomization>();
for (const file of files) {
  for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
    if (doc.errors.length > 0) rule(false, `${file} is YAML`, doc.errors.map(String).join('\n'));
    const body = doc.toJS() as Manifest['body'] | null;
    if (body === null) continue;
    if (path.basename(file) === 'kustomization.yaml') kustomizations.set(path.dirname(file).replace(/^\.$/, ''), body as Kustomization);
    else manifests.push({ file, key: `${body.apiVersion}/${body.kind}`, body });
  }
}

// --- 1. Schemas --------------------------------------------------------------------------
for (const m of manifests) {
  const model = MODELS[m.key];
  const text = `${m.file}: ${m.key} ${m.body.metadata?.name} matches the Kubernetes schema`;
  if (!model) rule(false, text, '  a kind this check does not know: add it to MODELS');
  try {
    new model!.Model(m.body as never).validate();
    rule(true, text);
  } catch (err) {
    rule(false, text, `  ${(err as Error).message}`);
  }
}

// --- 2. Unknown fields -------------------------------------------------------------------
// A virtual module in the repository (so kubernetes-models resolves from its node_modules):
// `export const m0: IDeployment = {…};` and so on; an unknown field is an excess property.
const virtual = path.join(root, '__k8s_manifests__.ts');
const starts: number[] = [];
let source = '';
manifests.forEach((m, i) => {
  const { module, type } = MODELS[m.key]!;
  starts.push(source.split('\n').length);
  source += `import type { ${type} as T${i} } from '${module}';\nexport const m${i}: T${i} = ${JSON.stringify(m.body, null, 2)};\n`;
});
const options: ts.CompilerOptions = {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  types: [],
};
const host = ts.createCompilerHost(options);
const { getSourceFile, fileExists, readFile } = host;
host.getSourceFile = (name, version, ...rest) => (name === virtual ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, ...rest));
host.fileExists = (name) => name === virtual || fileExists(name);
host.readFile = (name) => (name === virtual ? source : readFile(name));
const diagnostics = ts.getPreEmitDiagnostics(ts.createProgram([virtual], options, host));
const problems = diagnostics.map((d) => {
  const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line + 1 : 0;
  const index = starts.findLastIndex((start) => start <= line);
  const where = index >= 0 ? `${manifests[index]!.file} (${manifests[index]!.body.kind})` : 'check';
  return `    ${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n      ')}`;
});
rule(problems.length === 0, `no unknown or mistyped fields in ${manifests.length} manifests (TypeScript against kubernetes-models' interfaces)`, problems.join('\n'));

// --- 3. Kustomizations -------------------------------------------------------------------
const listedIn = (folder: string) => (kustomizations.get(folder)?.resources ?? []).map((f) => path.posix.join(folder, f)).sort();
for (const folder of folders) {
  const name = path.posix.join(folder, 'kustomization.yaml');
  rule(kustomizations.has(folder), `${name} exists`);
  const applied = files.filter((f) => path.dirname(f).replace(/^\.$/, '') === folder && path.basename(f) !== 'kustomization.yaml' && !f.endsWith('.example.yaml'));
  const listed = listedIn(folder);
  rule(JSON.stringify(listed) === JSON.stringify(applied), `${name} lists ${applied.join(', ')}`, `  it lists: ${listed.join(', ')}`);
  rule(!listed.some((f) => f.endsWith('.example.yaml')), `the example Secret is not applied by ${name} (it would overwrite the real one)`);
}
const images = (folder: string) => JSON.stringify(kustomizations.get(folder)?.images ?? []);
rule(folders.every((folder) => images(folder) === images('')), `every kustomization sets the same image (${images('')})`);

// --- 4. Settings that must agree ---------------------------------------------------------
const one = <T>(kind: string) => {
  const found = manifests.filter((m) => m.body.kind === kind && !m.file.endsWith('.example.yaml'));
  rule(found.length === 1, `one ${kind}`);
  return found[0]!.body as unknown as T;
};
const deployment = one<IDeployment>('Deployment');
const service = one<IService>('Service');
const hpa = one<IHorizontalPodAutoscaler>('HorizontalPodAutoscaler');
const pdb = one<IPodDisruptionBudget>('PodDisruptionBudget');
const job = one<IJob>('Job');
const secret = manifests.find((m) => m.body.kind === 'Secret')?.body as unknown as ISecret | undefined;

const pod = deployment.spec!.template.spec!;
const podLabels = deployment.spec!.template.metadata?.labels ?? {};
const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
  Object.keys(selector ?? {}).length > 0 && Object.entries(selector!).every(([k, v]) => labels[k] === v);
rule(selects(deployment.spec!.selector.matchLabels, podLabels), 'the Deployment selects its own pods');
rule(selects(service.spec!.selector, podLabels), 'the Service selects the API pods');
rule(!selects(service.spec!.selector, job.spec!.template.metadata?.labels ?? {}), 'the Service does not select the migration pod');
rule(selects(pdb.spec!.selector?.matchLabels, podLabels), 'the PodDisruptionBudget covers the API pods');
const target = hpa.spec!.scaleTargetRef;
rule(target.kind === 'Deployment' && target.name === deployment.metadata?.name, `the HPA scales Deployment ${target.name}`);
const minReplicas = hpa.spec!.minReplicas ?? 1;
rule(minReplicas >= 2 && Number(pdb.spec!.maxUnavailable) < minReplicas, `HPA minReplicas ${minReplicas} > PDB maxUnavailable ${pdb.spec!.maxUnavailable}: evictions leave pods serving`);

const api = pod.containers[0]!;
const env = (name: string) => api.env?.find((e) => e.name === name);
const portNames = (api.ports ?? []).map((p) => p.name);
rule(String(service.spec!.ports?.[0]?.targetPort) === 'http' && portNames.includes('http'), "the Service's targetPort is the container's http port");
rule(api.readinessProbe?.httpGet?.path === '/readyz' && portNames.includes(String(api.readinessProbe.httpGet.port)), 'readinessProbe: GET /readyz on the http port');
rule(api.livenessProbe?.httpGet?.path === '/healthz' && portNames.includes(String(api.livenessProbe.httpGet.port)), 'livenessProbe: GET /healthz on the http port');

const drain = Number(env('SHUTDOWN_DRAIN_SECONDS')?.value ?? 5);
const grace = Number(env('SHUTDOWN_GRACE_SECONDS')?.value ?? 10);
const preStop = api.lifecycle?.preStop;
const preStopSeconds = preStop?.sleep?.seconds ?? Number(preStop?.exec?.command?.join(' ').match(/^(?:\S*\/)?sleep (\d+)$/)?.[1] ?? 0);
const termination = pod.terminationGracePeriodSeconds ?? 30;
rule(preStopSeconds > 0, `preStop sleeps ${preStopSeconds} s before SIGTERM`);
rule(termination >= preStopSeconds + drain + grace + 3, `terminationGracePeriodSeconds ${termination} >= preStop ${preStopSeconds} + drain ${drain} + grace ${grace} + 3`);
const readiness = api.readinessProbe!;
const unready = (readiness.periodSeconds ?? 10) * (readiness.failureThreshold ?? 3);
rule(unready <= drain, `a draining pod fails readiness within ${unready} s (period x failureThreshold), within its ${drain} s drain`);

const uid = api.securityContext?.runAsUser ?? pod.securityContext?.runAsUser;
rule((api.securityContext?.runAsNonRoot ?? pod.securityContext?.runAsNonRoot) === true && typeof uid === 'number' && uid > 0, `runs as non-root user ${uid}`);
if (api.securityContext?.readOnlyRootFilesystem) {
  const mounted = (api.volumeMounts ?? []).map((v) => v.mountPath);
  const dataDir = env('DATA_DIR')?.value ?? '/app/data';
  rule(mounted.includes(dataDir) && mounted.includes('/tmp'), `read-only root filesystem, with volumes on ${dataDir} (DATA_DIR) and /tmp`);
}

const pool = Number(env('DB_POOL_MAX')?.value ?? 10);
const maxReplicas = hpa.spec!.maxReplicas;
// 97: Postgres's default max_connections (100) less its 3 reserved; the migration CLI holds 2.
rule(maxReplicas * pool + 2 <= 97, `at most ${maxReplicas} pods x DB_POOL_MAX ${pool} + 2 = ${maxReplicas * pool + 2} Postgres connections (default limit 97 usable)`);

const refs = [...(api.env ?? []), ...(job.spec!.template.spec!.containers[0]!.env ?? [])];
for (const name of ['DATABASE_URL', 'REDIS_URL']) {
  const ref = env(name)?.valueFrom?.secretKeyRef;
  rule(Boolean(ref) && env(name)?.value === undefined, `${name} comes from Secret ${ref?.name}/${ref?.key}, not from the manifest`);
}
rule(
  Boolean(secret) && refs.every((e) => !e.valueFrom?.secretKeyRef || (e.valueFrom.secretKeyRef.name === secret!.metadata?.name && e.valueFrom.secretKeyRef.key in (secret!.stringData ?? {}))),
  'every secretKeyRef names a key of secret.example.yaml',
);
rule(Object.values(secret?.stringData ?? {}).every((v) => /\.example\.|CHANGE-ME/.test(v)), 'secret.example.yaml holds placeholders only');

const migrate = job.spec!.template.spec!.containers[0]!;
const script = /dist\/(scripts\/\S+)\.js/.exec((migrate.command ?? []).join(' '))?.[1];
rule(Boolean(script && existsSync(path.join(root, `${script}.ts`))), `the Job runs ${migrate.command?.join(' ')} (built from ${script}.ts)`);
rule(migrate.image === api.image, `the Job and the Deployment run one image (${api.image})`);
// Ordered before the rollout: applied and waited for on its own, never with the Deployment.
const jobFile = manifests.find((m) => m.body === (job as unknown))!.file;
const deploymentFile = manifests.find((m) => m.body === (deployment as unknown))!.file;
const jobFolder = path.dirname(jobFile).replace(/^\.$/, '');
rule(
  jobFolder !== '' && !listedIn('').includes(jobFile) && listedIn(jobFolder).includes(jobFile) && !listedIn(jobFolder).includes(deploymentFile),
  `the migration Job is applied on its own (kubectl apply -k ${jobFolder || '?'}), not with the Deployment, so it can complete before the rollout`,
);

// Prometheus scrapes every pod (kubernetes_sd and the prometheus.io annotations) on its metrics listener.
const annotations = deployment.spec!.template.metadata?.annotations ?? {};
const metricsPort = api.ports?.find((p) => p.name === 'metrics')?.containerPort;
rule(
  annotations['prometheus.io/scrape'] === 'true' && annotations['prometheus.io/path'] === '/metrics' && metricsPort !== undefined && annotations['prometheus.io/port'] === String(metricsPort),
  `pods are annotated for Prometheus: /metrics on the container's metrics port ${metricsPort}`,
);
rule(env('METRICS_PORT')?.value === String(metricsPort) && env('METRICS_HOST')?.value === '0.0.0.0', `METRICS_PORT is the metrics port (${metricsPort}) and METRICS_HOST 0.0.0.0, so Prometheus reaches it`);
rule(String(service.spec!.ports?.map((p) => p.targetPort)) === 'http', 'the Service exposes the http port only, not /metrics');
if (preStop?.sleep) {
  const readme = existsSync(path.join(dir, 'README.md')) ? readFileSync(path.join(dir, 'README.md'), 'utf8') : '';
  rule(/Kubernetes 1\.\d+ or later/.test(readme), 'README.md states the minimum Kubernetes version (preStop.sleep: 1.30)');
}

// --- 5. kubectl kustomize ----------------------------------------------------------------
let kubectl = '';
try {
  kubectl = execFileSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).split('\n')[0]!;
} catch {
  console.log('  skip  kubectl kustomize: kubectl is not installed (the checks above do not need it)');
}
for (const folder of kubectl ? folders : []) {
  const where = path.join(dir, folder);
  const rendered = parseAllDocuments(execFileSync('kubectl', ['kustomize', where], { encoding: 'utf8' })).map((d) => d.toJS() as Manifest['body']);
  const listed = listedIn(folder);
  const expected = manifests.filter((m) => listed.includes(m.file)).length;
  rule(rendered.length === expected, `kubectl kustomize ${path.relative(root, where)} renders ${rendered.length} resources (${kubectl})`);
  for (const image of kustomizations.get(folder)?.images ?? []) {
    const want = `${image.newName ?? image.name}:${image.newTag}`;
    const images = rendered.flatMap((r) => ((r as unknown as IDeployment).spec?.template?.spec?.containers ?? []).map((c) => c.image));
    rule(images.length > 0 && images.every((i) => i === want), `kustomize sets the image to ${want}`);
  }
}

console.log(`k8s-check: ${passed} passed, 0 failed`);
