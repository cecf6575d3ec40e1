import type { ConnectionConfig, AuthMethodName, HostAddress } from '../config/types.js'
import { AuthError, ConnectionError, PgError, ProtocolError } from '../errors.js'
import type { PgErrorFields } from '../errors.js'
import type { ScramClient } from '../auth/scram.js'
import { describeOAuthServerError, OAUTH_ERROR_ACK, OAUTHBEARER, oauthBearerClientFirst, parseOAuthServerError } from '../auth/oauth-bearer.js'
import {
  decodeAuthentication,
  decodeBackendKeyData,
  decodeNegotiateProtocolVersion,
  decodeSaslMechanisms,
} from '../protocol/backend.js'
import { Auth, Backend, backendMessageName, ProtocolVersion30, ProtocolVersion32 } from '../protocol/message-codes.js'
import { writePassword, writeSASLInitialResponse, writeSASLResponse, writeStartup } from '../protocol/frontend.js'
import type { Writer } from '../protocol/writer.js'
import { platform } from './platform.js'
import { isUnixHost, type Transport } from './transport.js'

// The startup handshake as a state machine: StartupMessage, then whatever
// authentication exchange the server asks for, then BackendKeyData and
// ParameterStatus until the first ReadyForQuery. It only ever accepts the
// messages the protocol allows at each step.

/**
 * The password handshakes (MD5, SCRAM with SASLprep's tables, channel
 * binding) and node:crypto under them, loaded when a server first asks for a
 * password: a connection that trusts, uses peer or certificate authentication,
 * or OAuth, never loads them, and a program pays for them at its first
 * connection rather than at import. The answer is computed in async() anyway.
 */
function passwordAuth(): Promise<typeof import('../auth/index.js')> {
  return import('../auth/index.js')
}

export interface StartupHost {
  writeNow(fn: (w: Writer) => void): void
  destroy(err: Error): void
}

type Phase =
  | 'auth' // waiting for an Authentication request or NegotiateProtocolVersion
  | 'busy' // computing our answer; the server must wait for it
  | 'sasl-continue'
  | 'sasl-final'
  | 'password-sent' // waiting for AuthenticationOk after a password
  | 'oauth-sent' // OAUTHBEARER token sent: AuthenticationOk, or SASLContinue with the server's error document
  | 'oauth-error' // the error acknowledged: the server must now fail the authentication
  | 'authenticated' // AuthenticationOk seen: BackendKeyData, ParameterStatus, ReadyForQuery
  | 'done'

export class Startup {
  private phase: Phase = 'auth'
  private scram: ScramClient | undefined
  private authMethod: AuthMethodName | undefined
  /** The server's OAUTHBEARER error document, described, for the error that ends the attempt. */
  private oauthError: string | undefined
  private negotiated = false
  processId = 0
  secretKey: Uint8Array | undefined
  protocolMinor: number

  constructor(
    private readonly host: StartupHost,
    private readonly config: ConnectionConfig,
    private readonly address: HostAddress,
    private readonly transport: Transport,
    protocol: '3.0' | '3.2',
  ) {
    this.protocolMinor = protocol === '3.2' ? 2 : 0
  }

  /** Writes the StartupMessage. */
  begin(): void {
    const c = this.config
    const params: [string, string][] = [
      ['user', c.user],
      ['database', c.database],
      ['client_encoding', 'UTF8'],
      ['DateStyle', 'ISO, MDY'],
    ]
    const app = c.applicationName ?? c.fallbackApplicationName
    if (app !== undefined) params.push(['application_name', app])
    if (c.options !== undefined) params.push(['options', c.options])
    if (c.replication !== undefined) params.push(['replication', c.replication === 'database' ? 'database' : 'true'])
    for (const [k, v] of Object.entries(c.runtimeParams)) params.push([k, v])
    const version = this.protocolMinor === 2 ? ProtocolVersion32 : ProtocolVersion30
    this.host.writeNow((w) => writeStartup(w, version, params))
  }

  private violation(type: number): never {
    throw new ProtocolError(`server sent ${backendMessageName(type)} during startup while ${this.phase === 'busy' ? 'it should be waiting for the client' : `in phase "${this.phase}"`}`)
  }

  /** Handles one startup message; returns true on the first ReadyForQuery. */
  handle(type: number, buf: Uint8Array, start: number, end: number): boolean {
    switch (type) {
      case Backend.Authentication:
        this.authentication(buf, start, end)
        return false
      case Backend.NegotiateProtocolVersion:
        this.negotiate(buf, start, end)
        return false
      case Backend.BackendKeyData: {
        if (this.phase !== 'authenticated') this.violation(type)
        const key = decodeBackendKeyData(buf, start, end)
        const max = this.protocolMinor >= 2 ? 256 : 4
        if (key.secretKey.length < 4 || key.secretKey.length > max) {
          throw new ProtocolError(`server sent a cancel key of ${key.secretKey.length} bytes, not allowed in protocol 3.${this.protocolMinor}`)
        }
        this.processId = key.processId
        this.secretKey = key.secretKey
        return false
      }
      case Backend.ReadyForQuery:
        if (this.phase !== 'authenticated') this.violation(type)
        this.phase = 'done'
        return true
      default:
        this.violation(type)
    }
  }

  /** An ErrorResponse during startup fails this attempt with the server's error (see fatalError()). */
  error(fields: PgErrorFields): never {
    throw this.fatalError(fields) ?? new PgError(fields)
  }

  /**
   * The error a FATAL ErrorResponse ends this attempt with, where the startup
   * knows better than the server's bare message: after a rejected OAuth token,
   * an AuthError saying what the server's error document said (status, scope,
   * discovery URL), with the server's error as its cause. undefined otherwise.
   */
  fatalError(fields: PgErrorFields): AuthError | undefined {
    if (this.phase !== 'oauth-error' || this.oauthError === undefined) return undefined
    const err = new PgError(fields)
    return new AuthError('oauth', `${this.oauthError}; the server then ended the authentication: ${err.message}`, { cause: err })
  }

  /**
   * NegotiateProtocolVersion: the server supports an older minor version than
   * the one asked for, or none of the `_pq_.` options sent (pipegres sends
   * none). What pipegres accepts, as libpq 18 does:
   * - 3.0 in answer to 3.2, unless min_protocol_version=3.2 (then a
   *   PG_UNSUPPORTED ConnectionError naming both versions and the setting).
   * - Nothing else. 3.1 is reserved: no PostgreSQL ever spoke it, and old
   *   PgBouncer releases claimed it by an off-by-one while speaking 3.0, so
   *   PostgreSQL 18 went from 3.0 straight to 3.2 and neither sends nor
   *   accepts 3.1; taking it as 3.0 would be a guess. A version above the one
   *   asked for (3.3, the 3.9999 of a "greasing" client echoed back), a major
   *   other than 3, the very version asked for with nothing refused, and any
   *   option named (the client sent none) are protocol violations: the server
   *   would then speak something the client never asked for, so the
   *   connection is closed rather than guessed at.
   * A second NegotiateProtocolVersion, or one after authentication began, is
   * a violation too: it may only be the first answer to the StartupMessage.
   */
  private negotiate(buf: Uint8Array, start: number, end: number): void {
    if (this.negotiated) throw new ProtocolError('server sent NegotiateProtocolVersion a second time during startup; it may only be sent once, as the first answer')
    if (this.phase !== 'auth' || this.authMethod !== undefined) {
      throw new ProtocolError(
        `server sent NegotiateProtocolVersion after authentication ${this.phase === 'authenticated' ? 'succeeded' : 'began'}; it may only be the first answer to the StartupMessage`,
      )
    }
    this.negotiated = true
    // The field is a whole protocol version (major << 16 | minor): that is what
    // PostgreSQL sends (PG 15 sends 196608 = 3.0) and what libpq reads, although
    // the protocol documentation calls it the "newest minor version".
    const { version: offered, unsupportedOptions } = decodeNegotiateProtocolVersion(buf, start, end)
    const major = offered >>> 16
    const minor = offered & 0xffff
    const asked = `3.${this.protocolMinor}`
    const offer = `server offered protocol version ${major}.${minor} in answer to a request for ${asked}`
    if (major !== 3) {
      throw new ProtocolError(`${offer}: pipegres speaks only protocol 3${major < 3 ? ', and a server may not negotiate down to another major version' : ''}`)
    }
    if (minor > this.protocolMinor) {
      throw new ProtocolError(`${offer}: a server may only offer a version lower than the one requested`)
    }
    if (minor === 1) {
      throw new ProtocolError(`${offer}: 3.1 is reserved and was never a protocol version (PostgreSQL went from 3.0 to 3.2)`)
    }
    if (unsupportedOptions.length > 0) {
      const shown = unsupportedOptions.slice(0, 5).map((o) => JSON.stringify(o.length > 64 ? `${o.slice(0, 64)}...` : o))
      const more = unsupportedOptions.length > shown.length ? ` and ${unsupportedOptions.length - shown.length} more` : ''
      const notProtocol = unsupportedOptions.some((o) => !o.startsWith('_pq_.')) ? ' (protocol options start with "_pq_.")' : ''
      throw new ProtocolError(
        `server reported unsupported protocol options that the client never sent: ${shown.join(', ')}${more}${notProtocol}; pipegres sends no protocol options`,
      )
    }
    if (minor === this.protocolMinor) {
      throw new ProtocolError(`${offer}, the version requested, and refused no option: there was nothing to negotiate`)
    }
    const min = this.config.minProtocolVersion === '3.2' ? 2 : 0
    if (minor < min) {
      // PG_UNSUPPORTED: the server lacks what the settings demand; nothing was closed on us.
      throw new ConnectionError(
        'PG_UNSUPPORTED',
        `server supports protocol 3.${minor} at most, but min_protocol_version is ${this.config.minProtocolVersion}: ` +
          `lower min_protocol_version to 3.${minor} to connect to this server`,
      )
    }
    this.protocolMinor = minor
  }

  /** require_auth lets the server use `method`. */
  private permits(method: AuthMethodName): boolean {
    const ra = this.config.requireAuth
    if (ra === undefined) return true
    const listed = ra.methods.has(method)
    return ra.negated ? !listed : listed
  }

  private allow(method: AuthMethodName, what: string): void {
    if (!this.permits(method)) {
      throw new AuthError(method, `server requested ${what}, which require_auth does not allow`)
    }
    if (this.config.channelBinding === 'require' && method !== 'scram-sha-256') {
      throw new AuthError(method, `server requested ${what}, but channel_binding=require needs SCRAM-SHA-256-PLUS`)
    }
  }

  private authentication(buf: Uint8Array, start: number, end: number): void {
    const req = decodeAuthentication(buf, start, end)
    switch (req.code) {
      case Auth.Ok:
        return this.authOk()
      case Auth.CleartextPassword:
        if (this.phase !== 'auth' || req.data.length !== 0) this.violation(Backend.Authentication)
        this.allow('password', 'a cleartext password')
        this.authMethod = 'password'
        this.phase = 'busy'
        this.async(async () => {
          const password = await this.password('password')
          this.host.writeNow((w) => writePassword(w, password))
          this.phase = 'password-sent'
        })
        return
      case Auth.MD5Password: {
        if (this.phase !== 'auth' || req.data.length !== 4) this.violation(Backend.Authentication)
        this.allow('md5', 'MD5 password authentication')
        this.authMethod = 'md5'
        this.phase = 'busy'
        const salt = req.data
        this.async(async () => {
          const [password, { md5PasswordMessage }] = await Promise.all([this.password('md5'), passwordAuth()])
          const hashed = md5PasswordMessage(this.config.user, password, salt)
          this.host.writeNow((w) => writePassword(w, hashed))
          this.phase = 'password-sent'
        })
        return
      }
      case Auth.SASL: {
        if (this.phase !== 'auth') this.violation(Backend.Authentication)
        const offered = decodeSaslMechanisms(req.data)
        if (this.choosesOAuth(offered)) return this.oauth()
        this.allow('scram-sha-256', 'SASL authentication')
        this.authMethod = 'scram-sha-256'
        this.phase = 'busy'
        this.async(async () => {
          const { chooseSaslMechanism, ScramClient, tlsServerEndPointHash } = await passwordAuth()
          let bindingData: Uint8Array | undefined
          if (this.transport.tls && this.transport.peerCertificate && this.config.channelBinding !== 'disable') {
            try {
              bindingData = tlsServerEndPointHash(this.transport.peerCertificate)
            } catch (err) {
              if (this.config.channelBinding === 'require') throw err
            }
          }
          const choice = chooseSaslMechanism(offered, {
            channelBinding: this.config.channelBinding,
            tls: this.transport.tls,
            bindingDataAvailable: bindingData !== undefined,
          })
          const password = await this.password(choice.mechanism)
          const scram = new ScramClient({
            password,
            mechanism: choice.mechanism,
            channelBindingData: choice.mechanism === 'SCRAM-SHA-256-PLUS' ? bindingData : undefined,
            clientSupportsBinding: choice.clientSupportsBinding,
          })
          this.scram = scram
          const first = scram.clientFirst()
          this.host.writeNow((w) => writeSASLInitialResponse(w, choice.mechanism, first))
          this.phase = 'sasl-continue'
        })
        return
      }
      case Auth.SASLContinue: {
        if (this.phase === 'oauth-sent') return this.oauthRejected(req.data)
        if (this.phase !== 'sasl-continue' || !this.scram) this.violation(Backend.Authentication)
        const scram = this.scram
        this.phase = 'busy'
        this.async(async () => {
          const final = await scram.clientFinal(req.data)
          this.host.writeNow((w) => writeSASLResponse(w, final))
          this.phase = 'sasl-final'
        })
        return
      }
      case Auth.SASLFinal:
        if (this.phase === 'oauth-sent') {
          throw new ProtocolError('server sent AuthenticationSASLFinal after the OAuth bearer token; OAUTHBEARER ends with AuthenticationOk, or with an error document and an ErrorResponse')
        }
        if (this.phase !== 'sasl-final' || !this.scram) this.violation(Backend.Authentication)
        this.scram.verifyServerFinal(req.data)
        this.phase = 'password-sent'
        return
      case Auth.KerberosV5:
        throw new AuthError('gss', 'server requested Kerberos V5 authentication, which PostgreSQL no longer supports and pipegres does not implement')
      case Auth.GSS:
      case Auth.GSSContinue:
        this.allow('gss', 'GSSAPI authentication')
        throw new AuthError('gss', 'server requested GSSAPI authentication, which pipegres does not support')
      case Auth.SSPI:
        this.allow('sspi', 'SSPI authentication')
        throw new AuthError('sspi', 'server requested SSPI authentication, which pipegres does not support')
      default:
        throw new AuthError('unknown', `server requested an unknown authentication method (code ${req.code})`)
    }
  }

  private authOk(): void {
    if (this.phase === 'auth') {
      // Trust, peer, or certificate authentication: no exchange happened.
      this.allow('none', 'no authentication')
    } else if ((this.phase !== 'password-sent' && this.phase !== 'oauth-sent') || (this.scram !== undefined && !this.scram.verified)) {
      // AuthenticationOk in the middle of SCRAM would skip verifying the server's signature.
      this.violation(Backend.Authentication)
    }
    if (this.config.channelBinding === 'require' && this.scram?.mechanism !== 'SCRAM-SHA-256-PLUS') {
      throw new AuthError('scram-sha-256', 'channel_binding=require, but the server authenticated the client without channel binding')
    }
    this.phase = 'authenticated'
  }

  /**
   * OAUTHBEARER when the server offers it and a token is configured (unless
   * channel_binding=require or require_auth rules it out: then SCRAM, if
   * offered), or when it is the only mechanism offered, so that the error says
   * what is missing.
   */
  private choosesOAuth(offered: readonly string[]): boolean {
    if (!offered.includes(OAUTHBEARER)) return false
    if (!offered.some((m) => m === 'SCRAM-SHA-256' || m === 'SCRAM-SHA-256-PLUS')) return true
    return this.config.oauthBearerToken !== undefined && this.config.channelBinding !== 'require' && this.permits('oauth')
  }

  /** Sends the OAuth bearer token (SASL OAUTHBEARER, PostgreSQL 18), if it may be sent over this connection. */
  private oauth(): void {
    this.allow('oauth', 'OAuth bearer token authentication (SASL OAUTHBEARER)')
    this.authMethod = 'oauth'
    const source = this.config.oauthBearerToken
    if (source === undefined) {
      throw new AuthError(
        'oauth',
        `server requested OAuth bearer token authentication (SASL OAUTHBEARER) for user "${this.config.user}", but no oauthBearerToken was given; ` +
          'pipegres does not run the OAuth device flow: the application must get a token from the issuer and pass it as oauthBearerToken (a string, or a function returning one)',
      )
    }
    const risk = this.oauthTransportRisk()
    if (risk !== undefined && !this.config.oauthAllowInsecure) {
      // Checked before the token function is called: a token that may not be sent is not fetched either.
      throw new AuthError(
        'oauth',
        `refusing to send the OAuth bearer token over ${risk}: a bearer token works like a password for whoever sees it, ` +
          'so it is only sent over TLS with sslmode=verify-full, where the server has proved its name; set oauthAllowInsecure: true to send it anyway',
      )
    }
    this.phase = 'busy'
    this.async(async () => {
      const first = oauthBearerClientFirst(await this.bearerToken(source))
      this.host.writeNow((w) => writeSASLInitialResponse(w, OAUTHBEARER, first))
      this.phase = 'oauth-sent'
    })
  }

  /** Why this connection is not fit for a bearer token, or undefined when it is. */
  private oauthTransportRisk(): string | undefined {
    const t = this.transport
    if (!t.tls) return isUnixHost(this.address.host) ? 'a unix socket (without TLS the server is not authenticated)' : 'a connection without TLS'
    if (this.config.sslmode !== 'verify-full') {
      return `TLS with sslmode=${this.config.sslmode}, which does not check that the server certificate names the host`
    }
    if (!t.authorized) return 'TLS whose server certificate was not verified (see the tls option)'
    return undefined
  }

  private async bearerToken(source: string | (() => string | Promise<string>)): Promise<string> {
    if (typeof source === 'string') return source
    let token: unknown
    try {
      token = await source()
    } catch (err) {
      throw new AuthError('oauth', 'the oauthBearerToken function failed', { cause: err })
    }
    if (typeof token !== 'string') {
      throw new AuthError('oauth', `the oauthBearerToken function did not return a string (got ${token === null ? 'null' : typeof token})`)
    }
    return token
  }

  /** The server's error document: answer it as RFC 7628 requires; the ErrorResponse that follows fails the attempt (see error()). */
  private oauthRejected(data: Uint8Array): void {
    this.oauthError = describeOAuthServerError(parseOAuthServerError(data), this.config.oauthIssuer)
    this.host.writeNow((w) => writeSASLResponse(w, OAUTH_ERROR_ACK))
    this.phase = 'oauth-error'
  }

  private async password(method: string): Promise<string> {
    const c = this.config
    let p: string | undefined
    if (typeof c.password === 'function') {
      try {
        p = await c.password()
      } catch (err) {
        throw new AuthError(method, 'the password function failed', { cause: err })
      }
      if (typeof p !== 'string') throw new AuthError(method, 'the password function did not return a string')
    } else if (c.password !== undefined) {
      p = c.password
    } else if (c.passfile !== undefined) {
      const h = this.address
      // As in libpq, a unix socket is looked up by its directory; findPassword
      // also tries "localhost" for the usual default socket directories only.
      // Where files cannot be read (Workers), there is no password file.
      p = await platform().passwordFromPassfile?.(c.passfile, h.host, h.port, c.database, c.user)
    }
    if (p === undefined) {
      throw new AuthError(method, `server requested ${method === 'md5' ? 'MD5 password' : method === 'password' ? 'cleartext password' : method} authentication for user "${c.user}", but no password was provided`)
    }
    return p
  }

  private async(fn: () => Promise<void>): void {
    fn().catch((err: unknown) => this.host.destroy(err instanceof Error ? err : new Error(String(err))))
  }

  /** Messages arriving while an answer is being computed are not allowed by the protocol. */
  get waitingForClient(): boolean {
    return this.phase === 'busy'
  }
}
