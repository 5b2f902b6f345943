/**
 * deploy/openshift/vetobench-run-job.yaml: the Indexed Job that runs `vetobench run --shard I/N`
 * (docs/scale-out.md). Structural checks in the style of manifests.test.ts — no cluster: the Job is
 * Indexed with N = SHARDS, every pod runs its own proxy and one shard, writes to the shared PVC, reads
 * its settings from the ConfigMap (which load with the real decoders) and its API key from
 * vllm-secrets, and P pods fit the namespace quota next to the two vLLM pods.
 */
import { Effect } from "effect"
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import * as YAML from "yaml"
import { loadExperiment } from "../../src/config/experiment.js"
import { loadSettings } from "../../src/config/settings.js"

import { arr, at, cpuCores, GI, memoryBytes, num, obj, type Obj, objs, str } from "../support/k8s.js"

const load = (file: string) => {
  const text = readFileSync(file, "utf8")
  const docs = YAML.parseAllDocuments(text).flatMap((d, i): Array<Obj> => {
    if (d.errors.length > 0) throw new Error(`${file} document ${i}: ${d.errors.map((e) => e.message).join("; ")}`)
    const js: unknown = d.toJS()
    return js === null ? [] : [obj(js, `${file} document ${i}`)]
  })
  return { file, text, docs }
}

const JOB_FILE = load("deploy/openshift/vetobench-run-job.yaml")
const ofKind = (docs: ReadonlyArray<Obj>, kind: string) => docs.filter((d) => d.kind === kind)
const one = (kind: string): Obj => {
  const found = ofKind(JOB_FILE.docs, kind)
  expect(found, `exactly one ${kind}`).toHaveLength(1)
  return found[0]!
}
const nameOf = (d: Obj) => str(at(d, "metadata.name"), "metadata.name")
const job = one("Job")
const podSpec = obj(at(job, "spec.template.spec"), "pod spec")
const containers = objs(podSpec.containers, "containers")
const container = containers[0]!
const env = new Map(objs(container.env ?? [], "env").map((e) => [str(e.name, "env name"), e] as const))
const script = [...arr(container.command ?? [], "command"), ...arr(container.args ?? [], "args")].map((x) => str(x, "command")).join("\n")
const configMap = one("ConfigMap")
const data = obj(configMap.data, "ConfigMap data")

describe("vetobench-run-job.yaml", () => {
  it("holds a ConfigMap, an Indexed Job and a PersistentVolumeClaim, all in namespace vetobench", () => {
    expect(JOB_FILE.docs.map((d) => String(d.kind)).sort()).toEqual(["ConfigMap", "Job", "PersistentVolumeClaim"])
    for (const d of JOB_FILE.docs) {
      expect(typeof d.apiVersion).toBe("string")
      expect(nameOf(d)).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/)
      expect(at(d, "metadata.namespace")).toBe("vetobench")
    }
    expect(job.apiVersion).toBe("batch/v1")
  })

  it("is an Indexed Job: completions N = SHARDS, parallelism P <= N, retries per index, restartPolicy Never", () => {
    expect(at(job, "spec.completionMode")).toBe("Indexed")
    const n = num(at(job, "spec.completions"), "completions")
    const p = num(at(job, "spec.parallelism"), "parallelism")
    expect(n).toBeGreaterThanOrEqual(1)
    expect(p).toBeGreaterThanOrEqual(1)
    expect(p).toBeLessThanOrEqual(n)
    expect(num(at(job, "spec.backoffLimitPerIndex"), "backoffLimitPerIndex")).toBeGreaterThanOrEqual(1)
    expect(at(job, "spec.podReplacementPolicy")).toBe("Failed")
    expect(podSpec.restartPolicy).toBe("Never")
    expect(podSpec.enableServiceLinks).toBe(false)
    expect(str(env.get("SHARDS")?.value, "SHARDS")).toBe(String(n))
    expect(obj(at(job, "spec.template.metadata.labels"), "labels")).toMatchObject({ "app.kubernetes.io/name": "vetobench-run" })
  })

  it("runs the proxy in the background, then one shard: --shard $JOB_COMPLETION_INDEX/$SHARDS, keeping its exit status", () => {
    expect(containers).toHaveLength(1)
    const lines = script.split("\n").map((l) => l.trim()).filter((l) => l !== "")
    const proxyAt = lines.findIndex((l) => /^vetobench proxy -c configs\/vetobench\.yaml &$/.test(l))
    const runAt = lines.findIndex((l) => l.startsWith("vetobench run "))
    expect(proxyAt).toBeGreaterThanOrEqual(0)
    expect(runAt).toBeGreaterThan(proxyAt)
    expect(lines[runAt]).toContain("-e configs/experiment.yaml")
    expect(lines[runAt]).toContain("--bench asbench")
    expect(lines[runAt]).toContain('--shard "${JOB_COMPLETION_INDEX}/${SHARDS}"')
    expect(script).toContain("http://127.0.0.1:8080/healthz")
    expect(lines.at(-1)).toBe('exit "$code"')
  })

  it("gives the container cpu and memory requests and limits (requests <= limits), no GPU", () => {
    const requests = obj(at(container, "resources.requests"), "requests")
    const limits = obj(at(container, "resources.limits"), "limits")
    expect(cpuCores(requests.cpu)).toBeLessThanOrEqual(cpuCores(limits.cpu))
    expect(memoryBytes(requests.memory)).toBeLessThanOrEqual(memoryBytes(limits.memory))
    expect(limits["nvidia.com/gpu"]).toBeUndefined()
  })

  it("takes the API key from Secret vllm-secrets", () => {
    expect(at(env.get("VLLM_API_KEY"), "valueFrom.secretKeyRef")).toEqual({ name: "vllm-secrets", key: "VLLM_API_KEY" })
  })

  it("mounts the shared runs PVC (ReadWriteMany) at <workingDir>/runs and the ConfigMap at <workingDir>/configs", () => {
    const workdir = str(container.workingDir, "workingDir")
    const volumes = new Map(objs(podSpec.volumes, "volumes").map((v) => [str(v.name, "volume name"), v] as const))
    const mounts = new Map(objs(container.volumeMounts, "volumeMounts").map((m) => [str(m.mountPath, "mountPath"), m] as const))
    const runs = volumes.get(str(mounts.get(`${workdir}/runs`)?.name, "runs mount"))
    const pvc = one("PersistentVolumeClaim")
    expect(at(runs, "persistentVolumeClaim.claimName")).toBe(nameOf(pvc))
    expect(at(pvc, "spec.accessModes")).toEqual(["ReadWriteMany"])
    expect(memoryBytes(at(pvc, "spec.resources.requests.storage"))).toBeGreaterThanOrEqual(GI)
    const config = volumes.get(str(mounts.get(`${workdir}/configs`)?.name, "configs mount"))
    expect(at(config, "configMap.name")).toBe(nameOf(configMap))
    expect(mounts.get(`${workdir}/configs`)?.readOnly).toBe(true)
  })

  it("the ConfigMap's settings and experiment load with vetobench's decoders and point at the pod's proxy and the in-cluster Services", async () => {
    const root = mkdtempSync(path.join(tmpdir(), "vetobench-job-"))
    mkdirSync(path.join(root, "configs"))
    for (const [key, value] of Object.entries(data)) writeFileSync(path.join(root, "configs", key), str(value, key))
    const envVars = { VLLM_API_KEY: "secret" }
    const settings = await Effect.runPromise(loadSettings(path.join(root, "configs", "vetobench.yaml"), envVars))
    const exp = await Effect.runPromise(loadExperiment(path.join(root, "configs", "experiment.yaml"), settings, envVars))
    expect(settings.proxy.audit_dir).toBe(path.join(root, "runs", "audit"))
    expect(exp.run_dir.startsWith(path.join(root, "runs") + path.sep)).toBe(true)
    expect(exp.proxy_url).toBe(`http://127.0.0.1:${settings.proxy.port}/v1`)
    expect(exp.agent_safetybench.enabled).toBe(true)
    expect(exp.asb.enabled).toBe(false)
    for (const u of settings.upstreams) expect(u.base_url).toMatch(/^http:\/\/vllm-(agent|small)\.vetobench\.svc:800[0-4]\/v1$/)
  })

  it("P pods fit the namespace quota next to vllm-agent and vllm-small, as the comment states", () => {
    const vllm = ["deploy/openshift/vllm-agent.yaml", "deploy/openshift/vllm-small.yaml"].flatMap((f) =>
      ofKind(load(f).docs, "Deployment").flatMap((d) => objs(at(d, "spec.template.spec.containers"), "containers"))
    )
    const p = num(at(job, "spec.parallelism"), "parallelism")
    const total = (q: string, unit: (x: unknown) => number) =>
      vllm.reduce((acc, c) => acc + unit(at(c, q)), 0) + p * containers.reduce((acc, c) => acc + unit(at(c, q)), 0)
    const t = {
      memoryRequests: total("resources.requests.memory", memoryBytes) / GI,
      memoryLimits: total("resources.limits.memory", memoryBytes) / GI,
      cpuRequests: total("resources.requests.cpu", cpuCores),
      cpuLimits: total("resources.limits.cpu", cpuCores)
    }
    expect(t.memoryRequests).toBeLessThanOrEqual(96)
    expect(t.memoryLimits).toBeLessThanOrEqual(192)
    expect(t.cpuRequests).toBeLessThanOrEqual(24)
    expect(t.cpuLimits).toBeLessThanOrEqual(48)
    expect(JOB_FILE.text).toContain(`= ${t.memoryRequests}Gi <= 96Gi`)
    expect(JOB_FILE.text).toContain(`= ${t.memoryLimits}Gi <= 192Gi`)
    expect(JOB_FILE.text).toContain(`= ${t.cpuRequests} <= 24`)
    expect(JOB_FILE.text).toContain(`= ${t.cpuLimits} <= 48`)
    expect(JOB_FILE.text).toContain(`${p} × `)
  })
})
