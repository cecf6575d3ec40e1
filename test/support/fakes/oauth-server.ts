// Shared by the OAUTHBEARER fault tests: a fake backend behind TLS (after an
// SSLRequest, as a real server), the scripts that play PostgreSQL 18's side of
// the exchange, and certificates naming "localhost" only.

import { mkdtemp, readFile, rm } from 'node:fs/promises'
import * as net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tls from 'node:tls'
import { createCertificates } from '../servers/certs.js'
import { errorResponse, int32, message, startupOk } from './backend-messages.js'
import { FakeConnection, type FakeServer, type FrontendMessage } from './fake-server.js'

/** A token shaped like a JWT; it must never appear in an error. */
export const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ0ZXN0In0.c2VjcmV0LXNpZ25hdHVyZS14eXo'

/** The document PostgreSQL 18 sends when its validator rejects a token (auth-oauth.c, generate_error_response). */
export const PG18_ERROR_DOCUMENT =
  '{ "status": "invalid_token", "openid-configuration": "https://issuer.example.com/.well-known/openid-configuration", "scope": "openid postgres" }'

export const PG18_FAILURE = { S: 'FATAL', V: 'FATAL', C: '28000', M: 'OAuth bearer authentication failed for user "u"' }

/** AuthenticationSASL offering `mechanisms`. */
export const sasl = (...mechanisms: string[]): Uint8Array => message('R', int32(10), ...mechanisms, Uint8Array.of(0))
/** AuthenticationSASLContinue carrying `data`. */
export const saslContinue = (data: string): Uint8Array => message('R', int32(11), new TextEncoder().encode(data))

/** A SASLInitialResponse body: the mechanism and the data after its length. */
export function saslInitial(m: FrontendMessage): { mechanism: string; data: string } {
  const nul = m.body.indexOf(0)
  return { mechanism: m.body.subarray(0, nul).toString(), data: m.body.subarray(nul + 5).toString('latin1') }
}

/** Reads what the client sends until it closes. */
export async function drain(c: FakeConnection): Promise<void> {
  try {
    for (;;) await c.read()
  } catch {
    // The client closed.
  }
}

export interface Exchange {
  mechanisms?: string[]
  /** Reject the token with this document, then fail the authentication; else accept it. */
  errorDocument?: string
}

/** PostgreSQL 18's side: offer the mechanisms, read the initial response, then accept or reject. */
export function oauthServerScript(x: Exchange = {}): (c: FakeConnection) => Promise<void> {
  return async (c) => {
    await c.readStartup()
    c.write(sasl(...(x.mechanisms ?? ['OAUTHBEARER'])))
    await c.read()
    if (x.errorDocument === undefined) {
      c.write(startupOk())
      await drain(c)
      return
    }
    c.write(saslContinue(x.errorDocument))
    await c.read()
    c.write(errorResponse(PG18_FAILURE))
    c.socket.end()
  }
}

export interface Certificates {
  caFile: string
  /** A CA that did not sign the server's certificate. */
  otherCaFile: string
  context: tls.SecureContext
  remove(): Promise<void>
}

export async function makeCertificates(): Promise<Certificates> {
  const dir = await mkdtemp(join(tmpdir(), 'pipegres-oauth-'))
  const certs = await createCertificates(dir, 'u')
  const context = tls.createSecureContext({ cert: await readFile(certs.serverCertFile), key: await readFile(certs.serverKeyFile) })
  return { caFile: certs.caFile, otherCaFile: certs.otherCaFile, context, remove: () => rm(dir, { recursive: true, force: true }) }
}

/** A fake server that accepts TLS after an SSLRequest and then runs `script` over it. */
export async function tlsFakeServer(context: tls.SecureContext, script: (c: FakeConnection) => Promise<void>): Promise<FakeServer> {
  const sockets = new Set<net.Socket>()
  const errors: unknown[] = []
  const connections: FakeConnection[] = []
  const server = net.createServer((raw) => {
    sockets.add(raw)
    raw.on('close', () => sockets.delete(raw))
    raw.on('error', () => {})
    raw.once('data', (first) => {
      if (first.length !== 8 || first.readInt32BE(4) !== 80877103) {
        errors.push(new Error(`expected an SSLRequest, got ${first.length} bytes`))
        raw.destroy()
        return
      }
      raw.pause()
      raw.write('S')
      const secure = new tls.TLSSocket(raw, { isServer: true, secureContext: context })
      const c = new FakeConnection(secure)
      connections.push(c)
      script(c).catch((err: unknown) => {
        if (!c.closed) errors.push(err)
        secure.destroy()
      })
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as net.AddressInfo).port
  return {
    port,
    options: { host: '127.0.0.1', port, user: 'u', database: 'd', sslmode: 'disable' },
    errors,
    connections,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((r) => server.close(() => r()))
    },
  }
}

/** Settings for a verify-full connection to a TLS fake server: the certificate names localhost, dialled at 127.0.0.1. */
export function verifyFull(s: FakeServer, caFile: string) {
  return { host: 'localhost', hostaddr: '127.0.0.1', port: s.port, user: 'u', database: 'd', sslmode: 'verify-full' as const, sslrootcert: caFile, connectTimeout: 10_000 }
}

/** The SASL messages (SASLInitialResponse, SASLResponse) the server read, over every connection. */
export function saslMessages(s: FakeServer): FrontendMessage[] {
  return s.connections.flatMap((c) => c.received.filter((m) => m.type === 'p'))
}
