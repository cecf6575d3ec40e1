// The OAuth settings (PostgreSQL 18, SASL mechanism OAUTHBEARER). libpq runs a
// device flow against `oauth_issuer` with `oauth_client_id` (and, optionally,
// `oauth_client_secret` and `oauth_scope`) to get a token. pipegres runs no
// flow: the application gets the token and gives it as `oauthBearerToken`.
// The libpq keywords are still accepted, so that a connection string or a
// service file written for psql works once a token is given: `oauth_issuer`
// is then checked against the discovery URL the server reports when it
// rejects a token, and the others are not used. Given without a token they are
// an error, since the connection they describe cannot be made.

import { ConfigError } from '../errors.js'
import { type Found, type Sources, bool, optionalText, typeError } from './sources.js'

/** A token, or a function returning one (the oauthBearerToken option). */
type TokenSource = string | (() => string | Promise<string>)

export interface OAuthSettings {
  oauthBearerToken: TokenSource | undefined
  oauthAllowInsecure: boolean
  oauthIssuer: string | undefined
}

export function resolveOAuth(src: Sources): OAuthSettings {
  const token = resolveToken(src.find('oauthBearerToken', undefined))
  const issuerFound = src.find('oauthIssuer', 'oauth_issuer')
  if (token === undefined) {
    const flowSetting =
      issuerFound ?? src.find(undefined, 'oauth_client_id') ?? src.find(undefined, 'oauth_client_secret') ?? src.find(undefined, 'oauth_scope')
    if (flowSetting !== undefined) {
      const { setting, where } = flowSetting.origin
      throw new ConfigError(
        setting,
        `${setting} is set ${where}, but pipegres does not run the OAuth device flow that libpq runs with it: ` +
          'the application must get the bearer token from the issuer itself and pass it as the oauthBearerToken option (a string, or a function returning one)',
      )
    }
  }
  return {
    oauthBearerToken: token,
    oauthAllowInsecure: bool(src.find('oauthAllowInsecure', undefined), false),
    oauthIssuer: optionalText(issuerFound),
  }
}

function resolveToken(found: Found | undefined): TokenSource | undefined {
  if (found === undefined) return undefined
  const value = found.value
  if (typeof value === 'function') return value as () => string | Promise<string>
  // Never echoed: the message names the type only.
  if (typeof value !== 'string') throw typeError(found.origin, value, 'a string or a function')
  return value
}
