// The authentication handshakes: pure functions and state machines, bytes in and bytes out.
// The connection layer sends what they return and feeds them what the server sends.

export { md5PasswordMessage } from './md5.js'
export { ScramClient, DEFAULT_MAX_ITERATIONS } from './scram.js'
export type { ScramMechanism, ScramOptions } from './scram.js'
export { chooseSaslMechanism } from './sasl-mechanism.js'
export type { ChannelBindingMode, SaslMechanismChoice, SaslMechanismSettings } from './sasl-mechanism.js'
export { saslprep } from './saslprep.js'
export { tlsServerEndPointHash } from './channel-binding.js'
export {
  OAUTHBEARER,
  OAUTH_ERROR_ACK,
  oauthBearerClientFirst,
  parseOAuthServerError,
  describeOAuthServerError,
  issuerOf,
} from './oauth-bearer.js'
export type { OAuthServerError } from './oauth-bearer.js'
