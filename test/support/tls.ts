/**
 * A throw-away PKI for TLS tests: a self-signed CA and a server certificate for 127.0.0.1 and
 * localhost signed by it, generated with the `openssl` binary into a fresh temp dir.
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import * as path from "node:path"

export interface TestPki {
  readonly dir: string
  /** the CA certificate (PEM): the bundle for `verify_tls` */
  readonly caFile: string
  /** the server's PEM key and certificate (for `FakeVllmOptions.tls`) */
  readonly key: string
  readonly cert: string
}

const openssl = (dir: string, args: ReadonlyArray<string>) => {
  execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "pipe", "pipe"] })
}

export const makeTestPki = (): TestPki => {
  const dir = mkdtempSync(path.join(tmpdir(), "vetobench-pki-"))
  openssl(dir, [
    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
    "-subj", "/CN=vetobench test CA",
    "-addext", "basicConstraints=critical,CA:TRUE",
    "-addext", "keyUsage=critical,keyCertSign,cRLSign"
  ])
  openssl(dir, ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"])
  writeFileSync(
    path.join(dir, "server.ext"),
    [
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "basicConstraints=CA:FALSE",
      "keyUsage=digitalSignature,keyEncipherment",
      "extendedKeyUsage=serverAuth",
      ""
    ].join("\n")
  )
  openssl(dir, [
    "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
    "-out", "server.pem", "-days", "2", "-extfile", "server.ext"
  ])
  return {
    dir,
    caFile: path.join(dir, "ca.pem"),
    key: readFileSync(path.join(dir, "server.key"), "utf8"),
    cert: readFileSync(path.join(dir, "server.pem"), "utf8")
  }
}
