/**
 * deploy/openshift/*.yaml: every manifest parses and passes a structural check, the two pods fit
 * the namespace quota of docs/cluster-request.md, and the supervisor embedded in vllm-small.yaml
 * is scripts/vllm-supervisor.py byte for byte. No cluster and no schema download: the checks are
 * the ones a wrong manifest has actually failed on (ports, names, limits, probes).
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import * as YAML from "yaml"

import { arr, at, cpuCores, GI, memoryBytes, num, obj, type Obj, objs, str } from "../support/k8s.js"

interface Manifest {
  readonly file: string
  readonly text: string
  readonly docs: ReadonlyArray<Obj>
}

const load = (file: string): Manifest => {
  const text = readFileSync(file, "utf8")
  const parsed = YAML.parseAllDocuments(text)
  if (!Array.isArray(parsed)) throw new Error(`${file}: no YAML documents`)
  const docs: Array<Obj> = []
  parsed.forEach((d, i) => {
    if (d.errors.length > 0) throw new Error(`${file} document ${i}: ${d.errors.map((e) => e.message).join("; ")}`)
    const js: unknown = d.toJS()
    if (js !== null) docs.push(obj(js, `${file} document ${i}`))
  })
  return { file, text, docs }
}

const AGENT = load("deploy/openshift/vllm-agent.yaml")
const SMALL = load("deploy/openshift/vllm-small.yaml")
const MANIFESTS = [AGENT, SMALL]

const ofKind = (m: Manifest, kind: string) => m.docs.filter((d) => d.kind === kind)
const nameOf = (d: Obj) => str(at(d, "metadata.name"), "metadata.name")
const one = (m: Manifest, kind: string): Obj => {
  const found = ofKind(m, kind)
  expect(found, `${m.file}: exactly one ${kind}`).toHaveLength(1)
  return found[0]!
}
const podSpec = (deployment: Obj) => obj(at(deployment, "spec.template.spec"), "spec.template.spec")
const containersOf = (deployment: Obj): ReadonlyArray<Obj> => {
  const spec = podSpec(deployment)
  return [...objs(spec.containers, "containers"), ...(spec.initContainers === undefined ? [] : objs(spec.initContainers, "initContainers"))]
}
const containerPorts = (deployment: Obj) =>
  containersOf(deployment).flatMap((c) => (c.ports === undefined ? [] : objs(c.ports, "ports"))).map((p) => ({
    name: p.name === undefined ? undefined : str(p.name, "port name"),
    port: num(p.containerPort, "containerPort")
  }))
/** The container port a Service targetPort (name or number) selects, if any. */
const resolveTarget = (deployment: Obj, target: unknown) =>
  containerPorts(deployment).find((p) => (typeof target === "number" ? p.port === target : p.name === target))
/** nvidia.com/gpu of a container's requests or limits (0 when absent). */
const gpusOf = (container: Obj, which: "requests" | "limits"): number => {
  const n = obj(at(container, `resources.${which}`), which)["nvidia.com/gpu"]
  return n === undefined ? 0 : num(n, "nvidia.com/gpu")
}
const envOf = (container: Obj) => new Map(objs(container.env ?? [], "env").map((e) => [str(e.name, "env name"), e] as const))
const commandOf = (container: Obj) =>
  [...arr(container.command ?? [], "command"), ...arr(container.args ?? [], "args")].map((x) => str(x, "command"))

/** IANA_SVC_NAME, the rule for port names (max 15, lower-case alphanumerics and single hyphens, a letter). */
const validPortName = (n: string) => n.length <= 15 && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(n) && /[a-z]/.test(n) && !n.includes("--")
const validDnsLabel = (n: string) => n.length <= 63 && /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(n)

describe.each(MANIFESTS.map((m) => [m.file, m] as const))("%s", (file, m) => {
  it("parses as multi-document YAML; every object is named and in namespace vetobench", () => {
    expect(m.docs.length).toBeGreaterThan(0)
    for (const d of m.docs) {
      expect(typeof d.apiVersion, file).toBe("string")
      expect(typeof d.kind, file).toBe("string")
      expect(validDnsLabel(nameOf(d)), `name ${nameOf(d)}`).toBe(true)
      expect(at(d, "metadata.namespace"), `${d.kind} ${nameOf(d)}`).toBe("vetobench")
    }
  })

  it("has a Recreate Deployment with enableServiceLinks false, tolerating the GPU taint", () => {
    const dep = one(m, "Deployment")
    expect(at(dep, "spec.replicas")).toBe(1)
    expect(at(dep, "spec.strategy.type")).toBe("Recreate")
    expect(podSpec(dep).enableServiceLinks).toBe(false)
    const labels = obj(at(dep, "spec.template.metadata.labels"), "template labels")
    expect(labels).toMatchObject(obj(at(dep, "spec.selector.matchLabels"), "matchLabels"))
    expect(objs(podSpec(dep).tolerations, "tolerations").some((t) => t.key === "nvidia.com/gpu")).toBe(true)
  })

  it("gives every container cpu and memory requests and limits (requests <= limits) and one GPU", () => {
    const dep = one(m, "Deployment")
    const containers = containersOf(dep)
    expect(containers.length).toBeGreaterThan(0)
    for (const c of containers) {
      const where = `container ${String(c.name)}`
      const requests = obj(at(c, "resources.requests"), `${where} requests`)
      const limits = obj(at(c, "resources.limits"), `${where} limits`)
      expect(cpuCores(requests.cpu), where).toBeLessThanOrEqual(cpuCores(limits.cpu))
      expect(memoryBytes(requests.memory), where).toBeLessThanOrEqual(memoryBytes(limits.memory))
    }
    expect(containers.map((c) => [gpusOf(c, "requests"), gpusOf(c, "limits")])).toContainEqual([1, 1])
  })

  it("has startup and readiness probes, with a startup budget long enough for a model download", () => {
    const dep = one(m, "Deployment")
    for (const c of objs(podSpec(dep).containers, "containers")) {
      const startup = obj(c.startupProbe, "startupProbe")
      obj(c.readinessProbe, "readinessProbe")
      const budget = num(startup.periodSeconds, "periodSeconds") * num(startup.failureThreshold, "failureThreshold")
      expect(budget).toBeGreaterThanOrEqual(3600)
      expect(num(at(dep, "spec.progressDeadlineSeconds"), "progressDeadlineSeconds")).toBeGreaterThanOrEqual(budget)
    }
  })

  it("mounts /dev/shm from a sized memory emptyDir and the model cache PVC under HF_HOME", () => {
    const dep = one(m, "Deployment")
    const volumes = new Map(objs(podSpec(dep).volumes, "volumes").map((v) => [str(v.name, "volume name"), v] as const))
    const pvcs = ofKind(m, "PersistentVolumeClaim").map(nameOf)
    for (const c of objs(podSpec(dep).containers, "containers")) {
      const mounts = objs(c.volumeMounts, "volumeMounts")
      const shm = mounts.find((x) => x.mountPath === "/dev/shm")
      const shmVolume = obj(volumes.get(str(shm?.name, "/dev/shm mount")), "/dev/shm volume")
      expect(at(shmVolume, "emptyDir.medium")).toBe("Memory")
      expect(memoryBytes(at(shmVolume, "emptyDir.sizeLimit"))).toBeLessThanOrEqual(memoryBytes(at(c, "resources.limits.memory")))

      const hfHome = str(envOf(c).get("HF_HOME")?.value, "HF_HOME")
      const cache = mounts.find((x) => hfHome === x.mountPath || hfHome.startsWith(`${str(x.mountPath, "mountPath")}/`))
      const claim = at(volumes.get(str(cache?.name, `mount holding HF_HOME ${hfHome}`)), "persistentVolumeClaim.claimName")
      expect(pvcs).toContain(claim)
    }
    for (const pvc of ofKind(m, "PersistentVolumeClaim")) {
      expect(memoryBytes(at(pvc, "spec.resources.requests.storage"))).toBeGreaterThanOrEqual(50 * GI)
    }
  })

  it("takes the API key (and the optional HF token) from Secret vllm-secrets", () => {
    const c = objs(podSpec(one(m, "Deployment")).containers, "containers")[0]!
    const env = envOf(c)
    expect(at(env.get("VLLM_API_KEY"), "valueFrom.secretKeyRef")).toEqual({ name: "vllm-secrets", key: "VLLM_API_KEY" })
    expect(at(env.get("HF_TOKEN"), "valueFrom.secretKeyRef")).toEqual({ name: "vllm-secrets", key: "HF_TOKEN", optional: true })
  })

  it("wires ports: valid names, Service targetPorts are container ports, Routes target Service ports", () => {
    const dep = one(m, "Deployment")
    for (const p of containerPorts(dep)) expect(validPortName(p.name ?? ""), `port name ${p.name}`).toBe(true)
    const service = one(m, "Service")
    expect(obj(at(service, "spec.selector"), "selector")).toEqual(obj(at(dep, "spec.selector.matchLabels"), "matchLabels"))
    const servicePorts = objs(at(service, "spec.ports"), "service ports")
    for (const sp of servicePorts) {
      expect(validPortName(str(sp.name, "service port name"))).toBe(true)
      expect(resolveTarget(dep, sp.targetPort), `Service targetPort ${String(sp.targetPort)}`).toBeDefined()
    }
    const routes = ofKind(m, "Route")
    expect(routes.length).toBeGreaterThan(0)
    for (const route of routes) {
      const where = `Route ${nameOf(route)}`
      expect(at(route, "spec.to"), where).toMatchObject({ kind: "Service", name: nameOf(service) })
      const target = at(route, "spec.port.targetPort")
      const sp = servicePorts.find((p) => (typeof target === "number" ? resolveTarget(dep, p.targetPort)?.port === target : p.name === target))
      expect(sp, `${where} targetPort ${String(target)}`).toBeDefined()
      expect(at(route, "spec.tls.termination"), where).toBe("edge")
      expect(at(route, "metadata.annotations")).toMatchObject({ "haproxy.router.openshift.io/timeout": "15m" })
      expect(validDnsLabel(`${nameOf(route)}-vetobench`), `${where}: default host label`).toBe(true)
    }
    expect(new Set(routes.map((r) => at(r, "spec.port.targetPort"))).size, "one Route per port").toBe(routes.length)
  })
})

describe("the namespace quota (docs/cluster-request.md)", () => {
  const containers = MANIFESTS.flatMap((m) => ofKind(m, "Deployment").flatMap(containersOf))
  const sum = (f: (c: Obj) => number) => containers.reduce((acc, c) => acc + f(c), 0)
  const totals = {
    memoryRequests: sum((c) => memoryBytes(at(c, "resources.requests.memory"))),
    memoryLimits: sum((c) => memoryBytes(at(c, "resources.limits.memory"))),
    cpuRequests: sum((c) => cpuCores(at(c, "resources.requests.cpu"))),
    cpuLimits: sum((c) => cpuCores(at(c, "resources.limits.cpu"))),
    gpus: sum((c) => gpusOf(c, "limits"))
  }

  it("both pods together fit: memory requests <= 96Gi, limits <= 192Gi, cpu 24/48, 2 GPUs", () => {
    expect(totals.memoryRequests).toBeLessThanOrEqual(96 * GI)
    expect(totals.memoryLimits).toBeLessThanOrEqual(192 * GI)
    expect(totals.cpuRequests).toBeLessThanOrEqual(24)
    expect(totals.cpuLimits).toBeLessThanOrEqual(48)
    expect(totals.gpus).toBe(2)
  })

  it("the arithmetic stated in the comments is the manifests' own", () => {
    for (const m of MANIFESTS) {
      expect(m.text, m.file).toContain(`= ${totals.memoryRequests / GI}Gi <= 96Gi`)
      expect(m.text, m.file).toContain(`= ${totals.memoryLimits / GI}Gi <= 192Gi`)
      expect(m.text, m.file).toContain(`= ${totals.cpuRequests} <= 24`)
      expect(m.text, m.file).toContain(`= ${totals.cpuLimits} <= 48`)
    }
  })
})

describe("vllm-agent.yaml", () => {
  const dep = one(AGENT, "Deployment")
  const container = objs(podSpec(dep).containers, "containers")[0]!

  it("has the four kinds: Deployment, Service, Route, PersistentVolumeClaim", () => {
    expect(AGENT.docs.map((d) => d.kind).sort()).toEqual(["Deployment", "PersistentVolumeClaim", "Route", "Service"])
  })

  it("chooses the model by MODEL_ID, SERVED_NAME, TOOL_PARSER and EXTRA_ARGS", () => {
    const env = envOf(container)
    expect(env.get("MODEL_ID")?.value).toBe("Qwen/Qwen3-8B")
    expect(env.get("SERVED_NAME")?.value).toBe("qwen3-8b-test")
    expect(env.get("TOOL_PARSER")?.value).toBe("hermes")
    expect(env.get("EXTRA_ARGS")?.value).toBe("")
    const cmd = commandOf(container).join(" ").replace(/"/g, "").replace(/\s+/g, " ").trim()
    expect(cmd).toMatch(/^\/bin\/sh -c exec vllm serve \$MODEL_ID /)
    for (const part of [
      "--served-model-name $SERVED_NAME",
      "--enable-auto-tool-choice",
      "--tool-call-parser $TOOL_PARSER",
      "--api-key $VLLM_API_KEY",
      "--port 8000"
    ]) {
      expect(cmd).toContain(part)
    }
    expect(cmd.endsWith("$EXTRA_ARGS")).toBe(true)
  })

  it("probes GET /health on the served port", () => {
    for (const probe of ["startupProbe", "readinessProbe"]) {
      expect(at(container, `${probe}.httpGet`)).toEqual({ path: "/health", port: "http" })
    }
    expect(resolveTarget(dep, "http")?.port).toBe(8000)
  })
})

describe("vllm-small.yaml", () => {
  const dep = one(SMALL, "Deployment")
  const container = objs(podSpec(dep).containers, "containers")[0]!
  const configMap = one(SMALL, "ConfigMap")
  const data = obj(configMap.data, "ConfigMap data")
  const spec = obj(JSON.parse(str(data["children.json"], "children.json")), "children.json")
  const children = objs(spec.children, "children")
  const SCRIPT = "scripts/vllm-supervisor.py"

  /** The value after a flag in a child's command line. */
  const flag = (child: Obj, name: string): string | undefined => {
    const words = arr(child.argv, "argv").map((x) => str(x, "argv")).join(" ").replace(/"/g, "").split(/\s+/)
    const i = words.indexOf(name)
    return i < 0 ? undefined : words[i + 1]
  }

  it("has a ConfigMap, a Deployment, a Service, four Routes and a PersistentVolumeClaim", () => {
    const kinds = SMALL.docs.map((d) => String(d.kind))
    expect(kinds.filter((k) => k !== "Route").sort()).toEqual(["ConfigMap", "Deployment", "PersistentVolumeClaim", "Service"])
    expect(kinds.filter((k) => k === "Route")).toHaveLength(4)
  })

  it("embeds scripts/vllm-supervisor.py unchanged", () => {
    // On failure: paste the script into the ConfigMap's `vllm-supervisor.py: |` block, indented 4 spaces.
    expect(data["vllm-supervisor.py"] === readFileSync(SCRIPT, "utf8"), `${SCRIPT} and the ConfigMap copy differ`).toBe(true)
  })

  it("runs the supervisor from the ConfigMap, and probes with its --check", () => {
    const volume = objs(podSpec(dep).volumes, "volumes").find((v) => at(v, "configMap.name") === nameOf(configMap))
    const mount = objs(container.volumeMounts, "volumeMounts").find((x) => x.name === volume?.name)
    const dir = str(mount?.mountPath, "ConfigMap mount")
    expect(commandOf(container)).toEqual(["python3", `${dir}/vllm-supervisor.py`, `${dir}/children.json`])
    for (const probe of ["startupProbe", "readinessProbe"]) {
      expect(at(container, `${probe}.exec.command`)).toEqual(["python3", `${dir}/vllm-supervisor.py`, "--check", `${dir}/children.json`])
    }
  })

  it("starts the four models with small memory shares and context lengths", () => {
    expect(children.map((c) => c.name)).toEqual(["judge-small", "granite-guardian", "llama-guard", "shieldagent"])
    const agentCmd = commandOf(objs(podSpec(one(AGENT, "Deployment")).containers, "containers")[0]!).join(" ")
    const agentMaxLen = Number(/--max-model-len (\d+)/.exec(agentCmd)?.[1])
    let shares = 0
    for (const c of children) {
      const argv = arr(c.argv, "argv").join(" ")
      expect(argv).toContain("exec vllm serve ")
      expect(flag(c, "--served-model-name")).toBe(c.name)
      expect(flag(c, "--api-key")).toBe("$VLLM_API_KEY")
      const share = Number(flag(c, "--gpu-memory-utilization"))
      expect(share).toBeGreaterThanOrEqual(0.15)
      expect(share).toBeLessThanOrEqual(0.25)
      shares += share
      expect(Number(flag(c, "--max-model-len"))).toBeLessThan(agentMaxLen)
      expect(c.ready_url).toBe(`http://127.0.0.1:${flag(c, "--port")}/health`)
    }
    expect(shares).toBeLessThanOrEqual(0.9)
  })

  it("serves the supervisor's four ports (8001-8004) through the Service and one Route each", () => {
    const childPorts = children.map((c) => Number(flag(c, "--port"))).sort()
    expect(childPorts).toEqual([8001, 8002, 8003, 8004])
    expect(containerPorts(dep).map((p) => p.port).sort()).toEqual(childPorts)
    const service = one(SMALL, "Service")
    const servicePorts = objs(at(service, "spec.ports"), "service ports")
    expect(servicePorts.map((p) => resolveTarget(dep, p.targetPort)?.port).sort()).toEqual(childPorts)
    const routed = ofKind(SMALL, "Route").map((r) => {
      const sp = servicePorts.find((p) => p.name === at(r, "spec.port.targetPort"))
      return resolveTarget(dep, sp?.targetPort)?.port
    })
    expect(routed.sort()).toEqual(childPorts)
  })
})

describe("docs/cluster-request.md states the manifests' numbers", () => {
  const doc = readFileSync("docs/cluster-request.md", "utf8")
  const deployments = MANIFESTS.flatMap((m) => ofKind(m, "Deployment"))

  it("one quota row per pod: cpu, memory, GPU and /dev/shm as in its Deployment", () => {
    for (const dep of deployments) {
      const c = objs(podSpec(dep).containers, "containers")[0]!
      const shm = objs(podSpec(dep).volumes, "volumes").find((v) => at(v, "emptyDir.medium") === "Memory")
      const row = [
        `\`${nameOf(dep)}\``,
        `${String(at(c, "resources.requests.cpu"))} / ${String(at(c, "resources.limits.cpu"))}`,
        `${String(at(c, "resources.requests.memory"))} / ${String(at(c, "resources.limits.memory"))}`,
        String(gpusOf(c, "limits")),
        String(at(shm, "emptyDir.sizeLimit"))
      ]
      expect(doc).toContain(`| ${row.join(" | ")} |`)
    }
  })

  it("the totals row, every PVC with its size, every Route", () => {
    const sum = (f: (c: Obj) => number) => deployments.flatMap(containersOf).reduce((acc, c) => acc + f(c), 0)
    const cpu = `${sum((c) => cpuCores(at(c, "resources.requests.cpu")))} / ${sum((c) => cpuCores(at(c, "resources.limits.cpu")))}`
    const mem = `${sum((c) => memoryBytes(at(c, "resources.requests.memory"))) / GI}Gi / ${sum((c) => memoryBytes(at(c, "resources.limits.memory"))) / GI}Gi`
    expect(doc).toContain(`| **total** | **${cpu}** (quota 24 / 48) | **${mem}** (quota 96Gi / 192Gi) | **2** (quota 2) |`)
    for (const pvc of MANIFESTS.flatMap((m) => ofKind(m, "PersistentVolumeClaim"))) {
      expect(doc).toContain(`| \`${nameOf(pvc)}\` | ${String(at(pvc, "spec.resources.requests.storage"))} |`)
    }
    for (const route of MANIFESTS.flatMap((m) => ofKind(m, "Route"))) expect(doc).toContain(`| \`${nameOf(route)}\` |`)
  })
})
