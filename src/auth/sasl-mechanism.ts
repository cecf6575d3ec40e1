// Picks the SASL mechanism from the server's AuthenticationSASL list, the way libpq's
// channel_binding setting does. One subtlety decides the gs2 flag: 'y' tells the server
// "I could bind but you did not offer -PLUS", which lets a server that does offer it detect
// that someone stripped it from the list. So 'y' is only claimed when binding really was
// possible (TLS and a hashable certificate); claiming it otherwise would make an honest
// server that offered -PLUS (which we could not use) reject us as a downgrade.

import { AuthError } from '../errors.js'
import type { ScramMechanism } from './scram.js'

export type ChannelBindingMode = 'disable' | 'prefer' | 'require'

export interface SaslMechanismChoice {
  mechanism: ScramMechanism
  /** For SCRAM-SHA-256: send gs2 flag 'y' (true) or 'n' (false). Always true for -PLUS. */
  clientSupportsBinding: boolean
}

export interface SaslMechanismSettings {
  channelBinding: ChannelBindingMode
  /** The connection uses TLS. */
  tls: boolean
  /** The tls-server-end-point hash of the server certificate could be computed. */
  bindingDataAvailable: boolean
}

const PLAIN = 'SCRAM-SHA-256'
const PLUS = 'SCRAM-SHA-256-PLUS'

/** Chooses a SCRAM mechanism or throws an AuthError saying why none fits. */
export function chooseSaslMechanism(offered: readonly string[], opts: SaslMechanismSettings): SaslMechanismChoice {
  const plainOffered = offered.includes(PLAIN)
  const plusOffered = offered.includes(PLUS)
  const canBind = opts.tls && opts.bindingDataAvailable
  const serverOffered = `the server offered ${describe(offered)}`

  switch (opts.channelBinding) {
    case 'require':
      if (!opts.tls) {
        throw new AuthError(PLUS, 'channel_binding=require, but the connection does not use TLS, so channel binding is impossible')
      }
      if (!plusOffered) {
        throw new AuthError(PLUS, `channel_binding=require, but the server does not offer SCRAM-SHA-256-PLUS (${serverOffered})`)
      }
      if (!opts.bindingDataAvailable) {
        throw new AuthError(PLUS, 'channel_binding=require, but no channel binding data is available: the server certificate could not be hashed')
      }
      return { mechanism: PLUS, clientSupportsBinding: true }
    case 'prefer':
      if (plusOffered && canBind) return { mechanism: PLUS, clientSupportsBinding: true }
      if (plainOffered) return { mechanism: PLAIN, clientSupportsBinding: canBind }
      if (plusOffered) {
        const why = opts.tls ? 'no channel binding data is available (the server certificate could not be hashed)' : 'the connection does not use TLS'
        throw new AuthError(PLUS, `the server only offers SCRAM-SHA-256-PLUS, but ${why}`)
      }
      break
    case 'disable':
      if (plainOffered) return { mechanism: PLAIN, clientSupportsBinding: false }
      if (plusOffered) throw new AuthError(PLUS, 'the server only offers SCRAM-SHA-256-PLUS, but channel_binding=disable')
      break
    default:
      throw new AuthError('SASL', `unknown channel_binding setting ${JSON.stringify(opts.channelBinding satisfies never)}`)
  }
  throw new AuthError('SASL', `no supported SASL mechanism: ${serverOffered}; pipegres supports SCRAM-SHA-256 and SCRAM-SHA-256-PLUS`)
}

function describe(offered: readonly string[]): string {
  if (offered.length === 0) return 'no mechanism'
  const shown = offered.slice(0, 8).map((name) => JSON.stringify(name.length > 40 ? name.slice(0, 40) + '…' : name))
  return shown.join(', ') + (offered.length > 8 ? `, and ${offered.length - 8} more` : '')
}
