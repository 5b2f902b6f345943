/**
 * Are the models we are about to use served? Checked before `run` and `smoke` do any work (one
 * line naming the model and the upstream, exit 1) and when `vetobench proxy` starts (a warning per
 * judge model; the proxy still starts, since an upstream may come up later).
 *
 * - Agent models are routed as the proxy routes a client's model: the alias (settings `aliases`,
 *   one lookup), then the upstream whose `models` lists it, else the catch-all upstream.
 * - Judge models are routed as judges send them: the literal name (no alias), same upstream rule.
 *   Judges that call a model: `llm_json`, `guard`, `classifier` with `model:` (not `endpoint:`);
 *   a `layered` judge's layers are followed; other kinds (static, rule, toolgate, plugin) call none.
 * - One `GET <base_url>/models` per upstream involved, never more; a model is served when the
 *   name sent upstream is one of the ids listed.
 */
import { Duration, Effect, Either } from "effect"
import * as Upstreams from "../../layers/Upstreams.js"
import { aliasOf, upstreamFor } from "../../layers/Upstreams.js"
import { BUILTIN_JUDGES } from "../config/builtin-judges.js"
import type { JudgeSpec, Settings, UpstreamSettings } from "../config/settings.js"
import { redactUrl } from "../domain/redact-url.js"
import { didYouMean } from "../domain/suggest.js"

/** A model we are about to call, and who calls it. */
export interface ModelNeed {
  readonly model: string
  /** who needs it, the model named: `agent model 'm'`, `model 'm' of judge 'small'` */
  readonly label: string
  /** the judge that calls it (null for agents and other callers) */
  readonly judge: string | null
  /** resolve `aliases` first (what the proxy does with a client's model); judges send the literal name */
  readonly viaAlias: boolean
}

export const agentNeeds = (models: ReadonlyArray<string>, role = "agent model"): Array<ModelNeed> =>
  models.map((model) => ({ model, label: `${role} '${model}'`, judge: null, viaAlias: true }))

/** Judge kinds that call a model through the upstreams (`classifier` only with its model backend). */
const MODEL_KINDS: ReadonlySet<string> = new Set(["llm_json", "guard", "classifier"])

/** The models the named judges call (layers of `layered` judges followed), in order, each judge once. */
export const judgeModelNeeds = (settings: Pick<Settings, "judges">, judges: ReadonlyArray<string>): Array<ModelNeed> => {
  const specs: Readonly<Record<string, JudgeSpec>> = { ...BUILTIN_JUDGES, ...settings.judges }
  const out: Array<ModelNeed> = []
  const seen = new Set<string>()
  const visit = (name: string, stack: string | null): void => {
    if (seen.has(name)) return
    seen.add(name)
    const spec = Object.hasOwn(specs, name) ? specs[name] : undefined
    if (spec === undefined) return
    if (spec.kind === "layered" && Array.isArray(spec.layers)) {
      for (const layer of spec.layers) if (typeof layer === "string") visit(layer, stack ?? name)
      return
    }
    if (MODEL_KINDS.has(spec.kind) && typeof spec.model === "string" && spec.model !== "") {
      const label = `model '${spec.model}' of judge '${name}'${stack === null ? "" : ` (a layer of '${stack}')`}`
      out.push({ model: spec.model, label, judge: name, viaAlias: false })
    }
  }
  for (const j of judges) visit(j, null)
  return out
}

/** Every configured judge's model (the proxy's start-up check). */
export const allJudgeModelNeeds = (settings: Pick<Settings, "judges">): Array<ModelNeed> =>
  judgeModelNeeds(settings, Object.keys(settings.judges))

/** One upstream's `GET /models`: the ids served, or why there is no list. */
export interface Listing {
  readonly upstream: UpstreamSettings
  /** the ids served; Left: the error text (`error: …` without the prefix) */
  readonly served: Either.Either<ReadonlyArray<string>, string>
  /** wall time of the request, ms */
  readonly took: number
}

/** One `GET /models` per upstream given (concurrently), each on a client of its own, timed. */
export const listUpstreams = (settings: Settings, upstreams: ReadonlyArray<UpstreamSettings>): Effect.Effect<ReadonlyArray<Listing>> =>
  Effect.forEach(
    upstreams,
    (u) =>
      Effect.scoped(
        Effect.gen(function*() {
          const ups = yield* Upstreams.make({ ...settings, upstreams: [u] })
          const [took, listing] = yield* Effect.timed(ups.listModels)
          const got = listing[u.name] ?? "error: no answer"
          const served: Listing["served"] = typeof got === "string" ? Either.left(got.replace(/^error: /, "")) : Either.right(got)
          return { upstream: u, served, took: Duration.toMillis(took) } satisfies Listing
        })
      ),
    { concurrency: "unbounded" }
  )

/** What is wrong with a model we need. */
export type Finding =
  | { readonly _tag: "NoRoute"; readonly need: ModelNeed; readonly sent: string }
  | { readonly _tag: "NotServed"; readonly need: ModelNeed; readonly sent: string; readonly upstream: UpstreamSettings; readonly served: ReadonlyArray<string> }
  | { readonly _tag: "Unreachable"; readonly needs: ReadonlyArray<ModelNeed>; readonly upstream: UpstreamSettings; readonly reason: string }

interface Routed {
  readonly need: ModelNeed
  /** the name sent upstream */
  readonly sent: string
  readonly upstream: UpstreamSettings | null
}

/** Where each need goes: the upstream the proxy (agents) or the judge (judge models) would send it to. */
export const route = (settings: Pick<Settings, "upstreams" | "aliases">, needs: ReadonlyArray<ModelNeed>): ReadonlyArray<Routed> =>
  needs.map((need) => {
    const sent = need.viaAlias ? aliasOf(settings, need.model) : need.model
    const upstream = upstreamFor(settings, sent) ?? null
    return { need, sent, upstream }
  })

/** The findings for `needs` given the listings of (at least) the upstreams they route to. */
export const findings = (
  settings: Pick<Settings, "upstreams" | "aliases">,
  needs: ReadonlyArray<ModelNeed>,
  listings: ReadonlyArray<Listing>
): Array<Finding> => {
  const out: Array<Finding> = []
  const unreachable = new Map<string, { upstream: UpstreamSettings; reason: string; needs: Array<ModelNeed> }>()
  for (const r of route(settings, needs)) {
    if (r.upstream === null) {
      out.push({ _tag: "NoRoute", need: r.need, sent: r.sent })
      continue
    }
    const listing = listings.find((l) => l.upstream.name === r.upstream!.name)
    if (listing === undefined) continue
    if (Either.isLeft(listing.served)) {
      const u = unreachable.get(r.upstream.name) ?? { upstream: r.upstream, reason: listing.served.left, needs: [] }
      u.needs.push(r.need)
      unreachable.set(r.upstream.name, u)
      continue
    }
    if (!listing.served.right.includes(r.sent)) out.push({ _tag: "NotServed", need: r.need, sent: r.sent, upstream: r.upstream, served: listing.served.right })
  }
  for (const u of unreachable.values()) out.push({ _tag: "Unreachable", upstream: u.upstream, reason: u.reason, needs: u.needs })
  return out
}

/** List only the upstreams `needs` route to (one request each), then the findings. */
export const checkServed = (settings: Settings, needs: ReadonlyArray<ModelNeed>): Effect.Effect<Array<Finding>> =>
  Effect.suspend(() => {
    const routed = route(settings, needs)
    const involved = settings.upstreams.filter((u) => routed.some((r) => r.upstream?.name === u.name))
    return Effect.map(listUpstreams(settings, involved), (listings) => findings(settings, needs, listings))
  })

// ---------------------------------------------------------------------------------------------
// one line per finding

const shownList = (xs: ReadonlyArray<string>, max = 8): string =>
  xs.length === 0 ? "nothing" : xs.length <= max ? xs.join(", ") : `${xs.slice(0, max).join(", ")}, … (${xs.length} models)`

const subject = (need: ModelNeed, sent: string): string => (sent === need.model ? need.label : `${need.label} (alias of '${sent}')`)

const whereOf = (u: UpstreamSettings): string => `upstream '${u.name}' (${redactUrl(u.base_url)})`

/** One line: the model, who needs it, the upstream, and what to do. */
export const findingLine = (f: Finding, settingsFile: string): string => {
  switch (f._tag) {
    case "NoRoute":
      return `${subject(f.need, f.sent)}: no upstream serves '${f.sent}' (none lists it in \`models\` and none is a catch-all; upstreams in ${settingsFile})`
    case "NotServed":
      return `${subject(f.need, f.sent)} is not served by ${whereOf(f.upstream)}${didYouMean(f.sent, f.served)}; it serves ${shownList(f.served)}`
    case "Unreachable": {
      // the transport error names the upstream and its URL again: once is enough
      const reason = f.reason.replace(`upstream '${f.upstream.name}' unavailable: `, "").replace(` (${redactUrl(f.upstream.base_url)})`, "")
      return `${whereOf(f.upstream)} did not answer GET /models (${reason}); needed for ${f.needs.map((n) => n.label).join(", ")}`
    }
  }
}

/** All findings as one line: the first in full, the others named after it. */
export const findingsLine = (fs: ReadonlyArray<Finding>, settingsFile: string): string => {
  const [first, ...rest] = fs
  if (first === undefined) return ""
  const more = rest.map((f) => (f._tag === "Unreachable" ? `upstream '${f.upstream.name}' unreachable` : f.need.label))
  return findingLine(first, settingsFile) + (more.length > 0 ? `; also: ${more.join(", ")}` : "")
}

/**
 * The proxy's start-up check: one warning line per judge model that is not served (naming the
 * judge, the model and the upstream) and per upstream that did not answer. The proxy starts all
 * the same; until the model is served, that judge's rulings fail and `fail_policy` decides.
 */
export const judgeModelWarnings = (settings: Settings): Effect.Effect<Array<string>> =>
  Effect.map(checkServed(settings, allJudgeModelNeeds(settings)), (fs) =>
    fs.map((f) =>
      f._tag === "Unreachable"
        ? `${findingLine(f, settings.file)}; starting anyway (its judges' calls fail until it answers; fail_policy: ${settings.proxy.fail_policy})`
        : `${findingLine(f, settings.file)}; starting anyway (that judge's calls fail until it is served; fail_policy: ${settings.proxy.fail_policy})`
    )
  )
