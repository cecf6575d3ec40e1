// SASL OAUTHBEARER (RFC 7628) as PostgreSQL 18 speaks it. The client's one message:
//
//   n,,\x01auth=Bearer <token>\x01\x01
//
// a GS2 header without channel binding or authorization identity, then the
// "auth" key with the token. The server then either accepts (AuthenticationOk
// follows directly: OAUTHBEARER sends no AuthenticationSASLFinal) or answers
// with AuthenticationSASLContinue carrying a JSON error document, e.g.
//
//   { "status": "invalid_token", "openid-configuration": "https://issuer/.well-known/openid-configuration", "scope": "openid" }
//
// to which RFC 7628 section 3.2.3 has the client answer a single \x01; the
// server then fails the authentication with an ErrorResponse.
// The token is a password: nothing here ever puts it into a message.

import { AuthError, ProtocolError } from '../errors.js'

export const OAUTHBEARER = 'OAUTHBEARER'

/** The client's answer to the server's error document (RFC 7628 section 3.2.3). */
export const OAUTH_ERROR_ACK: Uint8Array = Uint8Array.of(0x01)

/**
 * RFC 6750 b64token: the only characters a Bearer credential may have, and the
 * ones PostgreSQL's server accepts. Checking them here also keeps a \x01 or a
 * NUL inside the token from ending the "auth" value early.
 */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/

/** The initial client response for `token`; throws an AuthError (which never shows the token) if it is not a bearer token. */
export function oauthBearerClientFirst(token: string): Uint8Array {
  if (token === '') throw new AuthError('oauth', 'the OAuth bearer token is empty')
  if (!B64TOKEN.test(token)) {
    throw new AuthError(
      'oauth',
      'the OAuth bearer token has a character a bearer token may not contain (RFC 6750 allows letters, digits, "-", ".", "_", "~", "+", "/" and "=" at the end); ' +
        'give the access token itself, without "Bearer " before it',
    )
  }
  return new TextEncoder().encode(`n,,\x01auth=Bearer ${token}\x01\x01`)
}

/** What the server's error document says (the fields libpq reads; others are ignored). */
export interface OAuthServerError {
  status: string
  scope: string | undefined
  /** The "openid-configuration" field: the URL of the issuer's discovery document. */
  discoveryUrl: string | undefined
}

/** Parses the server's JSON error document; a document that is not one is a ProtocolError. */
export function parseOAuthServerError(data: Uint8Array): OAuthServerError {
  let doc: unknown
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data))
  } catch (err) {
    throw new ProtocolError('server sent an OAUTHBEARER error that is not a JSON document', { cause: err })
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new ProtocolError('server sent an OAUTHBEARER error that is not a JSON object')
  }
  const field = (name: string): string | undefined => {
    if (!Object.hasOwn(doc, name)) return undefined
    const value = (doc as Record<string, unknown>)[name]
    if (typeof value !== 'string') throw new ProtocolError(`server sent an OAUTHBEARER error whose "${name}" field is not a string`)
    return value
  }
  const status = field('status')
  if (status === undefined) throw new ProtocolError('server sent an OAUTHBEARER error without a "status" field')
  return { status, scope: field('scope'), discoveryUrl: field('openid-configuration') }
}

/**
 * The error document as an error message: status, scope and discovery URL
 * (server-supplied text, quoted and shortened), and whether the discovery URL
 * belongs to `issuer` (the oauth_issuer setting) when one was given.
 */
export function describeOAuthServerError(e: OAuthServerError, issuer: string | undefined): string {
  const parts = [`status ${show(e.status)}`]
  if (e.scope !== undefined) parts.push(`scope ${show(e.scope)}`)
  if (e.discoveryUrl !== undefined) parts.push(`discovery document ${show(e.discoveryUrl)}`)
  let text = `server rejected the OAuth bearer token (${parts.join(', ')})`
  if (issuer !== undefined && e.discoveryUrl !== undefined) {
    const serverIssuer = issuerOf(e.discoveryUrl)
    if (serverIssuer !== stripSlash(issuer) && e.discoveryUrl !== issuer) {
      text += `; that discovery document is not the one of oauth_issuer ${show(issuer)}, so the token may be from the wrong issuer`
    }
  }
  return text
}

const WELL_KNOWN = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server']

/**
 * The issuer a discovery URL belongs to (OpenID Connect Discovery 1.0 appends
 * the well-known path to the issuer; RFC 8414 inserts it between host and
 * path), or the URL itself when it has no well-known path.
 */
export function issuerOf(discoveryUrl: string): string {
  for (const suffix of WELL_KNOWN) {
    if (discoveryUrl.endsWith(suffix)) return discoveryUrl.slice(0, -suffix.length)
    const at = discoveryUrl.indexOf(suffix + '/')
    if (at >= 0 && /^https?:\/\/[^/]+$/.test(discoveryUrl.slice(0, at))) {
      return discoveryUrl.slice(0, at) + discoveryUrl.slice(at + suffix.length)
    }
  }
  return discoveryUrl
}

function stripSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url
}

/** Server-supplied text for a message: JSON-quoted (so control characters show as escapes) and at most 200 characters. */
function show(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}...` : value)
}
