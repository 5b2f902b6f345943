/**
 * The public library surface: embed the gate in another Effect service, add judge kinds, reuse
 * the domain vocabulary.
 */
export * from "./domain/route.js"
export * from "./domain/verdict.js"
export * from "./domain/tool-call.js"
export * from "./domain/audit-record.js"
export { canonicalize } from "./domain/canonical-json.js"
export { recordHash, sealRecord } from "./domain/audit-chain.js"
export { verifyChainText, type VerifyResult } from "./domain/chain-verify.js"
export { decodeSettings, defaultSettings, loadSettings, type Settings as SettingsShape } from "./config/settings.js"
export { ConfigError } from "./config/errors.js"
export { Settings } from "./config/service.js"
export { Gate, type GateRequest, type CallRuling, type GateShape } from "./gate/Gate.js"
export { gateLayer, proxyLayer } from "./proxy/live.js"
export { ProxyServer } from "./proxy/server.js"
export { Upstreams, NoRoute, UpstreamStatus, UpstreamTimeout, UpstreamUnavailable } from "../layers/Upstreams.js"
export { HttpTransport, HttpTransportError, type HttpTransportShape, type Script } from "../layers/HttpTransport.js"
export { AuditSink, AuditWriteError, verifyAuditFile } from "../layers/AuditSink.js"
export { JudgeCache } from "../layers/JudgeCache.js"
export { FakeVllm, serveFakeVllm } from "../layers/FakeVllm.js"
export { type Judge, type JudgeContext, JudgeError, JudgeConfigError } from "../judges/Judge.js"
export { JudgeKinds, type JudgeKind, type JudgeKindPlugin } from "../judges/registry.js"
export { decodeSpec } from "../judges/spec-schema.js"
export { Judges } from "../judges/Judges.js"
export { defaultPlugins } from "../judges/plugins.js"
export { llamaCppPlugin } from "../judges/llama-cpp.js"
export { LlamaModels } from "../layers/LlamaModels.js"
export {
  type PluginCreateContext,
  type PluginJudge,
  type PluginJudgeKind,
  type PluginResult,
  type PluginRuleContext
} from "../judges/plugin.js"
export { verifyAudit, type FileVerification } from "./domain/audit-verify.js"
export { makeCheckpoint, signerFromPem, type Checkpoint } from "./domain/checkpoint.js"
